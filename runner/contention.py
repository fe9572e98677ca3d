"""What the timed loop got of the CPUs, from the kernel's own counters read before and after
it: the process's CPU time, its threads' run-queue wait, the host's steal time and the
cgroup's throttling. Reading them costs a few file reads per loop, none per iteration."""

import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from contract.result import Contention
from runner.threads import CGROUP_ROOT

PROC: Final = Path("/proc")
_STEAL_COLUMN: Final = 8
"""`cpu user nice system idle iowait irq softirq steal ...`: guest time is already in user."""


@dataclass(frozen=True)
class CpuCounters:
    """The counters at one moment."""

    wall_ns: int
    cpu_time_s: float
    on_cpu_and_wait_ns: tuple[int, int] | None
    """Summed over the process's threads: time on a CPU, time runnable but waiting."""
    steal_and_total_ticks: tuple[int, int] | None
    throttled_periods_and_s: tuple[int, float] | None


def read_counters(proc: Path = PROC, cgroup: Path = CGROUP_ROOT) -> CpuCounters:
    """The counters now; a counter the kernel does not offer here is None."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return CpuCounters(
        wall_ns=time.perf_counter_ns(),
        cpu_time_s=usage.ru_utime + usage.ru_stime,
        on_cpu_and_wait_ns=_schedstat(proc / "self" / "task"),
        steal_and_total_ticks=_steal(proc / "stat"),
        throttled_periods_and_s=_throttling(cgroup),
    )


def contention(
    before: CpuCounters, after: CpuCounters, threads: int, cpus_allowed: float
) -> Contention:
    """What happened between two readings."""
    wait_s = None
    if before.on_cpu_and_wait_ns and after.on_cpu_and_wait_ns:
        # A thread that exited between the readings takes its counts with it: never below 0.
        wait_s = max(0, after.on_cpu_and_wait_ns[1] - before.on_cpu_and_wait_ns[1]) / 1e9
    steal = None
    if before.steal_and_total_ticks and after.steal_and_total_ticks:
        ticks = after.steal_and_total_ticks[1] - before.steal_and_total_ticks[1]
        stolen = after.steal_and_total_ticks[0] - before.steal_and_total_ticks[0]
        steal = stolen / ticks if ticks > 0 else 0.0
    periods = throttled_s = None
    if before.throttled_periods_and_s and after.throttled_periods_and_s:
        periods = after.throttled_periods_and_s[0] - before.throttled_periods_and_s[0]
        throttled_s = after.throttled_periods_and_s[1] - before.throttled_periods_and_s[1]
    return Contention(
        wall_s=(after.wall_ns - before.wall_ns) / 1e9,
        cpu_time_s=after.cpu_time_s - before.cpu_time_s,
        threads=threads,
        cpus_allowed=cpus_allowed,
        run_queue_wait_s=wait_s,
        steal_fraction=steal,
        throttled_periods=periods,
        throttled_s=throttled_s,
    )


class ThreadWaits:
    """The run-queue wait summed over the process's threads, cheap enough to read twice a
    query: each thread's schedstat is opened once and re-read in place. The threads are
    those alive when it opens (after warm-up, torch's intra-op pool among them); a thread
    that exits keeps the wait it had, so the sum never falls. Use it as a context manager."""

    def __init__(self, tasks: Path = PROC / "self" / "task") -> None:
        self._files: list[int] = []
        try:
            threads = sorted(tasks.iterdir())
        except OSError:
            threads = []
        for thread in threads:
            try:
                self._files.append(os.open(thread / "schedstat", os.O_RDONLY))
            except OSError:
                continue
        self._last = [0] * len(self._files)
        # Kernels without schedstats (gVisor) show zeros: no reading, as in read_counters.
        self.available = any(_schedstat_field(file, 0) for file in self._files)
        self.read()

    def __enter__(self) -> "ThreadWaits":
        return self

    def __exit__(self, *_: object) -> None:
        for file in self._files:
            os.close(file)
        self._files = []

    def read(self) -> int:
        """The summed wait in nanoseconds."""
        for index, file in enumerate(self._files):
            if (value := _schedstat_field(file, 1)) is not None:
                self._last[index] = value
        return sum(self._last)


def _schedstat_field(file: int, column: int) -> int | None:
    """`on_cpu_ns wait_ns timeslices` of an open schedstat; None once its thread is gone."""
    try:
        return int(os.pread(file, 128, 0).split()[column])
    except (OSError, IndexError, ValueError):
        return None


def cpus_allowed(quota: float | None, usable: int) -> float:
    """CPUs the pod may use: its affinity mask, lowered to the cgroup quota."""
    return usable if quota is None else min(float(usable), quota)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return None


def _schedstat(tasks: Path) -> tuple[int, int] | None:
    on_cpu = waiting = 0
    try:
        threads = list(tasks.iterdir())
    except OSError:
        return None
    for thread in threads:
        fields = (_read(thread / "schedstat") or "").split()
        if len(fields) >= 2 and fields[0].isdigit() and fields[1].isdigit():
            on_cpu += int(fields[0])
            waiting += int(fields[1])
    # Kernels without schedstats (and sandboxes such as gVisor) show zeros: no reading at all.
    return (on_cpu, waiting) if on_cpu > 0 else None


def _steal(stat: Path) -> tuple[int, int] | None:
    first = (_read(stat) or "").partition("\n")[0].split()
    if len(first) <= _STEAL_COLUMN or first[0] != "cpu":
        return None
    try:
        ticks = [int(value) for value in first[1 : _STEAL_COLUMN + 1]]
    except ValueError:
        return None
    return ticks[-1], sum(ticks)


def _throttling(cgroup: Path) -> tuple[int, float] | None:
    """nr_throttled and the time throttled: cgroup v2's cpu.stat (throttled_usec), or v1's
    under `cpu` or `cpu,cpuacct` (throttled_time, in nanoseconds)."""
    for stat, key, seconds_per_unit in (
        (cgroup / "cpu.stat", "throttled_usec", 1e-6),
        (cgroup / "cpu" / "cpu.stat", "throttled_time", 1e-9),
        (cgroup / "cpu,cpuacct" / "cpu.stat", "throttled_time", 1e-9),
    ):
        values = dict(
            line.split(maxsplit=1) for line in (_read(stat) or "").splitlines() if " " in line
        )
        if "nr_throttled" in values and key in values:
            try:
                return int(values["nr_throttled"]), int(values[key]) * seconds_per_unit
            except ValueError:
                return None
    return None
