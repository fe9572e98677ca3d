"""The kernel's counters around the timed loop: CPU time, run-queue wait, steal and the
cgroup's throttling, each read where the kernel offers it and None where it does not."""

import time
from pathlib import Path

import pytest

from runner.contention import (
    CpuCounters,
    ThreadWaits,
    contention,
    cpus_allowed,
    read_counters,
)


def write(root: Path, relative: str, text: str) -> None:
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    (root / relative).write_text(text, encoding="ascii")


def fake_proc(root: Path, schedstats: dict[int, str], stat: str) -> Path:
    for tid, line in schedstats.items():
        write(root, f"self/task/{tid}/schedstat", line)
    write(root, "stat", stat)
    return root


STAT = "cpu  {user} 0 {system} 5000 10 0 3 {steal} 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"


def test_counters_are_summed_over_threads_and_read_from_each_file(tmp_path: Path) -> None:
    proc = fake_proc(
        tmp_path / "proc",
        {1: "3000 500 9\n", 2: "1000 250 4\n"},
        STAT.format(user=100, system=50, steal=7),
    )
    write(tmp_path / "cg", "cpu.stat", "usage_usec 9\nnr_throttled 4\nthrottled_usec 2500\n")
    counters = read_counters(proc, tmp_path / "cg")
    assert counters.on_cpu_and_wait_ns == (4000, 750)
    assert counters.steal_and_total_ticks == (7, 100 + 50 + 5000 + 10 + 3 + 7)
    assert counters.throttled_periods_and_s == (4, 0.0025)


@pytest.mark.parametrize("folder", ["cpu", "cpu,cpuacct"])
def test_cgroup_v1_throttling_is_in_nanoseconds(tmp_path: Path, folder: str) -> None:
    write(tmp_path, f"{folder}/cpu.stat", "nr_periods 10\nnr_throttled 2\nthrottled_time 3000000\n")
    assert read_counters(tmp_path / "none", tmp_path).throttled_periods_and_s == (2, 0.003)


def test_what_the_kernel_does_not_offer_is_none(tmp_path: Path) -> None:
    # Sandboxed kernels (gVisor) show schedstat as zeros: that is no reading, not "no wait".
    proc = fake_proc(tmp_path, {1: "0 0 1\n"}, "intr 5\n")
    counters = read_counters(proc, tmp_path / "no-cgroup")
    assert counters.on_cpu_and_wait_ns is None
    assert counters.steal_and_total_ticks is None
    assert counters.throttled_periods_and_s is None
    measured = contention(counters, counters, threads=1, cpus_allowed=1.0)
    assert measured.run_queue_wait_s is None
    assert measured.steal_fraction is None
    assert measured.throttled_s is None


def counters(
    wall_s: float, cpu_s: float, wait_ns: int, steal: int, total: int, throttled: float
) -> CpuCounters:
    return CpuCounters(
        wall_ns=int(wall_s * 1e9),
        cpu_time_s=cpu_s,
        on_cpu_and_wait_ns=(1, wait_ns),
        steal_and_total_ticks=(steal, total),
        throttled_periods_and_s=(int(throttled * 10), throttled),
    )


def test_contention_is_the_difference_between_two_readings() -> None:
    before = counters(10, 1, 1_000_000_000, 5, 1000, 0.5)
    after = counters(12, 2.5, 1_300_000_000, 25, 1400, 0.7)
    measured = contention(before, after, threads=2, cpus_allowed=1.5)
    assert measured.wall_s == pytest.approx(2)
    assert measured.cpu_time_s == pytest.approx(1.5)
    assert measured.run_queue_wait_s == pytest.approx(0.3)
    assert measured.steal_fraction == pytest.approx(20 / 400)
    assert measured.throttled_periods == 2
    assert measured.throttled_s == pytest.approx(0.2)


def test_a_thread_that_exited_never_makes_the_wait_negative() -> None:
    before = counters(0, 0, 900, 0, 10, 0)
    after = counters(1, 1, 100, 0, 10, 0)
    assert contention(before, after, threads=1, cpus_allowed=1).run_queue_wait_s == 0


@pytest.mark.parametrize(("quota", "usable", "allowed"), [(None, 4, 4), (1.5, 4, 1.5), (8, 2, 2)])
def test_cpus_allowed_is_the_affinity_lowered_to_the_quota(
    quota: float | None, usable: int, allowed: float
) -> None:
    assert cpus_allowed(quota, usable) == allowed


def test_this_kernel_counts_the_cpu_time_of_a_busy_loop() -> None:
    """The loop spins until it has had 0.1 s of CPU, not for a wall time: on a loaded machine
    0.2 s of wall time gave it 0.03 s of CPU, and the count asserted nothing of the kernel."""
    before = read_counters()
    spent = time.process_time() + 0.1
    give_up = time.perf_counter() + 60
    while time.process_time() < spent and time.perf_counter() < give_up:
        pass
    measured = contention(before, read_counters(), threads=1, cpus_allowed=1)
    assert 0.09 < measured.cpu_time_s <= measured.wall_s * 1.05


def test_thread_waits_sum_each_threads_wait_as_it_is_now(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {1: "3000 500 9\n", 2: "1000 250 4\n"}, "")
    tasks = proc / "self" / "task"
    with ThreadWaits(tasks) as waits:
        assert waits.available
        assert waits.read() == 750
        # Rewritten in place, as the kernel's counters move: each read sees the new value.
        write(tasks, "2/schedstat", "1500 4250 5\n")
        assert waits.read() == 4750


def test_a_thread_gone_keeps_its_wait_so_the_sum_never_falls(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {1: "3000 500 9\n", 2: "1000 250 4\n"}, "")
    tasks = proc / "self" / "task"
    with ThreadWaits(tasks) as waits:
        write(tasks, "1/schedstat", "3100 700 10\n")
        assert waits.read() == 950
        # A file that no longer reads (the kernel's answer once a thread has exited).
        write(tasks, "1/schedstat", "")
        write(tasks, "2/schedstat", "1000 300 4\n")
        assert waits.read() == 1000


def test_thread_waits_without_schedstats_are_unavailable(tmp_path: Path) -> None:
    proc = fake_proc(tmp_path, {1: "0 0 1\n"}, "")
    with ThreadWaits(proc / "self" / "task") as waits:
        assert not waits.available
    with ThreadWaits(tmp_path / "no-proc") as waits:
        assert not waits.available


def test_thread_waits_read_this_kernel_as_read_counters_does() -> None:
    with ThreadWaits() as waits:
        first = waits.read()
        assert waits.available == (read_counters().on_cpu_and_wait_ns is not None)
        assert waits.read() >= first
