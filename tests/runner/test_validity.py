"""Each validity flag is set by its rule, with the numbers in words, and only by its rule."""

import pytest

from contract.config import PhaseConfig
from contract.result import Contention, GpuTelemetry
from runner.measure import PhaseOutcome
from runner.stats import summarize
from runner.validity import validity

RULE = PhaseConfig(min_iterations=100, min_time_s=1.0, max_iterations=1000, max_time_s=10.0)
STEADY = summarize([1_000_000] * 200)
CLEAN = Contention(wall_s=2.0, cpu_time_s=2.0, threads=1, cpus_allowed=2.0)


def phases(outcome: PhaseOutcome) -> list[tuple[str, PhaseOutcome, PhaseConfig]]:
    return [("measurement", outcome, RULE)]


MET = PhaseOutcome([1] * 200, 2.0, "minimums")


def test_a_clean_run_has_no_flag_and_no_reason() -> None:
    flags = validity(STEADY, True, phases(MET), CLEAN, None)
    assert not (flags.noisy or flags.contended or flags.cpu_throttled or flags.stopped_early)
    assert flags.gpu_throttled is None
    assert flags.reasons == []


@pytest.mark.parametrize(
    ("outcome", "reason"),
    [
        (PhaseOutcome([1] * 50, 10.0, "max_time"), "stopped at max time with 50 of 100"),
        (PhaseOutcome([1] * 1000, 0.5, "max_iterations"), "with 0.5 of 1 s"),
    ],
)
def test_a_maximum_hit_before_the_minimums_is_stopped_early(
    outcome: PhaseOutcome, reason: str
) -> None:
    flags = validity(STEADY, True, phases(outcome), CLEAN, None)
    assert flags.stopped_early
    assert any(reason in text for text in flags.reasons), flags.reasons


def test_a_maximum_hit_after_the_minimums_is_not_early() -> None:
    outcome = PhaseOutcome([1] * 1000, 1.5, "max_iterations")
    assert not validity(STEADY, True, phases(outcome), CLEAN, None).stopped_early


@pytest.mark.parametrize(
    ("update", "reason"),
    [
        ({"run_queue_wait_s": 0.2}, "waited for a CPU 10% of the loop"),
        ({"steal_fraction": 0.08}, "stole 8%"),
        ({"cpu_time_s": 1.0}, "ran 50% of one CPU"),
        ({"threads": 4}, "4 threads on 2 CPUs"),
    ],
)
def test_contention_is_flagged_by_each_rule(update: dict[str, float], reason: str) -> None:
    flags = validity(STEADY, True, phases(MET), CLEAN.model_copy(update=update), None)
    assert flags.contended
    assert any(reason in text for text in flags.reasons), flags.reasons


def test_waiting_under_the_threshold_is_not_contention() -> None:
    measured = CLEAN.model_copy(update={"run_queue_wait_s": 0.05, "steal_fraction": 0.01})
    assert not validity(STEADY, True, phases(MET), measured, None).contended


def test_a_gpu_run_may_use_less_than_one_cpu() -> None:
    gpu = GpuTelemetry(readings=3, interval_s=0.1, device_s=1.0, wall_s=2.0)
    idle_host = CLEAN.model_copy(update={"cpu_time_s": 0.2})
    flags = validity(STEADY, True, phases(MET), idle_host, gpu)
    assert not flags.contended
    assert flags.gpu_throttled is False


def test_the_quota_throttling_the_loop_is_flagged() -> None:
    throttled = CLEAN.model_copy(update={"throttled_periods": 12, "throttled_s": 0.3})
    flags = validity(STEADY, True, phases(MET), throttled, None)
    assert flags.cpu_throttled
    assert "throttled the process in 12 periods, 15% of the loop" in flags.reasons[0]


def test_gpu_clock_slowdowns_are_flagged_and_unreadable_nvml_is_unknown() -> None:
    slowed = GpuTelemetry(
        readings=5, interval_s=0.1, device_s=1, wall_s=1, throttle_reasons=["sw_power_cap"]
    )
    flags = validity(STEADY, True, phases(MET), CLEAN, slowed)
    assert flags.gpu_throttled
    assert "sw_power_cap" in flags.reasons[0]
    unreadable = GpuTelemetry(
        readings=0, interval_s=0.1, device_s=1, wall_s=1, unavailable="no libnvidia-ml"
    )
    assert validity(STEADY, True, phases(MET), CLEAN, unreadable).gpu_throttled is None


def test_noise_gives_its_reason() -> None:
    noisy = summarize([1_000_000, 1_000_000, 2_000_000, 2_000_000])
    flags = validity(noisy, True, phases(MET), CLEAN, None)
    assert flags.noisy
    assert flags.reasons[0].startswith("IQR is")
