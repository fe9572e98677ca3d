"""A pod followed to its end as a kubelet ends one: its stderr as it comes, SIGTERM and a grace
when asked to stop or past its deadline, then SIGKILL, and nothing it started left behind.
The pods here are small Python programs, not the runner: what is tested is the ending."""

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from localrun import streams
from localrun.streams import Followed, ProcessGroup, Watch, follow

GONE_WITHIN_S = 30.0
"""How long a killed process may take to be gone on a loaded machine."""

# Starts a process of its own group that would outlive it, says so, then waits.
POD = """
import signal, subprocess, sys, time
mode = sys.argv[1]
if mode == "hands-over":
    def stop(signum, frame):
        print("BENCH_RESULT {}", flush=True)
        sys.exit(143)
    signal.signal(signal.SIGTERM, stop)
elif mode == "ignores":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
left = subprocess.Popen(["sleep", "600"])
print(left.pid, file=sys.stderr, flush=True)
if mode == "exits":
    sys.exit(0)
time.sleep(600)
"""


def _run(tmp_path: Path, mode: str, watch: Watch, timeout_s: float = 600) -> tuple[int, Followed]:
    program = tmp_path / "pod.py"
    program.write_text(POD, encoding="utf-8")
    process = subprocess.Popen(
        [sys.executable, str(program), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    followed = follow(process, ProcessGroup(process.pid), watch, timeout_s)
    return process.returncode, followed


def _dead(pid: int) -> bool:
    # The left process was this one's grandchild: once killed, init reaps it.
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _gone(pid: int) -> bool:
    """Whether `pid` ends, soon: SIGKILL is sent, and the process dies when next scheduled."""
    waited = 0.0
    while not _dead(pid) and waited < GONE_WITHIN_S:
        time.sleep(0.05)
        waited += 0.05
    return _dead(pid)


def _stopping_at_first_line() -> Watch:
    stop = threading.Event()
    return Watch(line=lambda line: stop.set(), stop=stop)


def test_a_pod_asked_to_stop_hands_over_and_takes_what_it_started_with_it(
    tmp_path: Path,
) -> None:
    code, followed = _run(tmp_path, "hands-over", _stopping_at_first_line())
    assert (code, followed.ended_early) == (143, "stopped")
    assert followed.stdout == "BENCH_RESULT {}\n"
    assert _gone(int(followed.stderr.split()[0]))


def test_a_pod_that_ignores_sigterm_is_killed_after_the_grace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(streams, "STOP_GRACE_S", 0.5)
    code, followed = _run(tmp_path, "ignores", _stopping_at_first_line())
    assert (code, followed.ended_early) == (-signal.SIGKILL, "stopped")
    assert _gone(int(followed.stderr.split()[0]))


def test_a_second_signal_kills_without_the_grace(tmp_path: Path) -> None:
    watch = _stopping_at_first_line()
    watch.hurry.set()
    code, _ = _run(tmp_path, "ignores", watch)
    assert code == -signal.SIGKILL


def test_a_pod_past_its_deadline_is_ended(tmp_path: Path) -> None:
    code, followed = _run(tmp_path, "hands-over", Watch(), timeout_s=0.5)
    assert (code, followed.ended_early) == (143, "ended at its deadline of 0.5 s")


def test_a_pod_that_ends_on_its_own_leaves_nothing_running(tmp_path: Path) -> None:
    ticks: list[None] = []
    code, followed = _run(tmp_path, "exits", Watch(tick=lambda: ticks.append(None)))
    assert (code, followed.ended_early) == (0, None)
    assert _gone(int(followed.stderr.split()[0]))
    assert ticks, "the caller's clock moved while it waited"
