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


@dataclass(frozen=True)
class PhaseOutcome:
    """The iterations of one loop and why it stopped."""

    durations_ns: list[int]
    elapsed_s: float
    stopped_by: StoppedBy


def run_phase(
    step: Step, rule: PhaseConfig, *, at_least: int = 0, clock: Clock = time.perf_counter_ns
) -> PhaseOutcome:
    """Call `step` until `rule` says stop; `at_least` raises the minimum count (the timed
    loop needs one iteration even when its rule asks for none)."""
    min_iterations = max(rule.least_iterations, at_least)
    durations: list[int] = []
    start = clock()
    while True:
        elapsed_s = (clock() - start) / 1e9
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
