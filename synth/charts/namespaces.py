"""A Namespace per environment, enforcing Pod Security "restricted", and in it the ConfigMap
that says which fleet cluster applies it (what the collector checks before recording)."""

from cdk8s import Chart
from constructs import Construct

from contract.layout import (
    APP,
    CLUSTER_IDENTITY,
    CLUSTER_KEY,
    ENVIRONMENT_LABEL,
    MANAGED_BY,
    MESH_OPT_OUT_ANNOTATIONS,
    MESH_OPT_OUT_LABELS,
    REGION_KEY,
)
from synth.constructs import api_object, joined_id
from synth.fleet import Cluster
from synth.names import namespace_of

POD_SECURITY_VERSION = "v1.33"


class NamespacesChart(Chart):
    def __init__(
        self, scope: Construct, construct_id: str, *, cluster: Cluster, environments: list[str]
    ) -> None:
        super().__init__(scope, construct_id, disable_resource_name_hashes=True)
        for environment in environments:
            labels = {MANAGED_BY: APP, ENVIRONMENT_LABEL: environment}
            for mode in ("enforce", "audit", "warn"):
                labels[f"pod-security.kubernetes.io/{mode}"] = "restricted"
                labels[f"pod-security.kubernetes.io/{mode}-version"] = POD_SECURITY_VERSION
            # A mesh's sidecar would keep runner pods alive after their runner (docs/synth.md).
            labels.update(MESH_OPT_OUT_LABELS)
            metadata = {
                "name": namespace_of(environment),
                "labels": labels,
                "annotations": dict(MESH_OPT_OUT_ANNOTATIONS),
            }
            api_object(
                self, joined_id(environment, "namespace"), "v1", "Namespace", {"metadata": metadata}
            )
            identity = {
                "name": CLUSTER_IDENTITY,
                "namespace": namespace_of(environment),
                "labels": {MANAGED_BY: APP},
            }
            api_object(
                self,
                joined_id(environment, "identity"),
                "v1",
                "ConfigMap",
                {
                    "metadata": identity,
                    "immutable": True,
                    "data": {CLUSTER_KEY: cluster.name, REGION_KEY: cluster.region},
                },
            )
