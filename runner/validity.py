"""Whether a run's numbers can be trusted as they stand: each flag with the rule that sets it
and the measured numbers in words, so a report can say why it will not decide."""

from typing import Final

from contract.config import PhaseConfig
from contract.result import Contention, GpuTelemetry, LatencyStats, Validity
from runner.measure import PhaseOutcome
from runner.stats import NOISY_IQR_RATIO, noise, reliable_percentiles

RUN_QUEUE_WAIT_SHARE: Final = 0.05
"""Threads runnable but waiting for a CPU for over 5 % of the loop: something else ran."""
STEAL_SHARE: Final = 0.05
"""The hypervisor gave over 5 % of the CPUs' time to other guests."""
ONE_CPU_SHARE: Final = 0.9
"""A CPU loop never sleeps: its main thread alone should hold one CPU. Under 90 % of one CPU
means the process was preempted."""
THROTTLED_SHARE: Final = 0.01
"""The cgroup quota held the process back for over 1 % of the loop."""


def validity(
    stats: LatencyStats,
    output_finite: bool,
    phases: list[tuple[str, PhaseOutcome, PhaseConfig]],
    contention: Contention,
    gpu: GpuTelemetry | None,
    *,
    clock_late: list[str] | None = None,
) -> Validity:
    """The flags of one run; `gpu` is None for a CPU run; `clock_late` is a fixed-rate
    run's (runner.fixed_rate.clock_contention), None for the closed loop."""
    # A fixed-rate loop sleeps between arrivals: its share of one CPU says nothing.
    sleeps = clock_late is not None
    contended = [*_contention(contention, on_cpu=gpu is None and not sleeps), *(clock_late or [])]
    throttled = _throttling(contention)
    slowdowns = (
        [f"the GPU slowed its clocks: {', '.join(gpu.throttle_reasons)}"]
        if gpu and gpu.throttle_reasons
        else []
    )
    early = [reason for name, outcome, rule in phases if (reason := _early(name, outcome, rule))]
    measured_noise = noise(stats)
    noisy = (
        [f"IQR is {measured_noise:.0%} of the median (over {NOISY_IQR_RATIO:.0%})"]
        if measured_noise > NOISY_IQR_RATIO
        else []
    )
    return Validity(
        noisy=bool(noisy),
        noise=measured_noise,
        reliable_percentiles=reliable_percentiles(stats.count),
        output_finite=output_finite,
        contended=bool(contended),
        cpu_throttled=bool(throttled),
        gpu_throttled=bool(slowdowns) if gpu is not None and gpu.unavailable is None else None,
        stopped_early=bool(early),
        reasons=[*noisy, *contended, *throttled, *slowdowns, *early],
    )


def _contention(measured: Contention, *, on_cpu: bool) -> list[str]:
    reasons = []
    wall = measured.wall_s
    if measured.threads > measured.cpus_allowed:
        reasons.append(
            f"{measured.threads} threads on {measured.cpus_allowed:g} CPUs the pod may use"
        )
    if measured.run_queue_wait_s is not None and wall > 0:
        share = measured.run_queue_wait_s / wall
        if share > RUN_QUEUE_WAIT_SHARE:
            reasons.append(f"threads waited for a CPU {share:.0%} of the loop")
    if measured.steal_fraction is not None and measured.steal_fraction > STEAL_SHARE:
        reasons.append(f"the hypervisor stole {measured.steal_fraction:.0%} of the CPUs' time")
    if on_cpu and wall > 0 and measured.cpu_time_s / wall < ONE_CPU_SHARE:
        reasons.append(
            f"the process ran {measured.cpu_time_s / wall:.0%} of one CPU during a loop "
            "that never sleeps"
        )
    return reasons


def _throttling(measured: Contention) -> list[str]:
    if measured.throttled_s is None or measured.wall_s <= 0:
        return []
    share = measured.throttled_s / measured.wall_s
    if share <= THROTTLED_SHARE:
        return []
    return [
        f"the CPU quota throttled the process in {measured.throttled_periods} periods, "
        f"{share:.0%} of the loop"
    ]


def _early(name: str, outcome: PhaseOutcome, rule: PhaseConfig) -> str | None:
    if outcome.stopped_by == "minimums":
        return None
    short = []
    if len(outcome.durations_ns) < rule.least_iterations:
        wanted = (
            f" (for a reliable {rule.tail})" if rule.least_iterations > rule.min_iterations else ""
        )
        short.append(f"{len(outcome.durations_ns)} of {rule.least_iterations} iterations{wanted}")
    if outcome.elapsed_s < rule.min_time_s:
        short.append(f"{outcome.elapsed_s:.3g} of {rule.min_time_s:g} s")
    if not short:
        return None
    return f"{name} stopped at {outcome.stopped_by.replace('_', ' ')} with {', '.join(short)}"
