import resource
import subprocess
import sys
from pathlib import Path

import pytest

from runner.memory import peak_rss_bytes
from tests.conftest import REPO_ROOT

MIB = 1024 * 1024


def test_peak_rss_is_read_from_vmhwm(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text("Name:\tpython\nVmPeak:\t  900 kB\nVmHWM:\t  2048 kB\nVmRSS:\t 1024 kB\n")
    assert peak_rss_bytes(status) == 2048 * 1024


def test_peak_rss_without_proc_falls_back_to_rusage(tmp_path: Path) -> None:
    unit = 1 if sys.platform == "darwin" else 1024
    reported = peak_rss_bytes(tmp_path / "absent")
    assert reported == pytest.approx(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * unit, rel=0.2
    )


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
def test_peak_rss_of_a_child_excludes_the_larger_parent_that_started_it() -> None:
    """Linux's ru_maxrss would report the parent's 200 MiB here: exec carries it over."""
    ballast = bytearray(200 * MIB)
    ballast[::4096] = b"x" * len(ballast[::4096])  # touch every page, so it is resident
    child = subprocess.run(
        [sys.executable, "-c", "from runner.memory import peak_rss_bytes; print(peak_rss_bytes())"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
    )
    assert int(child.stdout) < 100 * MIB
