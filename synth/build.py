"""The cdk8s side of rendering: charts added to one App, then synthesized to plain objects.

`synth.render` imports this module only when some file is not in the render cache, because
importing cdk8s starts its Node.js process (about half a second before anything is built).
"""

from pathlib import PurePosixPath
from typing import Any

from cdk8s import App, Chart

from contract.layout import CLUSTERS, FLUX_FILE, INFRASTRUCTURE, NAMESPACES_FILE, cluster_dist
from synth.charts.benchmarks import BenchmarksChart
from synth.charts.flux import FluxChart
from synth.charts.namespaces import NamespacesChart
from synth.charts.network import NetworkPoliciesChart
from synth.charts.priorities import PriorityClassesChart
from synth.charts.queues import QueuesChart
from synth.charts.rbac import RbacChart
from synth.fleet import Cluster, Fleet
from synth.jobs import BenchmarkRun, namespace_of


class Build:
    """One cdk8s App, and the chart that becomes each file."""

    def __init__(self) -> None:
        self._app = App()
        self._charts: dict[PurePosixPath, Chart] = {}

    def add_workflow(
        self, path: PurePosixPath, construct_id: str, runs: list[BenchmarkRun]
    ) -> None:
        self._charts[path] = BenchmarksChart(self._app, construct_id, runs=runs)

    def add_infrastructure(
        self,
        cluster: Cluster,
        fleet: Fleet,
        downloading: dict[str, list[str]],
        queues: set[tuple[str, str]],
    ) -> list[PurePosixPath]:
        """What the cluster's workloads depend on, and Flux's objects that apply them; returns
        the files they become."""
        app = self._app
        dist = cluster_dist(cluster.name)
        infrastructure = dist / INFRASTRUCTURE
        namespaces = [namespace_of(env) for env in fleet.environments]
        charts: dict[PurePosixPath, Chart] = {
            infrastructure / NAMESPACES_FILE: NamespacesChart(
                app,
                f"{cluster.name}-namespaces",
                cluster=cluster,
                environments=list(fleet.environments),
            ),
            infrastructure / "priority-classes.yaml": PriorityClassesChart(
                app, f"{cluster.name}-priorities", fleet=fleet
            ),
            infrastructure / "rbac.yaml": RbacChart(
                app, f"{cluster.name}-rbac", namespaces=namespaces
            ),
            infrastructure / "network-policies.yaml": NetworkPoliciesChart(
                app,
                f"{cluster.name}-network",
                cluster=cluster,
                namespaces=namespaces,
                downloading=downloading,
            ),
        }
        if queues and cluster.kueue is not None:
            charts[infrastructure / "queues.yaml"] = QueuesChart(
                app,
                f"{cluster.name}-queues",
                cluster_queue=cluster.kueue.cluster_queue,
                queues=queues,
            )
        charts[PurePosixPath(CLUSTERS, cluster.name, FLUX_FILE)] = FluxChart(
            app, f"{cluster.name}-flux", fleet=fleet, dist_path=str(dist)
        )
        self._charts.update(charts)
        return list(charts)

    def synthesize(self) -> dict[PurePosixPath, list[dict[str, Any]]]:
        """Each file's objects, in the order cdk8s emits them."""
        return {
            path: chart.manifests() if isinstance(chart, BenchmarksChart) else list(chart.to_json())
            for path, chart in self._charts.items()
        }
