"""The fixed-rate scenario: queries issued on a clock, open loop, one in flight.

Query k arrives at t0 + k / rate_hz whatever happened before it: a query that finds the
model still busy waits (queues) and is issued the moment the one before it completes; its
latency is measured from its scheduled arrival, so the wait counts, and a late query never
moves the next arrival. It misses when it completes later than the deadline after its
arrival. The loop calls the same per-query callable the closed loop times (`Step`), and
stamps issue and completion with its own clock.
"""

import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np

from contract.config import PhaseConfig, ScenarioConfig
from contract.proportions import wilson_interval
from contract.result import Scenario, StoppedBy
from runner.errors import ConfigError
from runner.measure import Clock, PhaseOutcome, Step, Tick
from runner.validity import OpenLoop

SPIN_S: Final = 0.0005
"""The loop sleeps until this long before an arrival and spins the rest: a sleep wakes late
by tens of microseconds on an idle Linux machine, far more under load."""
CONTENDED_ISSUE_SHARE: Final = 0.05
"""A p99 issue error over 5 % of the period: the machine could not keep the clock (its timer
or its scheduler was late), which is no fault of the model: the run is flagged contended."""
INJECT_ENV: Final = "BENCHFLEET_TEST_DELAYS"
"""Tests only (synth never sets it): `<query>:<seconds>,...` adds a known sleep before the
step of each listed query, so a test knows exactly which queries must miss."""

Sleep = Callable[[float], None]
WaitReader = Callable[[], int]
"""The process's threads' summed run-queue wait so far, in nanoseconds
(runner.contention.ThreadWaits.read)."""


@dataclass(frozen=True)
class Query:
    """One query's times, in nanoseconds since the loop's t0."""

    scheduled_ns: int
    issued_ns: int
    completed_ns: int

    @property
    def latency_ns(self) -> int:
        """From its scheduled arrival to its completion: queueing and issue error count."""
        return self.completed_ns - self.scheduled_ns


@dataclass(frozen=True)
class FixedRateOutcome:
    """A fixed-rate loop's queries and why it stopped."""

    scenario: ScenarioConfig
    queries: list[Query]
    elapsed_s: float
    stopped_by: StoppedBy
    idle: list[bool] = field(default_factory=list)
    """Per query: it found the model idle at its arrival (its issue error is the clock's)."""
    busy_wait_ns: int | None = None
    """The threads' run-queue wait inside the busy spans (WaitReader); None: not read."""
    busy_ns: int = 0
    """The busy spans' time: each from the loop's wake before an arrival (or, queued, the
    completion before) through the final spin and the query to its completion."""

    @property
    def period_ns(self) -> float:
        return 1e9 / self.scenario.rate_hz

    @property
    def latencies_ns(self) -> list[int]:
        return [query.latency_ns for query in self.queries]

    @property
    def missed(self) -> list[bool]:
        deadline_ns = self.scenario.deadline_s * 1e9
        return [latency > deadline_ns for latency in self.latencies_ns]

    def as_phase(self) -> PhaseOutcome:
        """The loop as the closed loop's outcome: each query's latency its duration, which
        the statistics, samples and validity flags read."""
        return PhaseOutcome(self.latencies_ns, self.elapsed_s, self.stopped_by)


def injected_delays(environ: Mapping[str, str] = os.environ) -> dict[int, float]:
    """The test hook's delays (INJECT_ENV), by query index; raises ConfigError when the
    variable is set to anything but `<query>:<seconds>` pairs."""
    text = environ.get(INJECT_ENV, "").strip()
    if not text:
        return {}
    delays = {}
    for pair in text.split(","):
        index, _, seconds = pair.partition(":")
        try:
            delays[int(index)] = float(seconds)
        except ValueError:
            raise ConfigError(f"{INJECT_ENV}: {pair!r} is not <query>:<seconds>") from None
    return delays


def _arrival_ns(index: int, rate_hz: float) -> int:
    # From the index, never by adding periods, so rounding never accumulates into drift.
    return round(index * 1e9 / rate_hz)


def _stop(rule: PhaseConfig, rate_hz: float, issued: int, elapsed_s: float) -> StoppedBy | None:
    """The closed loop's rule counted in queries: the minimums by the arrivals' schedule
    (so a run's length in queries is known in advance), the maximum time by the wall clock
    (so a model that falls behind cannot queue for ever)."""
    if issued >= rule.max_iterations:
        return "max_iterations"
    if issued >= 1 and elapsed_s >= rule.max_time_s:
        return "max_time"
    if issued >= max(rule.least_iterations, 1) and issued / rate_hz >= rule.min_time_s:
        return "minimums"
    return None


def _sleep_until(target_ns: int, clock: Clock, sleep: Sleep) -> None:
    spin_ns = SPIN_S * 1e9
    while (left := target_ns - clock()) > spin_ns:
        sleep((left - spin_ns) / 1e9)


def _spin_until(target_ns: int, clock: Clock) -> int:
    """The first reading at or past `target_ns`: the issue's own stamp."""
    while (now := clock()) < target_ns:
        pass
    return now


def run_fixed_rate(
    step: Step,
    rule: PhaseConfig,
    scenario: ScenarioConfig,
    *,
    clock: Clock = time.perf_counter_ns,
    sleep: Sleep = time.sleep,
    delays: Mapping[int, float] | None = None,
    tick: Tick | None = None,
    waits: WaitReader | None = None,
) -> FixedRateOutcome:
    """Issue queries to `step` at `scenario`'s rate until `rule` says stop; `delays` (the
    test hook) sleeps so many seconds before the listed queries' steps; `waits`, where
    given, is read around each busy span (FixedRateOutcome.busy_ns)."""
    delays = delays or {}
    queries: list[Query] = []
    idle: list[bool] = []
    busy_wait = busy = 0
    start = clock()
    while True:
        elapsed_s = (clock() - start) / 1e9
        if tick is not None and queries:
            tick(len(queries), elapsed_s)
        if (stopped_by := _stop(rule, scenario.rate_hz, len(queries), elapsed_s)) is not None:
            waited = busy_wait if waits is not None else None
            return FixedRateOutcome(scenario, queries, elapsed_s, stopped_by, idle, waited, busy)
        scheduled = _arrival_ns(len(queries), scenario.rate_hz)
        idle.append(not queries or queries[-1].completed_ns <= scheduled)
        _sleep_until(start + scheduled, clock, sleep)
        # Read after the sleep: a wake-up's wait ends before the thread runs, so the spin
        # margin absorbs it; what the spin or the query waits delays the query.
        woke_wait, woke = (waits() if waits else 0), clock()
        issued = _spin_until(start + scheduled, clock) - start
        if (delay := delays.get(len(queries))) is not None:
            sleep(delay)
        step()
        completed = clock()
        queries.append(Query(scheduled, issued, completed - start))
        busy_wait += (waits() if waits else 0) - woke_wait
        busy += completed - woke


def longest_run(flags: Sequence[bool]) -> int:
    """The most consecutive true values."""
    longest = current = 0
    for flag in flags:
        current = current + 1 if flag else 0
        longest = max(longest, current)
    return longest


def jitter_ms(outcome: FixedRateOutcome) -> float:
    """The p99 of |completion_k - completion_(k-1) - period|: how far the outputs' spacing
    strays from the period (0 with a single query)."""
    completed = np.asarray([q.completed_ns for q in outcome.queries], dtype=np.float64)
    if completed.size < 2:
        return 0.0
    strays = np.abs(np.diff(completed) - outcome.period_ns) / 1e6
    return float(np.percentile(strays, 99))


def issue_errors_ms(outcome: FixedRateOutcome) -> list[float]:
    """Actual issue less scheduled arrival of the queries that found the model idle: the
    clock's own error (a queued query's wait is latency, not the clock's)."""
    return [
        (query.issued_ns - query.scheduled_ns) / 1e6
        for query, was_idle in zip(outcome.queries, outcome.idle, strict=True)
        if was_idle
    ]


def summarize(outcome: FixedRateOutcome) -> Scenario:
    """The run's scenario fields of the result."""
    missed = outcome.missed
    count = len(missed)
    misses = sum(missed)
    low, high = wilson_interval(misses, count)
    # The first query always found the model idle, so there is at least one error.
    errors = np.asarray(issue_errors_ms(outcome), dtype=np.float64)
    return Scenario(
        kind=outcome.scenario.kind,
        rate_hz=outcome.scenario.rate_hz,
        deadline_ms=outcome.scenario.deadline_s * 1e3,
        queries=count,
        misses=misses,
        miss_rate=misses / count,
        miss_rate_low=low,
        miss_rate_high=high,
        longest_miss_run=longest_run(missed),
        jitter_ms=jitter_ms(outcome),
        issue_error_p99_ms=max(0.0, float(np.percentile(errors, 99))),
        issue_error_max_ms=max(0.0, float(errors.max())),
        issue_error_queries=int(errors.size),
        busy_s=outcome.busy_ns / 1e9,
        busy_run_queue_wait_s=(
            None if outcome.busy_wait_ns is None else outcome.busy_wait_ns / 1e9
        ),
    )


def open_loop(scenario: Scenario) -> OpenLoop:
    """What the run's contention is judged by (runner.validity.OpenLoop), from its
    scenario's fields."""
    return OpenLoop(
        clock_late=clock_contention(scenario),
        busy_wait_s=scenario.busy_run_queue_wait_s,
        busy_s=scenario.busy_s or 0.0,
    )


def clock_contention(scenario: Scenario) -> list[str]:
    """Why the run is contended where the issue clock overshot (CONTENDED_ISSUE_SHARE):
    the machine, not the model, was late."""
    period_ms = 1e3 / scenario.rate_hz
    share = scenario.issue_error_p99_ms / period_ms
    if math.isfinite(share) and share > CONTENDED_ISSUE_SHARE:
        return [
            f"the issue clock overshot: p99 {scenario.issue_error_p99_ms:.3g} ms late, "
            f"{share:.0%} of the {period_ms:.3g} ms period (over "
            f"{CONTENDED_ISSUE_SHARE:.0%}): the machine could not keep the rate's clock"
        ]
    return []
