"""A pod in podman, stopped as localrun stops it (Ctrl-C, a deadline): SIGTERM through
`podman kill`, SIGKILL after the grace, and no container left either way.

The container runs a shell loop rather than the runner, in an image made FROM the local base
(`localrun/podman.py` BASE_IMAGE, which `make image` and the image test build anyway), so
that it stops at a known point: what is under test is the executor's end of the pod, which
is the same whatever the image runs. Ten seconds of it are the grace a pod that ignores
SIGTERM is given.
"""

import dataclasses
import json
import os
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from localrun.pod import PodPlan
from localrun.podman import (
    BASE_IMAGE,
    Podman,
    build_base_image,
    check_call,
    configure_podman,
    run_pod,
)
from localrun.streams import STOP_GRACE_S, Watch
from tests.localrun.test_podman_args import plan_for, values

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("podman") is None or shutil.which("debootstrap") is None or os.geteuid() != 0,
        reason="needs podman and debootstrap, as root: apt-get install -y podman runc debootstrap",
    ),
]

LOOP: Final = (
    'if [ "$IGNORE_TERM" = 1 ]; then trap "" TERM; '
    'else trap "echo terminated >&2; exit 143" TERM; fi; '
    "echo started >&2; while :; do sleep 0.2; done"
)
"""PID 1 of a container gets only the signals it handles: this one handles SIGTERM by
exiting 143, as the runner does, or, with IGNORE_TERM=1, ignores it."""


@pytest.fixture(scope="module")
def podman(tmp_path_factory: pytest.TempPathFactory) -> Podman:
    return configure_podman(tmp_path_factory.mktemp("podman"))


@pytest.fixture(scope="module")
def image(podman: Podman, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    build_base_image(podman)
    context = tmp_path_factory.mktemp("loop-image")
    (context / "Dockerfile").write_text(
        f"FROM {BASE_IMAGE}\nENTRYPOINT {json.dumps(['sh', '-c', LOOP])}\n", encoding="utf-8"
    )
    tag = f"localhost/benchfleet-test-stop:{uuid.uuid4().hex[:8]}"
    check_call(
        podman.command("build", "--network", "none", "--tag", tag, str(context)),
        podman.environment(),
    )
    yield tag
    check_call(podman.command("image", "rm", "--ignore", tag), podman.environment())


def _plan(image: str, workdir: Path, *, ignore_term: bool) -> PodPlan:
    """cpu-smoke's pod 0 as localrun plans it, running `image` with no volumes."""
    plan = plan_for(0, workdir / "volumes")
    return dataclasses.replace(
        plan, image=image, env={"IGNORE_TERM": "1" if ignore_term else "0"}, mounts=()
    )


def _stop_once_started() -> Watch:
    """A watch that stops the pod at its first line, as Ctrl-C stops a try mid-run."""
    stop = threading.Event()
    return Watch(line=lambda text: stop.set() if text.strip() == "started" else None, stop=stop)


def _containers(podman: Podman, name: str) -> str:
    return subprocess.run(
        podman.command("ps", "--all", "--filter", f"name={name}", "--format", "{{.Names}}"),
        env=podman.environment(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


@pytest.mark.parametrize(
    ("ignore_term", "exit_code", "said"),
    [
        pytest.param(False, 143, "terminated", id="it ends on SIGTERM"),
        pytest.param(True, 137, "", id="it ignores SIGTERM: SIGKILL after the grace"),
    ],
)
def test_a_stopped_pod_ends_and_leaves_no_container(
    podman: Podman, image: str, tmp_path: Path, ignore_term: bool, exit_code: int, said: str
) -> None:
    plan = _plan(image, tmp_path, ignore_term=ignore_term)
    began = time.monotonic()
    # A pod whose first line never comes ends at the deadline, which the first assert names.
    run = run_pod(podman, plan, tmp_path, 120, _stop_once_started())
    took = time.monotonic() - began
    assert run.ended_early == "stopped", run.ended_early
    assert run.exit_code == exit_code, run.stderr
    assert said in run.stderr
    if ignore_term:
        assert took >= STOP_GRACE_S, "SIGKILL only once the grace is over"
    (name,) = values(run.command, "--name")
    assert _containers(podman, name) == ""
