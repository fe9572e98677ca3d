"""What synth emits for a cluster that turns monitoring on (eu-west in specs/clusters.yaml),
and nothing for one that does not."""

import subprocess
from pathlib import Path
from typing import Any

import yaml

from contract.layout import RULES_LABEL, cluster_dist
from synth.charts.monitoring import DASHBOARD_KEY, RULES_KEY
from synth.load import load_specs
from synth.monitoring.dashboard import dashboard_json
from tests.conftest import REPO_ROOT
from tests.monitoring.servers import PROMTOOL, needs_prometheus

MONITORING_FILE = "infrastructure/monitoring.yaml"


def emitted(cluster: str) -> dict[str, dict[str, Any]]:
    path = REPO_ROOT / cluster_dist(cluster) / MONITORING_FILE
    documents = yaml.safe_load_all(path.read_text(encoding="utf-8"))
    return {f"{obj['kind']}/{obj['metadata']['name'].rsplit('-', 1)[0]}": obj for obj in documents}


def test_a_cluster_without_monitoring_gets_no_monitoring_objects() -> None:
    assert not (REPO_ROOT / cluster_dist("us-east") / MONITORING_FILE).exists()


def test_the_dashboard_configmap_carries_the_sidecar_label_and_the_dashboard() -> None:
    dashboard = emitted("eu-west")["ConfigMap/benchfleet-dashboard"]
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["metadata"]["namespace"] == "monitoring"
    assert dashboard["data"][DASHBOARD_KEY] == dashboard_json()


@needs_prometheus
def test_the_rules_configmap_is_a_rules_file_and_the_prometheusrule_holds_its_groups(
    tmp_path: Path,
) -> None:
    objects = emitted("eu-west")
    rules = objects["ConfigMap/benchfleet-alert-rules"]
    assert rules["metadata"]["labels"][RULES_LABEL] == "true"
    path = tmp_path / RULES_KEY
    path.write_text(rules["data"][RULES_KEY], encoding="utf-8")
    done = subprocess.run(
        [PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    operator = objects["PrometheusRule/benchfleet"]
    assert operator["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert operator["spec"] == yaml.safe_load(rules["data"][RULES_KEY])


def test_a_clusters_own_monitoring_replaces_the_fleets() -> None:
    fleet = load_specs(REPO_ROOT).fleet
    us_east, eu_west = fleet.cluster("us-east"), fleet.cluster("eu-west")
    assert fleet.monitoring_of(us_east) is None
    own = fleet.monitoring_of(eu_west)
    assert own is not None
    fleet_wide = own.model_copy(update={"namespace": "observability", "prometheus_rule": None})
    with_default = fleet.model_copy(update={"monitoring": fleet_wide})
    assert with_default.monitoring_of(us_east) == fleet_wide
    assert with_default.monitoring_of(eu_west) == own
