"""Each validity flag is set by its rule, with the numbers in words, and only by its rule."""

import pytest

from contract.config import PhaseConfig
from contract.result import Contention, GpuTelemetry, Validity
from runner.measure import PhaseOutcome
from runner.stats import summarize
from runner.validity import OpenLoop, run_queue_wait, validity

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


# A fixed-rate run's measured shapes: tiny-mlp at 100 Hz for 500 queries, one thread pinned to
# one CPU of this 2-core machine shared with other agents (1-minute load 9.5-10.5), 2026-12-06.
# Quiet: under SCHED_FIFO, so no other task could take its CPU.
QUIET = (Contention(wall_s=4.99, cpu_time_s=0.35, threads=1, cpus_allowed=1.0), 0.00001, 0.339)
# As pods run (SCHED_OTHER) beside the other agents: every wake-up from the sleep waited
# (1.9 ms each on average), but inside the busy spans the threads hardly waited.
WOKE_LATE = (
    Contention(wall_s=5.00, cpu_time_s=0.3, threads=1, cpus_allowed=1.0, run_queue_wait_s=0.9665),
    0.00042,
    0.2191,
)
# Beside `python -c 'while 1: pass'` pinned to the same CPU.
HOGGED = (
    Contention(wall_s=5.00, cpu_time_s=0.3, threads=1, cpus_allowed=1.0, run_queue_wait_s=2.3217),
    0.05455,
    0.2000,
)


def open_loop_flags(
    shape: tuple[Contention, float | None, float], clock_late: list[str] | None = None
) -> Validity:
    measured, busy_wait_s, busy_s = shape
    return validity(
        STEADY,
        True,
        phases(MET),
        measured,
        None,
        open_loop=OpenLoop(clock_late or [], busy_wait_s, busy_s),
    )


def test_a_fixed_rate_run_on_a_quiet_cpu_is_not_contended() -> None:
    flags = open_loop_flags(QUIET)
    assert not flags.contended and flags.reasons == []


def test_waits_while_a_fixed_rate_loop_slept_do_not_flag_it() -> None:
    """19 % of the loop's wall time waited, all of it waking from sleeps: the closed loop's
    rule would flag it; the fixed-rate rule judges only the 0.19 % inside the busy spans."""
    measured = WOKE_LATE[0]
    assert run_queue_wait(measured.run_queue_wait_s, measured.wall_s, "the loop") is not None
    flags = open_loop_flags(WOKE_LATE)
    assert not flags.contended and flags.reasons == []


def test_a_late_clock_still_flags_the_fixed_rate_run() -> None:
    # The same run's wake-ups pushed its issue clock's p99 13.4 ms past the arrivals.
    late = ["the issue clock overshot: p99 13.4 ms late"]
    flags = open_loop_flags(WOKE_LATE, clock_late=late)
    assert flags.contended and flags.reasons == late


def test_waits_inside_the_busy_spans_flag_a_fixed_rate_run_beside_a_hog() -> None:
    flags = open_loop_flags(HOGGED)
    assert flags.contended
    (reason,) = flags.reasons
    assert reason.startswith("threads waited for a CPU 27% of the busy spans"), reason
    assert "200 ms" in reason


def test_a_fixed_rate_loop_keeps_the_rules_any_loop_shares_but_not_the_cpu_share() -> None:
    measured, busy_wait_s, busy_s = QUIET
    shared = measured.model_copy(update={"threads": 2, "steal_fraction": 0.08})
    flags = open_loop_flags((shared, busy_wait_s, busy_s))
    assert flags.reasons == [
        "2 threads on 1 CPUs the pod may use",
        "the hypervisor stole 8% of the CPUs' time",
    ]
    # 7 % of one CPU: the closed loop's rule would flag it, a loop that sleeps it must not.
    assert measured.cpu_time_s / measured.wall_s < 0.9
    assert open_loop_flags((measured, None, busy_s)).reasons == []


@pytest.mark.parametrize(
    ("wait_s", "busy_s", "flagged"),
    [(0.05, 1.0, False), (0.0501, 1.0, True), (None, 1.0, False), (1.0, 0.0, False)],
)
def test_the_run_queue_rule_is_the_share_of_the_time_with_work(
    wait_s: float | None, busy_s: float, flagged: bool
) -> None:
    assert (run_queue_wait(wait_s, busy_s, "x") is not None) == flagged
