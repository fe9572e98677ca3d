"""Peak memory of a process, as the kernel keeps it."""

import resource
import sys
from pathlib import Path


def high_water_bytes(status: Path) -> int | None:
    """VmHWM from a /proc/<pid>/status file: the process's peak RSS so far; None when the
    file cannot be read (no /proc, or the process is gone) or has no such line."""
    try:
        lines = status.read_text(encoding="ascii").splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return None


def peak_rss_bytes(status: Path = Path("/proc/self/status")) -> int:
    """Peak resident set size of this process, from the kernel's VmHWM.

    Not `getrusage`'s `ru_maxrss` where /proc is there: Linux carries it over from the
    process that exec'd us, so a runner started by a larger process (the local executor, a
    benchmark harness) would report that process's peak. Without /proc, `ru_maxrss` it
    is: bytes on macOS, KiB on the other systems.
    """
    peak = high_water_bytes(status)
    if peak is not None:
        return peak
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return usage if sys.platform == "darwin" else usage * 1024
