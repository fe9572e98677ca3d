"""What synth emits for a cluster that turns monitoring on (eu-west in specs/clusters.yaml),
and nothing for one that does not."""

import dataclasses
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from contract.layout import RULES_LABEL, cluster_dist
from synth.charts.monitoring import DASHBOARD_KEY, RULES_KEY
from synth.load import load_specs
from synth.monitoring.dashboard import dashboard_json
from synth.monitoring.rules import ABSENT_ALERT, GROUP_MISSING, STALE_ALERT
from synth.render import render
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


def test_a_scheduled_workflow_gets_its_missing_data_alerts_in_the_clusters_it_runs_in() -> None:
    """nightly-spot runs every 24h in us-east with a 2h deadline: with monitoring on there, its
    rules say so; eu-west, which it does not run in, has none of its alerts."""
    specs = load_specs(REPO_ROOT)
    own = specs.fleet.monitoring_of(specs.fleet.cluster("eu-west"))
    assert own is not None
    fleet = specs.fleet.model_copy(
        update={"monitoring": own.model_copy(update={"prometheus_rule": None})}
    )
    files = render(dataclasses.replace(specs, fleet=fleet))

    def missing_data_rules(cluster: str) -> list[dict[str, Any]]:
        path = PurePosixPath(str(cluster_dist(cluster)), MONITORING_FILE)
        (rules,) = (
            obj for obj in yaml.safe_load_all(files[path]) if RULES_KEY in obj.get("data", {})
        )
        groups = yaml.safe_load(rules["data"][RULES_KEY])["groups"]
        return [
            rule for group in groups if group["name"] == GROUP_MISSING for rule in group["rules"]
        ]

    nightly = missing_data_rules("us-east")
    assert {rule["alert"] for rule in nightly} == {STALE_ALERT, ABSENT_ALERT}
    assert all(rule["labels"]["workflow"] == "nightly-spot" for rule in nightly)
    stale = next(rule for rule in nightly if rule["alert"] == STALE_ALERT)
    assert stale["expr"].rstrip().endswith(f"> {24 * 3600 + 2 * 3600}")
    assert missing_data_rules("eu-west") == []
