"""A Namespace per environment, enforcing Pod Security "restricted"."""

from cdk8s import Chart
from constructs import Construct

from synth.constructs import api_object
from synth.jobs import APP, namespace_of

POD_SECURITY_VERSION = "v1.33"


class NamespacesChart(Chart):
    def __init__(self, scope: Construct, construct_id: str, *, environments: list[str]) -> None:
        super().__init__(scope, construct_id, disable_resource_name_hashes=True)
        for environment in environments:
            labels = {"app.kubernetes.io/managed-by": APP, "benchfleet.io/environment": environment}
            for mode in ("enforce", "audit", "warn"):
                labels[f"pod-security.kubernetes.io/{mode}"] = "restricted"
                labels[f"pod-security.kubernetes.io/{mode}-version"] = POD_SECURITY_VERSION
            api_object(
                self,
                environment,
                "v1",
                "Namespace",
                {"metadata": {"name": namespace_of(environment), "labels": labels}},
            )
