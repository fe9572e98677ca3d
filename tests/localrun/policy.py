"""The example policy pipeline at a fixed rate in a repository of its own, and the local
try's answer read back from the report: what tests/localrun/test_policy_control.py asserts on
and bench/policy_control.py measures with."""

import json
from pathlib import Path
from typing import Any, Final

import yaml
from click.testing import CliRunner

from benchfleet.collector import cli as collector_cli
from localrun.__main__ import main as localrun
from tests.conftest import REPO_ROOT

WORKFLOW: Final = "policy-pipeline"
POLICY: Final = REPO_ROOT / "dist" / "us-east" / "workloads" / f"{WORKFLOW}.yaml"
RATE_HZ: Final = 50.0
SHORT_DEADLINE_S: Final = 0.0001
"""0.1 ms: shorter than the preprocess alone takes on a CPU (about 0.3 ms), so no query can
make it."""
MISSED_QUERIES: Final = 60
"""Enough for the miss rate's interval to lie above 0.1 % when every query misses (Wilson's
low end of 60 of 60 is 94 %)."""


def policy_root(folder: Path, *, queries: int, deadline_s: float, tail: bool = False) -> Path:
    """A repository root under `folder` whose dist/ holds policy-pipeline at RATE_HZ for
    `queries` queries (`tail`: and `measure.tail: p99.9`)."""
    documents = list(yaml.safe_load_all(POLICY.read_text(encoding="utf-8")))
    phase = {"min_iterations": queries, "min_time_s": 0.0, "max_iterations": queries}
    for document in documents:
        if (
            document
            and document["kind"] == "ConfigMap"
            and "config.json" in document.get("data", {})
        ):
            config = json.loads(document["data"]["config.json"])
            config["warmup"] = {"min_iterations": 5, "min_time_s": 0.0, "max_iterations": 20}
            config["warmup"]["max_time_s"] = 10.0
            # Twice the schedule's length: a run that falls behind stops, flagged, in bounds.
            config["measure"] = phase | {"max_time_s": max(60.0, 2 * queries / RATE_HZ)}
            config["measure"]["tail"] = "p99.9" if tail else None
            config["scenario"] = {
                "kind": "fixed_rate",
                "rate_hz": RATE_HZ,
                "deadline_s": deadline_s,
            }
            document["data"]["config.json"] = json.dumps(config)
    root = folder / "repo"
    target = root / POLICY.relative_to(REPO_ROOT)
    target.parent.mkdir(parents=True)
    target.write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    return root


def try_policy(root: Path) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Run the local try of `root`'s policy-pipeline; its text report, its one control answer
    and that answer's variant, from the JSON report of what the try stored. Raises
    RuntimeError where the try or the report fails."""
    run = CliRunner().invoke(localrun, [WORKFLOW, "--root", str(root)])
    if run.exit_code != 0:
        raise RuntimeError(f"localrun failed: {run.output[-4000:]}")
    report = CliRunner().invoke(
        collector_cli, ["--root", str(root), "report", "--workflow", WORKFLOW, "--format", "json"]
    )
    if report.exit_code != 0:
        raise RuntimeError(f"collector report failed: {report.output[-4000:]}")
    document = json.loads(report.output)
    (answer,) = document["control"]
    return run.stdout, answer, document["variants"][answer["row"]]
