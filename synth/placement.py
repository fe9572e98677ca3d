"""Which nodes a target's pods may run on in a cluster: part of a variant's identity (the
node selector) and of its pod template (the node selector and tolerations)."""

from typing import Any

from contract.layout import GPU_RESOURCE
from synth.catalogue import DEVICE_TYPES
from synth.fleet import Cluster
from synth.spec import Target


def placement(target: Target, cluster: Cluster) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The node selector and tolerations of a target's pods in `cluster`."""
    node_selector = cluster.node_selector(target.gpu_type)
    tolerations: list[dict[str, Any]] = []
    if DEVICE_TYPES[target.gpu_type].is_gpu:
        # GPU node pools are commonly tainted so that only GPU workloads land there.
        tolerations.append({"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"})
    if target.spot and cluster.spot is not None:
        node_selector.update(cluster.spot.node_selector)
        tolerations += [t.model_dump(exclude_none=True) for t in cluster.spot.tolerations]
    return node_selector, tolerations
