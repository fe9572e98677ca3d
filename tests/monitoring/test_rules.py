"""The alert rules, tested by promtool on series that show a regression, noise, and gaps."""

import shutil
import subprocess
from pathlib import Path

import pytest

from synth.monitoring.rules import Schedule, duration
from tests.monitoring.conftest import NIGHTLY, write_rules
from tests.monitoring.servers import PROMTOOL, needs_prometheus

HERE = Path(__file__).parent


def promtool(*arguments: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PROMTOOL, *map(str, arguments)], capture_output=True, text=True, check=False
    )


@needs_prometheus
def test_a_step_change_and_a_gap_fire_while_noise_does_not(tmp_path: Path) -> None:
    write_rules(tmp_path, [NIGHTLY])
    shutil.copy(HERE / "rules_test.yaml", tmp_path)
    done = promtool("test", "rules", tmp_path / "rules_test.yaml")
    assert done.returncode == 0, done.stdout + done.stderr


@needs_prometheus
def test_a_variant_that_held_and_then_missed_fires_while_one_that_never_held_does_not(
    tmp_path: Path,
) -> None:
    write_rules(tmp_path, [NIGHTLY])
    shutil.copy(HERE / "deadline_rules_test.yaml", tmp_path)
    done = promtool("test", "rules", tmp_path / "deadline_rules_test.yaml")
    assert done.returncode == 0, done.stdout + done.stderr


@needs_prometheus
@pytest.mark.parametrize(
    "schedules",
    [
        [],
        [NIGHTLY],
        [NIGHTLY, Schedule(workflow="hourly", clusters=("us-east",), period_s=3600, grace_s=600)],
    ],
)
def test_promtool_accepts_the_rules_with_no_duplicates(
    tmp_path: Path, schedules: list[Schedule]
) -> None:
    done = promtool("check", "rules", write_rules(tmp_path, schedules))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("seconds", "written"),
    [(86400, "1d"), (108000, "30h"), (4200, "70m"), (61, "61s"), (172800, "2d")],
)
def test_durations_are_written_in_their_largest_whole_unit(seconds: int, written: str) -> None:
    assert duration(seconds) == written
