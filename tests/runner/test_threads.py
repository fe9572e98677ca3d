"""Threads follow the container's CPU quota (cgroup v1 or v2), not the node's cores."""

from pathlib import Path

import pytest

from runner.threads import cpu_quota, thread_count


def write(root: Path, relative: str, text: str) -> None:
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    (root / relative).write_text(text + "\n", encoding="ascii")


@pytest.mark.parametrize(
    ("cpu_max", "quota"), [("max 100000", None), ("150000 100000", 1.5), ("400000 100000", 4.0)]
)
def test_cgroup_v2_quota_is_read_from_cpu_max(
    tmp_path: Path, cpu_max: str, quota: float | None
) -> None:
    write(tmp_path, "cpu.max", cpu_max)
    assert cpu_quota(tmp_path) == quota


@pytest.mark.parametrize("folder", ["cpu", "cpu,cpuacct"])
def test_cgroup_v1_quota_is_read_from_cfs_files(tmp_path: Path, folder: str) -> None:
    write(tmp_path, f"{folder}/cpu.cfs_quota_us", "200000")
    write(tmp_path, f"{folder}/cpu.cfs_period_us", "100000")
    assert cpu_quota(tmp_path) == 2.0


def test_cgroup_v1_minus_one_means_unlimited(tmp_path: Path) -> None:
    write(tmp_path, "cpu/cpu.cfs_quota_us", "-1")
    write(tmp_path, "cpu/cpu.cfs_period_us", "100000")
    assert cpu_quota(tmp_path) is None


def test_no_cgroup_files_means_unlimited(tmp_path: Path) -> None:
    assert cpu_quota(tmp_path) is None


@pytest.mark.parametrize(
    ("quota", "cpus", "threads"),
    [(None, 16, 16), (4.0, 16, 4), (1.5, 16, 1), (0.5, 16, 1), (8.0, 2, 2)],
)
def test_threads_are_whole_cpus_of_the_quota_within_the_usable_cpus(
    quota: float | None, cpus: int, threads: int
) -> None:
    assert thread_count(quota, cpus) == threads
