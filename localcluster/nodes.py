"""Fake nodes shaped like a fleet cluster in specs/clusters.yaml, for kwok to keep alive.

Per device type the cluster lists: one on-demand node and, where the cluster has spot
capacity, one spot node carrying the spot pool's labels and taints. GPU nodes carry the
cluster's GPU labels (its own or `gpu-type: <type>`), `nvidia.com/gpu` capacity and the
`nvidia.com/gpu` taint GPU pools commonly have; CPU nodes have neither.
"""

from typing import Any, Final

from contract.layout import GPU_RESOURCE
from synth.catalogue import DEVICE_TYPES
from synth.fleet import Cluster

KWOK_ANNOTATION: Final = {"kwok.x-k8s.io/node": "fake"}
CPU_CAPACITY: Final = {"cpu": "16", "memory": "64Gi", "pods": "110"}
GPUS_PER_NODE: Final = 1
GPU_NODE_CAPACITY: Final = {"cpu": "32", "memory": "256Gi", "pods": "110"}


def node_name(device_type: str, spot: bool = False) -> str:
    """The node of `device_type` (its spot twin with `spot`)."""
    return f"{device_type}-spot-0" if spot else f"{device_type}-0"


def _node(cluster: Cluster, device_type: str, spot: bool, gpus: int) -> dict[str, Any]:
    name = node_name(device_type, spot)
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/region": cluster.region,
        "type": "kwok",
        **cluster.node_selector(device_type),
    }
    taints: list[dict[str, str]] = []
    capacity = dict(CPU_CAPACITY)
    if DEVICE_TYPES[device_type].is_gpu:
        capacity = {**GPU_NODE_CAPACITY, GPU_RESOURCE: str(gpus)}
        taints.append({"key": GPU_RESOURCE, "value": "present", "effect": "NoSchedule"})
    if spot and cluster.spot is not None:
        labels.update(cluster.spot.node_selector)
        taints += [
            {"key": t.key, "value": t.value or "", "effect": t.effect}
            for t in cluster.spot.tolerations
        ]
    spec: dict[str, Any] = {"taints": taints} if taints else {}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": dict(KWOK_ANNOTATION)},
        "spec": spec,
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def node_manifests(cluster: Cluster, gpus_per_node: int = GPUS_PER_NODE) -> list[dict[str, Any]]:
    """Every node of `cluster`, on-demand first. One GPU per node by default, so that one
    GPU pod fills a node (what preemption needs)."""
    pools = [False, True] if cluster.spot is not None else [False]
    return [
        _node(cluster, device, spot, gpus_per_node)
        for spot in pools
        for device in cluster.device_types
    ]
