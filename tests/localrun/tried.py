"""A local try as its own process, watched as a person watches one: `python -m localrun` with
its scratch under a folder of the test's, its stderr read line by line as it comes, and the
machine's processes listed to find what it left behind."""

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Final

import pytest

from tests.conftest import REPO_ROOT

WAIT_S: Final = 300.0
"""The longest a test waits for a line (torch's import on a loaded machine)."""
GONE_WITHIN_S: Final = 10.0
"""The longest a killed process may take to be gone on a loaded machine."""
_POD_CLOCK = re.compile(r"^  \[\d+/\d+\] index \d+, (\d+):(\d\d)[,:]")
"""The pod's clock at the head of a plain progress line (localrun/display.py)."""


def processes() -> dict[int, tuple[int, int]]:
    """Every live process of this machine: its parent's pid and its process group, by pid.
    Not the dead ones their parents have yet to reap (zombies): killed, they run nothing and
    hold nothing but their pid, and one whose parent died waits for this machine's first
    process, which reaps when it will."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            state, parent, group = stat.read_text().rsplit(")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue  # it ended meanwhile
        if state != "Z":
            found[int(stat.parent.name)] = (int(parent), int(group))
    return found


def left_in(group: int) -> list[str]:
    """The command lines of the live processes of process group `group`, once those just
    killed have had GONE_WITHIN_S to go: SIGKILL ends a process when the kernel next
    schedules it, not at once."""
    deadline = time.monotonic() + GONE_WITHIN_S
    while True:
        left = [pid for pid, (_, found) in processes().items() if found == group]
        if not left or time.monotonic() > deadline:
            return [command_line(pid) for pid in left]
        time.sleep(0.05)


def command_line(pid: int) -> str:
    """What process `pid` runs, its arguments joined by spaces; "" once it has ended."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def pod_clocks(lines: Sequence[str]) -> list[int]:
    """The pod's clock, in seconds, of each plain progress line among `lines` (one pod's)."""
    return [
        int(found[1]) * 60 + int(found[2])
        for line in lines
        if (found := _POD_CLOCK.match(line)) is not None
    ]


@dataclass
class Try:
    """A running `python -m localrun`: its process and the lines its stderr wrote so far."""

    process: subprocess.Popen[str]
    seen: list[str] = field(default_factory=list)
    _lines: "queue.Queue[str]" = field(default_factory=queue.Queue)
    _reader: threading.Thread | None = None

    def read(self, stream: IO[str]) -> None:
        """Read `stream` line by line, as it comes, in a thread of its own."""

        def lines() -> None:
            for line in stream:
                self._lines.put(line)

        self._reader = threading.Thread(target=lines, daemon=True)
        self._reader.start()

    def wait_for(self, wanted: Callable[[str], bool]) -> str:
        """The next line `wanted` takes, after those before it."""
        while True:
            try:
                line = self._lines.get(timeout=WAIT_S)
            except queue.Empty:
                pytest.fail("no such line in time; stderr so far:\n" + "".join(self.seen))
            self.seen.append(line)
            if wanted(line):
                return line

    def runner(self) -> int:
        """The pid of the pod's runner process (localrun's one child while a pod runs)."""
        (pid,) = [pid for pid, (parent, _) in processes().items() if parent == self.process.pid]
        return pid

    def stop(self) -> int:
        """SIGINT, as Ctrl-C sends it; the exit code once it ended."""
        self.process.send_signal(signal.SIGINT)
        code = self.process.wait(timeout=WAIT_S)
        self.rest()
        return code

    def rest(self) -> str:
        """Every line stderr wrote, once the process has ended and its stream is read."""
        if self._reader is not None:
            self._reader.join(timeout=WAIT_S)
        while not self._lines.empty():
            self.seen.append(self._lines.get())
        return "".join(self.seen)


@contextmanager
def local_try(
    arguments: Sequence[str], scratch: Path, stdout: Path, *, cwd: Path = REPO_ROOT
) -> Iterator[Try]:
    """`python -m localrun ARGUMENTS` with TMPDIR `scratch`, stdout into the file `stdout`;
    killed on the way out if it still runs."""
    env = {**os.environ, "TMPDIR": str(scratch), "PYTHONPATH": str(REPO_ROOT)}
    with stdout.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "localrun", *arguments],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
        )
    tried = Try(process)
    assert process.stderr is not None
    tried.read(process.stderr)
    try:
        yield tried
    finally:
        process.kill()
        process.wait()
