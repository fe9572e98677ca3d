"""The cluster's processes: each in a session of its own, logged to a file, stopped by PID.

Every process gets its own session (and so process group) so that stopping it reaches any
children, and so that Ctrl-C in the terminal that ran `make cluster` does not reach it:
the cluster stays up until `make cluster-down`.
"""

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STOP_GRACE_S = 10.0
_POLL_S = 0.1
_WAIT_POLL_S = 0.5


class StartError(RuntimeError):
    """A process exited or did not become ready in time; the message quotes its log."""


@dataclass(frozen=True)
class Started:
    """A process of the cluster: what it is, its PID and its log."""

    name: str
    pid: int
    log: Path


def log_tail(log: Path, lines: int = 25) -> str:
    """The last lines of a process's log, for error messages."""
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def start(
    name: str,
    command: Sequence[str],
    log: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Started:
    """Start `command` in a new session, its output appended to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as output:
        process = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=dict(env) if env is not None else None,
            cwd=cwd,
            start_new_session=True,
        )
    return Started(name, process.pid, log)


def is_alive(pid: int) -> bool:
    """Whether `pid` runs and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def wait_ready(started: Started, is_ready: Callable[[], bool], timeout_s: float) -> float:
    """Poll `is_ready` until it holds; the seconds it took. Fails at once if the process dies."""
    began = time.monotonic()
    while time.monotonic() - began < timeout_s:
        if not is_alive(started.pid):
            raise StartError(f"{started.name} exited while starting:\n{log_tail(started.log)}")
        try:
            if is_ready():
                return time.monotonic() - began
        except OSError:
            pass
        time.sleep(_POLL_S)
    raise StartError(
        f"{started.name} was not ready after {timeout_s:.0f} s:\n{log_tail(started.log)}"
    )


def poll_until(what: str, check: Callable[[], Any], timeout_s: float) -> Any:
    """Poll `check` until it returns something truthy; that value. Raises TimeoutError."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(_WAIT_POLL_S)
    raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def _reap(pid: int) -> None:
    # Our own children would stay zombies (and look alive to `kill 0`) until waited for.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def stop(pid: int, grace_s: float = STOP_GRACE_S) -> None:
    """SIGTERM the process's group, then SIGKILL what is left after `grace_s`."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        _reap(pid)
        if not is_alive(pid):
            return
        time.sleep(_POLL_S)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    _reap(pid)
