"""How many CPUs this container may use: torch follows the node's cores, not the cgroup's
quota, and more threads than the quota allows get throttled mid-iteration."""

import math
import os
from pathlib import Path
from typing import Final

CGROUP_ROOT: Final = Path("/sys/fs/cgroup")


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except OSError:
        return None


def cpu_quota(root: Path = CGROUP_ROOT) -> float | None:
    """CPUs the cgroup allows (quota / period), or None when it sets no limit.

    cgroup v2 (most clusters) keeps both in `cpu.max`; v1 in `cpu.cfs_quota_us` and
    `cpu.cfs_period_us`, under `cpu` or `cpu,cpuacct`.
    """
    v2 = _read(root / "cpu.max")
    if v2 is not None:
        quota, _, period = v2.partition(" ")
        return None if quota == "max" else int(quota) / int(period or "100000")
    for folder in ("cpu", "cpu,cpuacct"):
        quota_us = _read(root / folder / "cpu.cfs_quota_us")
        period_us = _read(root / folder / "cpu.cfs_period_us")
        if quota_us is not None and period_us is not None:
            return None if int(quota_us) < 0 else int(quota_us) / int(period_us)
    return None


def usable_cpus() -> int:
    """CPUs this process may be scheduled on (its affinity mask, e.g. a pinned cpuset)."""
    return len(os.sched_getaffinity(0))


def thread_count(quota: float | None, cpus: int) -> int:
    """Intra-op threads: whole CPUs of the quota, never more than the CPUs usable, at least 1."""
    if quota is None:
        return max(cpus, 1)
    return max(1, min(cpus, math.floor(quota)))
