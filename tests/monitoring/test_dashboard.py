"""The generated dashboard: a model Grafana's own SDK reads back whole, every query valid
PromQL, naming only series the collector exports."""

import re
import subprocess
from pathlib import Path

import yaml
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.cog.plugins import register_default_plugins
from grafana_foundation_sdk.models.dashboard import Dashboard

from contract.metrics import JOB_DURATION, JOBS_OBSERVED, PER_VARIANT, SERIES, VARIANT_FAILURES
from synth.monitoring.dashboard import UID, dashboard_json
from tests.monitoring.panels import model, panel_queries, variable_selectors
from tests.monitoring.servers import PROMTOOL, needs_prometheus

METRIC_NAME = re.compile(r"\bbenchfleet_[a-z0-9_]+")


def test_the_sdk_reads_the_dashboard_back_to_the_same_json() -> None:
    """Decoding through the SDK's typed models drops whatever they do not know (a misspelt
    key, a panel type without a plugin), so a round trip equal to the text is a valid model."""
    register_default_plugins()
    text = dashboard_json()
    decoded = Dashboard.from_json(model())
    assert JSONEncoder(sort_keys=True, indent=2).encode(decoded) + "\n" == text


def test_the_dashboard_is_the_same_bytes_every_time() -> None:
    assert dashboard_json() == dashboard_json()
    assert model()["uid"] == UID


def test_panel_ids_and_places_are_unique() -> None:
    panels = model()["panels"]
    assert len({panel["id"] for panel in panels}) == len(panels)
    places = [(p["gridPos"]["x"], p["gridPos"]["y"]) for p in panels]
    assert len(set(places)) == len(places)
    assert all(p["gridPos"]["x"] + p["gridPos"]["w"] <= 24 for p in panels)


def test_queries_name_only_series_the_collector_exports() -> None:
    named = {
        name
        for expressions in panel_queries().values()
        for expression in expressions
        for name in METRIC_NAME.findall(expression)
    }
    named |= {name for selector in variable_selectors() for name in METRIC_NAME.findall(selector)}
    assert named <= SERIES


def test_every_exported_metric_has_a_panel() -> None:
    queries = " ".join(e for expressions in panel_queries().values() for e in expressions)
    for family in (*PER_VARIANT, JOBS_OBSERVED, VARIANT_FAILURES, JOB_DURATION):
        assert family in queries, family


@needs_prometheus
def test_every_query_is_promql_that_prometheus_parses(tmp_path: Path) -> None:
    """promtool parses each expression with Prometheus' own parser, as recording rules."""
    expressions = [e for exprs in panel_queries().values() for e in exprs]
    expressions += variable_selectors()
    rules = [{"record": f"panel_query_{n}", "expr": e} for n, e in enumerate(expressions)]
    path = tmp_path / "queries.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]}))
    done = subprocess.run(
        [PROMTOOL, "check", "rules", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(rules)} rules found" in done.stdout
