"""The runner process's age, from the kernel's records: what the time before its first line
of code (the interpreter, torch's import) is measured by."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.startup import process_age_s, since_start

TICKS = os.sysconf("SC_CLK_TCK")


def _stat(name: str, start_ticks: int) -> str:
    """A /proc/<pid>/stat line as the kernel writes it: 52 fields, the name in brackets."""
    after = ["S", *["0"] * 18, str(start_ticks), *["0"] * 30]
    return f"4242 ({name}) {' '.join(after)}\n"


@pytest.mark.parametrize(
    ("name", "start_ticks", "uptime", "age"),
    [
        ("python", 100 * TICKS, "130.50 990.00\n", 30.5),
        # A process may name itself anything: brackets and spaces inside the name shift
        # nothing.
        ("a) (b c", 100 * TICKS, "101.00 5.00\n", 1.0),
        # The two files are read one after the other: a clock tick between them never makes
        # an age below zero.
        ("python", 100 * TICKS + 1, "100.00 5.00\n", 0.0),
    ],
)
def test_the_age_is_uptime_less_the_start_time(
    tmp_path: Path, name: str, start_ticks: int, uptime: str, age: float
) -> None:
    stat, up = tmp_path / "stat", tmp_path / "uptime"
    stat.write_text(_stat(name, start_ticks), encoding="ascii")
    up.write_text(uptime, encoding="ascii")
    assert process_age_s(stat, up) == pytest.approx(age)


@pytest.mark.parametrize(
    ("stat", "uptime"),
    [(None, "5.00 1.00\n"), (_stat("python", 10), None), ("4242 (python) S 0\n", "5.00 1.00\n")],
)
def test_without_the_kernel_s_word_there_is_no_age(
    tmp_path: Path, stat: str | None, uptime: str | None
) -> None:
    stat_path, up_path = tmp_path / "stat", tmp_path / "uptime"
    if stat is not None:
        stat_path.write_text(stat, encoding="ascii")
    if uptime is not None:
        up_path.write_text(uptime, encoding="ascii")
    assert process_age_s(stat_path, up_path) is None


@pytest.mark.slow
def test_a_process_started_before_this_one_is_older_than_it() -> None:
    # A real /proc: the parent's age against a child's, started after it.
    child = subprocess.run(
        [sys.executable, "-c", "from runner.startup import since_start; print(since_start())"],
        capture_output=True,
        text=True,
        check=True,
    )
    own = since_start()
    assert own is not None
    assert 0 <= float(child.stdout) < own
