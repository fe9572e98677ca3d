"""Follow a running pod: its stderr line by line as it comes (the runner's progress lines
among its logs), its stdout whole, and its end, on its own, at its deadline or when the
caller asks it to stop.

A pod is ended as a kubelet ends one: SIGTERM to its first process, which the runner answers
by handing over what it measured; SIGKILL after a grace period; and once the first process
has exited, SIGKILL to whatever it left running, as a container's end takes everything in it.
"""

import contextlib
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Final, Protocol

STOP_GRACE_S: Final = 10.0
"""How long a pod asked to stop has to hand over its results: the runner needs well under a
second, unless torch holds it in one long call."""
TICK_S: Final = 1.0
"""The longest the caller waits for a word of a running pod (its display's clock)."""
_EXIT_POLL_S: Final = 0.05
"""How often a pod whose stderr has closed is looked at until its process has exited."""


def _ignore(line: str) -> None:
    """Nobody reads the pod's lines as they come."""


def _no_clock() -> None:
    """Nobody shows the pod as it runs."""


@dataclass(frozen=True)
class Watch:
    """What a pod's caller is told while it runs, and how it tells the pod to end."""

    line: Callable[[str], None] = _ignore
    """Each line the pod writes to stderr, as it comes."""
    tick: Callable[[], None] = _no_clock
    """Called at least every TICK_S while the pod runs."""
    stop: threading.Event = field(default_factory=threading.Event)
    """Set: end the pod (SIGTERM, then SIGKILL after STOP_GRACE_S)."""
    hurry: threading.Event = field(default_factory=threading.Event)
    """Set: SIGKILL it now, without the rest of the grace."""


class Ending(Protocol):
    """How to end what runs a pod: a process group, a container."""

    def terminate(self) -> None:
        """Ask the pod's first process to end (SIGTERM)."""

    def kill(self) -> None:
        """End everything the pod runs (SIGKILL); nothing where nothing is left."""


@dataclass(frozen=True)
class ProcessGroup:
    """A pod run as a process that leads its own process group (`start_new_session`)."""

    pid: int

    def terminate(self) -> None:
        # Followed, so not reaped yet: the pid is still this process's.
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)


@dataclass(frozen=True)
class Followed:
    """What a pod wrote, and why it was ended before it ended on its own, if it was."""

    stdout: str
    stderr: str
    ended_early: str | None


def _exited(process: subprocess.Popen[str]) -> bool:
    """Whether `process` has exited, leaving it unreaped: its pid, and so its process
    group's id, stay its own until the caller has killed what it left."""
    flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
    return os.waitid(os.P_PID, process.pid, flags) is not None


def _read_all(stream: IO[str], into: list[str]) -> None:
    into.append(stream.read())


def _read_lines(stream: IO[str], into: "queue.Queue[str | None]") -> None:
    for line in stream:
        into.put(line)
    into.put(None)


def follow(
    process: subprocess.Popen[str], ending: Ending, watch: Watch, timeout_s: float
) -> Followed:
    """Follow `process` (started with both streams piped) until it has exited and `ending`
    has killed what it left, ending it at `timeout_s` or when `watch` says stop; reaps it."""
    assert process.stdout is not None and process.stderr is not None
    stdout: list[str] = []
    lines: queue.Queue[str | None] = queue.Queue()
    readers = [
        threading.Thread(target=_read_all, args=(process.stdout, stdout), daemon=True),
        threading.Thread(target=_read_lines, args=(process.stderr, lines), daemon=True),
    ]
    for reader in readers:
        reader.start()
    stderr: list[str] = []

    def take(line: str | None) -> None:
        if line is not None:
            stderr.append(line)
            watch.line(line)

    deadline = time.monotonic() + timeout_s
    ended_early: str | None = None
    terminated_at: float | None = None
    closed = False
    while not _exited(process):
        with contextlib.suppress(queue.Empty):
            line = lines.get(timeout=_EXIT_POLL_S if closed else TICK_S)
            closed = closed or line is None
            take(line)
        watch.tick()
        now = time.monotonic()
        if terminated_at is None and (watch.stop.is_set() or now >= deadline):
            ended_early = (
                "stopped" if watch.stop.is_set() else f"ended at its deadline of {timeout_s:g} s"
            )
            ending.terminate()
            terminated_at = now
        if terminated_at is not None and (
            watch.hurry.is_set() or now >= terminated_at + STOP_GRACE_S
        ):
            ending.kill()  # again on each pass: a process it started meanwhile goes too
    ending.kill()
    for reader in readers:
        # Bounded: a process that left the group (its own session) may hold the pipes.
        reader.join(timeout=STOP_GRACE_S)
    while not lines.empty():
        take(lines.get_nowait())
    process.wait()
    return Followed("".join(stdout), "".join(stderr), ended_early)
