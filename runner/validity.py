"""Whether a run's numbers can be trusted as they stand: each flag with the rule that sets it
and the measured numbers in words, so a report can say why it will not decide."""

from dataclasses import dataclass
from typing import Final

from contract.config import PhaseConfig
from contract.result import Contention, GpuTelemetry, LatencyStats, Validity
from runner.measure import PhaseOutcome
from runner.stats import NOISY_IQR_RATIO, noise, reliable_percentiles

RUN_QUEUE_WAIT_SHARE: Final = 0.05
"""Threads runnable but waiting for a CPU for over 5 % of the time they had work: something
else ran. The closed loop always has work; a fixed-rate loop only in its busy spans."""
STEAL_SHARE: Final = 0.05
"""The hypervisor gave over 5 % of the CPUs' time to other guests."""
ONE_CPU_SHARE: Final = 0.9
"""A CPU loop never sleeps: its main thread alone should hold one CPU. Under 90 % of one CPU
means the process was preempted."""
THROTTLED_SHARE: Final = 0.01
"""The cgroup quota held the process back for over 1 % of the loop."""


@dataclass(frozen=True)
class OpenLoop:
    """What a fixed-rate run's contention is judged by, as its loop sleeps between queries:
    the whole loop's waits and CPU share mean nothing there (runner.fixed_rate.open_loop)."""

    clock_late: list[str]
    """Why the issue clock overshot (runner.fixed_rate.clock_contention): the waits outside
    the busy spans that mattered, as they delayed an arrival."""
    busy_wait_s: float | None
    """The threads' run-queue wait inside the busy spans (the final spin before each
    arrival, the query); None where the kernel keeps no schedstat."""
    busy_s: float


def validity(
    stats: LatencyStats,
    output_finite: bool,
    phases: list[tuple[str, PhaseOutcome, PhaseConfig]],
    contention: Contention,
    gpu: GpuTelemetry | None,
    *,
    open_loop: OpenLoop | None = None,
) -> Validity:
    """The flags of one run; `gpu` is None for a CPU run; `open_loop` is a fixed-rate
    run's, None for the closed loop."""
    contended = (
        _contention(contention, on_cpu=gpu is None)
        if open_loop is None
        else _open_loop_contention(contention, open_loop)
    )
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


def run_queue_wait(wait_s: float | None, busy_s: float, span: str) -> str | None:
    """Why the run is contended where its threads waited for a CPU over
    RUN_QUEUE_WAIT_SHARE of `busy_s`, the time they had work (`span` names it); None: they
    did not, or the kernel keeps no schedstat (`wait_s` None)."""
    if wait_s is None or busy_s <= 0:
        return None
    share = wait_s / busy_s
    if share <= RUN_QUEUE_WAIT_SHARE:
        return None
    return f"threads waited for a CPU {share:.0%} of {span}"


def _contention(measured: Contention, *, on_cpu: bool) -> list[str]:
    wall = measured.wall_s
    reasons = _machine_contention(measured)
    if waited := run_queue_wait(measured.run_queue_wait_s, wall, "the loop"):
        reasons.append(waited)
    if on_cpu and wall > 0 and measured.cpu_time_s / wall < ONE_CPU_SHARE:
        reasons.append(
            f"the process ran {measured.cpu_time_s / wall:.0%} of one CPU during a loop "
            "that never sleeps"
        )
    return reasons


def _open_loop_contention(measured: Contention, open_loop: OpenLoop) -> list[str]:
    """A fixed-rate loop's: its waits inside the busy spans over their time; a wait while it
    slept is judged by the issue clock, if it delayed an arrival at all; its share of one
    CPU says nothing, as it sleeps."""
    reasons = _machine_contention(measured)
    busy_ms = open_loop.busy_s * 1e3
    span = f"the busy spans (the final spin before each arrival and the query, {busy_ms:.4g} ms)"
    if waited := run_queue_wait(open_loop.busy_wait_s, open_loop.busy_s, span):
        reasons.append(waited)
    return [*reasons, *open_loop.clock_late]


def _machine_contention(measured: Contention) -> list[str]:
    """The rules any loop shares: more threads than CPUs, the hypervisor's steal."""
    reasons = []
    if measured.threads > measured.cpus_allowed:
        reasons.append(
            f"{measured.threads} threads on {measured.cpus_allowed:g} CPUs the pod may use"
        )
    if measured.steal_fraction is not None and measured.steal_fraction > STEAL_SHARE:
        reasons.append(f"the hypervisor stole {measured.steal_fraction:.0%} of the CPUs' time")
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
