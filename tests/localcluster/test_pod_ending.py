"""The pod executor ends a pod as a kubelet ends its container: with everything the runner
started, not the runner's own process alone."""

import os
import subprocess
import time

from localcluster.podexecutor import _PodTask

POD = {"metadata": {"namespace": "bench", "name": "pod-0", "uid": "u-0"}}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers signal 0: only its state says it has ended.
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_a_runner_that_outlives_its_grace_is_killed_with_what_it_started() -> None:
    """The runner ignores SIGTERM and has a child (as inductor's compile workers are): past
    the grace period both go. Killing the runner's pid alone left the child running."""
    task = _PodTask(executor=None, pod=POD)  # type: ignore[arg-type]
    task.process = subprocess.Popen(
        ["sh", "-c", 'trap "" TERM; sleep 60 & echo $!; wait'],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert task.process.stdout is not None
    child = int(task.process.stdout.readline())
    task.terminate(grace_s=0.2)
    deadline = time.monotonic() + 30
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    task.process.wait(timeout=30)
    assert not _alive(child)
