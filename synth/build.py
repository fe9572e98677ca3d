"""The cdk8s side of rendering: charts added to one App, then synthesized to plain objects.

`synth.render` imports this module only when some file is not in the render cache, because
importing cdk8s starts its Node.js process (about half a second before anything is built).
"""

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from cdk8s import App, Chart

from contract.layout import CLUSTERS, FLUX_FILE, INFRASTRUCTURE, NAMESPACES_FILE, cluster_dist
from synth.charts.benchmarks import BenchmarksChart
from synth.charts.flux import FluxChart
from synth.charts.monitoring import MonitoringChart
from synth.charts.namespaces import NamespacesChart
from synth.charts.network import NetworkPoliciesChart
from synth.charts.priorities import PriorityClassesChart
from synth.charts.queues import QueuesChart
from synth.charts.rbac import RbacChart
from synth.constructs import joined_id
from synth.fleet import Cluster, Fleet
from synth.job_assembly import BenchmarkRun
from synth.monitoring.rules import Schedule
from synth.names import namespace_of


def _chart_id(path: PurePosixPath) -> str:
    """Each file is one chart, so its path names the chart uniquely."""
    return joined_id(*path.parts)


class Build:
    """One cdk8s App, and the chart that becomes each file."""

    def __init__(self) -> None:
        self._app = App()
        self._charts: dict[PurePosixPath, Chart] = {}

    def add_workflow(self, path: PurePosixPath, runs: list[BenchmarkRun]) -> None:
        self._charts[path] = BenchmarksChart(self._app, _chart_id(path), runs=runs)

    def add_infrastructure(
        self,
        cluster: Cluster,
        fleet: Fleet,
        downloading: dict[str, list[str]],
        queues: set[tuple[str, str]],
        schedules: Sequence[Schedule],
    ) -> list[PurePosixPath]:
        """What the cluster's workloads depend on, and Flux's objects that apply them; returns
        the files they become."""
        app = self._app
        dist = cluster_dist(cluster.name)
        infrastructure = dist / INFRASTRUCTURE
        namespaces = [namespace_of(env) for env in fleet.environments]
        namespaces_file = infrastructure / NAMESPACES_FILE
        priorities_file = infrastructure / "priority-classes.yaml"
        rbac_file = infrastructure / "rbac.yaml"
        network_file = infrastructure / "network-policies.yaml"
        charts: dict[PurePosixPath, Chart] = {
            namespaces_file: NamespacesChart(
                app,
                _chart_id(namespaces_file),
                cluster=cluster,
                environments=list(fleet.environments),
            ),
            priorities_file: PriorityClassesChart(app, _chart_id(priorities_file), fleet=fleet),
            rbac_file: RbacChart(app, _chart_id(rbac_file), namespaces=namespaces),
            network_file: NetworkPoliciesChart(
                app,
                _chart_id(network_file),
                cluster=cluster,
                namespaces=namespaces,
                downloading=downloading,
                store=fleet.results_store_of(cluster),
            ),
        }
        if queues and cluster.kueue is not None:
            queues_file = infrastructure / "queues.yaml"
            charts[queues_file] = QueuesChart(
                app,
                _chart_id(queues_file),
                cluster_queue=cluster.kueue.cluster_queue,
                queues=queues,
            )
        monitoring = fleet.monitoring_of(cluster)
        if monitoring is not None:
            monitoring_file = infrastructure / "monitoring.yaml"
            charts[monitoring_file] = MonitoringChart(
                app, _chart_id(monitoring_file), monitoring=monitoring, schedules=schedules
            )
        flux_file = PurePosixPath(CLUSTERS, cluster.name, FLUX_FILE)
        charts[flux_file] = FluxChart(app, _chart_id(flux_file), fleet=fleet, dist_path=str(dist))
        self._charts.update(charts)
        return list(charts)

    def synthesize(self) -> dict[PurePosixPath, list[dict[str, Any]]]:
        """Each file's objects, in the order cdk8s emits them."""
        return {
            path: chart.manifests() if isinstance(chart, BenchmarksChart) else list(chart.to_json())
            for path, chart in self._charts.items()
        }
