"""The Flux objects of one cluster: the source, then infrastructure, then workloads."""

from typing import Any, Final

from cdk8s import Chart
from constructs import Construct

from contract.layout import INFRASTRUCTURE, WORKLOADS
from synth.constructs import api_object
from synth.fleet import Fleet

FLUX_NAMESPACE: Final = "flux-system"
SOURCE: Final = "benchfleet"


class FluxChart(Chart):
    def __init__(
        self, scope: Construct, construct_id: str, *, fleet: Fleet, dist_path: str
    ) -> None:
        super().__init__(scope, construct_id, disable_resource_name_hashes=True)
        git = fleet.git
        source: dict[str, Any] = {
            "interval": git.interval,
            "url": git.url,
            "ref": {"branch": git.branch},
            # Only the manifests matter to the Kustomizations below.
            "ignore": "/*\n!/dist/\n",
        }
        if git.secret_name is not None:
            source["secretRef"] = {"name": git.secret_name}
        repository = api_object(
            self,
            "source",
            "source.toolkit.fluxcd.io/v1",
            "GitRepository",
            {"metadata": {"name": SOURCE, "namespace": FLUX_NAMESPACE}, "spec": source},
        )
        infrastructure = self._kustomization(
            INFRASTRUCTURE,
            f"{dist_path}/{INFRASTRUCTURE}",
            # Namespaces, RBAC and policies become ready at once: waiting on them is cheap
            # and keeps the workloads from landing in a namespace that does not exist yet.
            wait=True,
            depends_on=None,
        )
        # No wait on the workloads: Flux's health check of a Job blocks until the Job has
        # completed, so one long or failing benchmark would hold back every later change.
        # The collector follows the Jobs instead.
        workloads = self._kustomization(
            WORKLOADS, f"{dist_path}/{WORKLOADS}", wait=False, depends_on=infrastructure.name
        )
        infrastructure.add_dependency(repository)
        workloads.add_dependency(infrastructure)

    def _kustomization(self, role: str, path: str, *, wait: bool, depends_on: str | None) -> Any:
        spec: dict[str, Any] = {
            "interval": "10m",
            "retryInterval": "1m",
            "timeout": "5m",
            "path": f"./{path}",
            "prune": True,
            "wait": wait,
            "sourceRef": {"kind": "GitRepository", "name": SOURCE},
        }
        if depends_on is not None:
            spec["dependsOn"] = [{"name": depends_on}]
        return api_object(
            self,
            role,
            "kustomize.toolkit.fluxcd.io/v1",
            "Kustomization",
            {"metadata": {"name": f"benchfleet-{role}", "namespace": FLUX_NAMESPACE}, "spec": spec},
        )
