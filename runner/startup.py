"""How long the runner process has been running, by the kernel's clock.

A pod spends seconds starting Python and importing torch before any line of the runner runs,
so only the kernel knows when the process began: /proc/self/stat's start time, in clock
ticks since boot, against /proc/uptime (both 10 ms steps; both the host's in a container).
"""

import os
import time
from functools import cache
from pathlib import Path

_START_TIME_FIELD = 19
"""starttime, field 22 of /proc/<pid>/stat, counted from the state (field 3): the process's
name before it is in brackets and may hold spaces."""


def process_age_s(
    stat: Path = Path("/proc/self/stat"), uptime: Path = Path("/proc/uptime")
) -> float | None:
    """Seconds since the process started; None where /proc does not say."""
    try:
        fields = stat.read_text(encoding="ascii").rpartition(")")[2].split()
        started = int(fields[_START_TIME_FIELD]) / os.sysconf("SC_CLK_TCK")
        up = float(uptime.read_text(encoding="ascii").split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(0.0, up - started)


@cache
def _origin() -> float | None:
    """The process's start on the monotonic clock, read once: a later reading would move it
    by up to a clock tick."""
    age = process_age_s()
    return None if age is None else time.monotonic() - age


def since_start() -> float | None:
    """Seconds since the runner process started; None where the kernel does not say."""
    origin = _origin()
    return None if origin is None else time.monotonic() - origin
