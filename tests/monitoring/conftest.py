"""Writing generated rules where promtool and Prometheus read them."""

from collections.abc import Sequence
from pathlib import Path

from synth.monitoring.rules import Schedule, rules_file

NIGHTLY = Schedule(
    workflow="nightly", clusters=("us-east", "eu-west"), period_s=86400, grace_s=21600
)
"""The scheduled workflow tests/monitoring/rules_test.yaml expects the rules of."""


def write_rules(folder: Path, schedules: Sequence[Schedule]) -> Path:
    """The rules file synth would write for `schedules`, in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "rules.yaml"
    path.write_text(rules_file(schedules), encoding="utf-8")
    return path
