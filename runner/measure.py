"""The stopping rule of warmup and of the timed loop (MLPerf LoadGen's): run until a minimum
number of iterations AND a minimum duration are both reached, bounded by a maximum of each."""

import time
from collections.abc import Callable
from dataclasses import dataclass

from contract.config import PhaseConfig
from contract.result import StoppedBy

Step = Callable[[], int]
"""Runs one iteration and returns its duration in nanoseconds."""
Clock = Callable[[], int]
"""Monotonic nanoseconds."""
Tick = Callable[[int, float], None]
"""Told after each iteration of a loop: how many have run, and the seconds since it began."""


@dataclass(frozen=True)
class PhaseOutcome:
    """The iterations of one loop and why it stopped."""

    durations_ns: list[int]
    elapsed_s: float
    stopped_by: StoppedBy


def run_phase(
    step: Step,
    rule: PhaseConfig,
    *,
    at_least: int = 0,
    clock: Clock = time.perf_counter_ns,
    tick: Tick | None = None,
) -> PhaseOutcome:
    """Call `step` until `rule` says stop, telling `tick` after each call; `at_least` raises
    the minimum count (the timed loop needs one iteration even when its rule asks for none)."""
    min_iterations = max(rule.least_iterations, at_least)
    durations: list[int] = []
    start = clock()
    while True:
        elapsed_s = (clock() - start) / 1e9
        if tick is not None and durations:
            tick(len(durations), elapsed_s)
        stopped_by: StoppedBy | None = None
        if len(durations) >= rule.max_iterations:
            stopped_by = "max_iterations"
        elif elapsed_s >= rule.max_time_s and len(durations) >= at_least:
            stopped_by = "max_time"
        elif len(durations) >= min_iterations and elapsed_s >= rule.min_time_s:
            stopped_by = "minimums"
        if stopped_by is not None:
            return PhaseOutcome(durations, elapsed_s, stopped_by)
        durations.append(step())


def time_left(rule: PhaseConfig, done: int, elapsed_s: float, *, at_least: int = 0) -> float:
    """About how many seconds a loop under `rule` has left after `done` iterations in
    `elapsed_s`, at the pace so far: until both minimums, unless a maximum comes first."""
    pace_s = elapsed_s / done if done else 0.0
    minimums = max(
        rule.min_time_s - elapsed_s, (max(rule.least_iterations, at_least) - done) * pace_s
    )
    maximum = min(rule.max_time_s - elapsed_s, (rule.max_iterations - done) * pace_s)
    return max(0.0, min(minimums, maximum))
