"""Service accounts: the runner's has no permissions and no token; the collector's may do
exactly what `collector` does, in benchfleet's namespaces only.

Each environment's namespace has a collector ServiceAccount (for a collector running there),
and each namespace's RoleBinding names all of them: `collector gather`, `status` and `clean`
work on a cluster as a whole, so one credential per cluster must reach every environment
(a real API server refused `collector clean` with a per-namespace binding).

RBAC cannot narrow `create` to names, so a ValidatingAdmissionPolicy does: those
ServiceAccounts may write only the ConfigMaps that hand a grouped Job's stored variants back
to its retries (contract/reported.py), each owned by its Job.
"""

from typing import Final

from cdk8s import Chart
from constructs import Construct

from contract.layout import APP, CLUSTER_IDENTITY, ENVIRONMENT_LABEL, MANAGED_BY
from contract.reported import REPORTED_SUFFIX
from synth.constructs import api_object, joined_id
from synth.names import COLLECTOR_SERVICE_ACCOUNT, RUNNER_SERVICE_ACCOUNT

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
    # first time. `create` cannot be narrowed to names: CONFIGMAP_POLICY narrows both.
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "patch"]},
    # Every command: confirm which fleet cluster the credential reaches before recording.
    {
        "apiGroups": [""],
        "resources": ["configmaps"],
        "resourceNames": [CLUSTER_IDENTITY],
        "verbs": ["get"],
    },
]


CONFIGMAP_POLICY: Final = "benchfleet-collector-configmaps"
_OWNED_BY_ITS_JOB: Final = (
    f"object.metadata.name.endsWith('{REPORTED_SUFFIX}') && "
    "has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(owner, "
    "owner.apiVersion == 'batch/v1' && owner.kind == 'Job' && "
    f"object.metadata.name == owner.name + '{REPORTED_SUFFIX}')"
)


def _configmap_policy(chart: Chart, collectors: list[str]) -> None:
    """What the collectors' ServiceAccounts may write of ConfigMaps: a Job's `-reported` one,
    owned by that Job (a server-side apply is a CREATE the first time, an UPDATE after)."""
    users = ", ".join(f"'{user}'" for user in collectors)
    api_object(
        chart,
        "collector-configmaps-policy",
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
        {
            "metadata": {"name": CONFIGMAP_POLICY, "labels": {MANAGED_BY: APP}},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "resourceRules": [
                        {
                            "apiGroups": [""],
                            "apiVersions": ["v1"],
                            "operations": ["CREATE", "UPDATE"],
                            "resources": ["configmaps"],
                        }
                    ]
                },
                "matchConditions": [
                    {"name": "collector", "expression": f"request.userInfo.username in [{users}]"}
                ],
                "validations": [
                    {
                        "expression": _OWNED_BY_ITS_JOB,
                        "message": "the collector writes no ConfigMap but a Job's "
                        f"<job>{REPORTED_SUFFIX}, owned by that Job",
                    }
                ],
            },
        },
    )
    api_object(
        chart,
        "collector-configmaps-binding",
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
        {
            "metadata": {"name": CONFIGMAP_POLICY, "labels": {MANAGED_BY: APP}},
            "spec": {
                "policyName": CONFIGMAP_POLICY,
                "validationActions": ["Deny"],
                "matchResources": {
                    "namespaceSelector": {
                        "matchLabels": {MANAGED_BY: APP},
                        "matchExpressions": [{"key": ENVIRONMENT_LABEL, "operator": "Exists"}],
                    }
                },
            },
        },
    )


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
        _configmap_policy(
            self,
            [f"system:serviceaccount:{ns}:{COLLECTOR_SERVICE_ACCOUNT}" for ns in namespaces],
        )
