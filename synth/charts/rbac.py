"""Service accounts: the runner's has no permissions and no token; the collector's may do
exactly what `collector` does, in benchfleet's namespaces only.

Each environment's namespace has a collector ServiceAccount (for a collector running there),
and each namespace's RoleBinding names all of them: `collector gather`, `status` and `clean`
work on a cluster as a whole, so one credential per cluster must reach every environment
(a real API server refused `collector clean` with a per-namespace binding).
"""

from typing import Final

from cdk8s import Chart
from constructs import Construct

from contract.layout import APP, CLUSTER_IDENTITY, MANAGED_BY
from synth.constructs import api_object, joined_id
from synth.jobs import COLLECTOR_SERVICE_ACCOUNT, RUNNER_SERVICE_ACCOUNT

COLLECTOR_RULES: Final = [
    # gather: find the workflow's Jobs and follow them with list + watch; clean: delete the
    # finished Jobs that are no longer in dist/ (never one Flux still applies). ConfigMaps
    # are left to Flux's pruning: immutable and small, a stray one costs nothing.
    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["list", "watch", "delete"]},
    # gather: read results from termination messages, fall back to logs.
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    # gather and status: explain why a pod waits (scheduler and kubelet events).
    {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},
    # gather: hand the variants an earlier attempt of a grouped index measured back to its
    # retry (contract/reported.py), by server-side apply, which creates the ConfigMap the
    # first time. `create` cannot be narrowed to names; the ConfigMap is owned by its Job.
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "patch"]},
    # Every command: confirm which fleet cluster the credential reaches before recording.
    {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "resourceNames": [CLUSTER_IDENTITY],
        "verbs": ["get"],
    },
]


class RbacChart(Chart):
    def __init__(self, scope: Construct, construct_id: str, *, namespaces: list[str]) -> None:
        super().__init__(scope, construct_id, disable_resource_name_hashes=True)
        labels = {MANAGED_BY: APP}
        collectors = [
            {"kind": "ServiceAccount", "name": COLLECTOR_SERVICE_ACCOUNT, "namespace": namespace}
            for namespace in namespaces
        ]
        for namespace in namespaces:

            def meta(name: str, ns: str = namespace) -> dict[str, object]:
                return {"name": name, "namespace": ns, "labels": labels}

            api_object(
                self,
                joined_id(namespace, "runner"),
                "v1",
                "ServiceAccount",
                {"metadata": meta(RUNNER_SERVICE_ACCOUNT), "automountServiceAccountToken": False},
            )
            api_object(
                self,
                joined_id(namespace, "collector"),
                "v1",
                "ServiceAccount",
                {"metadata": meta(COLLECTOR_SERVICE_ACCOUNT), "automountServiceAccountToken": True},
            )
            role = api_object(
                self,
                joined_id(namespace, "collector-role"),
                "rbac.authorization.k8s.io/v1",
                "Role",
                {"metadata": meta(COLLECTOR_SERVICE_ACCOUNT), "rules": COLLECTOR_RULES},
            )
            api_object(
                self,
                joined_id(namespace, "collector-binding"),
                "rbac.authorization.k8s.io/v1",
                "RoleBinding",
                {
                    "metadata": meta(COLLECTOR_SERVICE_ACCOUNT),
                    "subjects": collectors,
                    "roleRef": {
                        "apiGroup": "rbac.authorization.k8s.io",
                        "kind": "Role",
                        "name": role.name,
                    },
                },
            )
