"""The runner process's own peak memory."""

import resource
import sys
from pathlib import Path


def peak_rss_bytes(status: Path = Path("/proc/self/status")) -> int:
    """Peak resident set size of this process, from the kernel's VmHWM.

    Not `getrusage`'s `ru_maxrss` where /proc is there: Linux carries it over from the
    process that exec'd us, so a runner started by a larger process (the local executor, a
    benchmark harness) would report that process's peak. Without /proc, `ru_maxrss` it
    is: bytes on macOS, KiB on the other systems.
    """
    try:
        lines = status.read_text(encoding="ascii").splitlines()
    except OSError:
        lines = []
    for line in lines:
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024
