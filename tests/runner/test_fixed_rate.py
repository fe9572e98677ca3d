"""The fixed-rate scenario (runner/fixed_rate.py): its schedule, queueing and miss counting
driven by a fake clock (timing-independent), and miss counting exact through the runner
itself with the test hook's injected delays."""

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from contract.config import PhaseConfig, ScenarioConfig
from contract.errors import ExitCode
from contract.proportions import wilson_interval
from contract.result import OkResult
from runner.errors import ConfigError
from runner.fixed_rate import (
    INJECT_ENV,
    SPIN_S,
    FixedRateOutcome,
    clock_contention,
    injected_delays,
    issue_errors_ms,
    longest_run,
    open_loop,
    run_fixed_rate,
    summarize,
)
from tests.runner.conftest import MakeConfig
from tests.runner.test_main import run_main, write_config

MS = 1_000_000


class FakeClock:
    """Nanoseconds that move only when read (1 µs per read, so a spin ends), when slept
    (by the time asked plus `oversleep_ns`, a late timer) and when a query is served (by
    its service time)."""

    def __init__(self, service_ns: Sequence[int] | int, oversleep_ns: int = 0) -> None:
        self.now = 0
        self.served = 0
        self.service_ns = service_ns
        self.oversleep_ns = oversleep_ns

    def __call__(self) -> int:
        self.now += 1_000
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += round(seconds * 1e9) + self.oversleep_ns

    def step(self) -> int:
        service = self.service_ns
        took = service if isinstance(service, int) else service[self.served]
        self.served += 1
        self.now += took
        return took


def rule(queries: int, max_time_s: float = 1e6, tail: str | None = None) -> PhaseConfig:
    return PhaseConfig.model_validate(
        {
            "min_iterations": queries,
            "min_time_s": 0.0,
            "max_iterations": max(queries, 1) if tail is None else 10**6,
            "max_time_s": max_time_s,
            "tail": tail,
        }
    )


def run(
    clock: FakeClock,
    queries: int,
    rate_hz: float,
    deadline_s: float,
    delays: Mapping[int, float] | None = None,
) -> FixedRateOutcome:
    scenario = ScenarioConfig(rate_hz=rate_hz, deadline_s=deadline_s)
    return run_fixed_rate(
        clock.step, rule(queries), scenario, clock=clock, sleep=clock.sleep, delays=delays
    )


def test_arrivals_keep_the_schedule_when_the_model_falls_behind() -> None:
    # 30 ms of work every 20 ms: every query after the first queues behind the one before.
    outcome = run(FakeClock(30 * MS), queries=10, rate_hz=50, deadline_s=0.02)
    assert [q.scheduled_ns for q in outcome.queries] == [k * 20 * MS for k in range(10)]
    for before, after in zip(outcome.queries, outcome.queries[1:], strict=False):
        # Issued the moment the one before completed, not a period after it.
        assert 0 < after.issued_ns - before.completed_ns <= 5_000
    # Latency from the scheduled arrival: the queueing counts, growing 10 ms a query.
    latencies = [q.latency_ns / MS for q in outcome.queries]
    assert latencies == pytest.approx([30 + 10 * k for k in range(10)], abs=0.05)
    assert outcome.missed == [True] * 10
    assert outcome.idle == [True] + [False] * 9
    assert summarize(outcome).issue_error_queries == 1


def test_a_model_that_keeps_up_is_issued_on_the_clock_and_misses_nothing() -> None:
    outcome = run(FakeClock(3 * MS), queries=50, rate_hz=100, deadline_s=0.01)
    scenario = summarize(outcome)
    assert (scenario.misses, scenario.miss_rate, scenario.longest_miss_run) == (0, 0.0, 0)
    assert all(outcome.idle) and scenario.issue_error_queries == 50
    assert max(issue_errors_ms(outcome)) < 0.01
    # Completions 10 ms apart, to within the fake clock's reads.
    assert scenario.jitter_ms < 0.01
    assert clock_contention(scenario) == []


def _expected_misses(
    service_ns: int, period_ns: int, deadline_ns: int, delays: Mapping[int, float], count: int
) -> list[int]:
    """A single-server queue worked by hand: which queries complete after their deadline."""
    missed, free_at = [], 0
    for k in range(count):
        arrival = k * period_ns
        free_at = max(arrival, free_at) + round(delays.get(k, 0) * 1e9) + service_ns
        if free_at - arrival > deadline_ns:
            missed.append(k)
    return missed


@pytest.mark.parametrize(
    "delays",
    [
        {},
        {3: 0.08},
        # 0.25 s at 10 Hz: queries 8 and 9 queue behind it and miss too; 10 catches up.
        {7: 0.25, 15: 0.06, 16: 0.06},
        # Within a millisecond of the deadline either side (the fake clock's reads add µs).
        {0: 0.0505, 19: 0.048},
    ],
)
def test_misses_are_exactly_those_the_delays_cause(delays: dict[int, float]) -> None:
    outcome = run(FakeClock(MS), queries=20, rate_hz=10, deadline_s=0.05, delays=delays)
    missed = [k for k, miss in enumerate(outcome.missed) if miss]
    assert missed == _expected_misses(MS, 100 * MS, 50 * MS, delays, 20)
    scenario = summarize(outcome)
    assert scenario.misses == len(missed)
    assert scenario.longest_miss_run == longest_run(outcome.missed)


class WaitingClock(FakeClock):
    """A FakeClock whose threads wait for a CPU: `wake_wait_ns` on each wake from a sleep
    (before the thread runs again) and `query_wait_ns` inside each query."""

    def __init__(self, service_ns: int, wake_wait_ns: int, query_wait_ns: int) -> None:
        super().__init__(service_ns)
        self.waited = 0
        self.wake_wait_ns = wake_wait_ns
        self.query_wait_ns = query_wait_ns

    def sleep(self, seconds: float) -> None:
        super().sleep(seconds)
        self.waited += self.wake_wait_ns

    def step(self) -> int:
        self.waited += self.query_wait_ns
        return super().step()

    def waits(self) -> int:
        return self.waited


def test_only_the_waits_inside_the_busy_spans_count() -> None:
    """At 100 Hz, 1 ms queries: the 3 ms each wake-up waits (absorbed by the sleep, before
    the spin margin) are the issue clock's; the 0.2 ms each query waits is counted, over the
    spin margin and the query."""
    clock = WaitingClock(MS, wake_wait_ns=3 * MS, query_wait_ns=MS // 5)
    scenario = ScenarioConfig(rate_hz=100, deadline_s=0.01)
    outcome = run_fixed_rate(
        clock.step, rule(40), scenario, clock=clock, sleep=clock.sleep, waits=clock.waits
    )
    # The first query, at t0, needs no sleep.
    assert clock.waited == 39 * 3 * MS + 40 * MS // 5
    assert outcome.busy_wait_ns == 40 * MS // 5
    # Each span: what is left of the spin margin after the fake reads, and the query.
    assert outcome.busy_ns == pytest.approx(40 * (SPIN_S * 1e9 + MS), rel=0.02)
    summary = summarize(outcome)
    # The result says both, as the rule judges them.
    assert summary.busy_run_queue_wait_s == pytest.approx(0.008)
    assert summary.busy_s == pytest.approx(outcome.busy_ns / 1e9)
    assert open_loop(summary).busy_wait_s == pytest.approx(0.008)


def test_a_loop_without_a_wait_reader_has_no_busy_wait() -> None:
    outcome = run(FakeClock(MS), queries=5, rate_hz=100, deadline_s=0.01)
    assert outcome.busy_wait_ns is None
    summary = summarize(outcome)
    assert summary.busy_run_queue_wait_s is None and open_loop(summary).busy_wait_s is None


def test_a_late_timer_flags_the_run_contended_not_the_model() -> None:
    # Every sleep wakes 2 ms late at 100 Hz: 1.5 ms past the spin margin, 15 % of the period.
    clock = FakeClock(MS, oversleep_ns=2 * MS)
    scenario = summarize(run(clock, queries=30, rate_hz=100, deadline_s=0.01))
    assert scenario.issue_error_p99_ms == pytest.approx(1.5, abs=0.01)
    assert scenario.misses == 0
    (reason,) = clock_contention(scenario)
    assert "issue clock overshot" in reason and "15%" in reason


def test_the_length_is_the_rule_in_queries_and_a_tail_raises_it() -> None:
    scenario = ScenarioConfig(rate_hz=1000, deadline_s=0.001)
    clock = FakeClock(100_000)
    asked = rule(5, tail="p99.9")
    outcome = run_fixed_rate(clock.step, asked, scenario, clock=clock, sleep=clock.sleep)
    assert (len(outcome.queries), outcome.stopped_by) == (10_000, "minimums")
    # A max_time before the tail's count stops the run early, and says so.
    clock = FakeClock(100_000)
    short = rule(5, max_time_s=2.0, tail="p99.9")
    outcome = run_fixed_rate(clock.step, short, scenario, clock=clock, sleep=clock.sleep)
    assert outcome.stopped_by == "max_time" and 1990 <= len(outcome.queries) <= 2001


def test_longest_run_counts_consecutive_misses() -> None:
    assert longest_run([]) == 0
    assert longest_run([False, True, True, False, True, True, True, False]) == 3


def test_wilson_interval_matches_its_textbook_values() -> None:
    low, high = wilson_interval(5, 100)
    assert (round(low, 4), round(high, 4)) == (0.0215, 0.1118)
    low, high = wilson_interval(0, 10_000)
    assert low == 0.0 and high == pytest.approx(3.8415 / 10_003.8415, rel=1e-4)
    with pytest.raises(ValueError, match="hits"):
        wilson_interval(3, 2)


@pytest.mark.parametrize("trials", [1, 7, 60, 1000, 10_000])
def test_wilson_interval_holds_the_share_itself_at_both_ends(trials: int) -> None:
    """Every query missed is a miss rate of 1 inside its interval, none missed 0: rounding
    alone put 60 of 60 outside (a high end of 0.9999999999999998)."""
    assert wilson_interval(trials, trials)[1] == 1.0
    assert wilson_interval(0, trials)[0] == 0.0


def test_the_test_hook_reads_its_delays_and_refuses_anything_else() -> None:
    assert injected_delays({}) == {}
    assert injected_delays({INJECT_ENV: "3:0.08, 11:0.2"}) == {3: 0.08, 11: 0.2}
    with pytest.raises(ConfigError, match=INJECT_ENV):
        injected_delays({INJECT_ENV: "3=0.08"})


def test_the_runner_counts_every_injected_miss_and_invents_none(
    capsys: pytest.CaptureFixture[str],
    make_config: MakeConfig,
    models_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`python -m runner`'s main on a real model at 10 Hz, deadline 50 ms: the injected
    delays (70 ms and more, against a model of well under a millisecond) are the only misses,
    and query 11's 120 ms delay makes no other query miss (12 is injected itself)."""
    injected = {4: 0.08, 11: 0.12, 12: 0.07}
    monkeypatch.setenv(INJECT_ENV, ",".join(f"{k}:{s}" for k, s in injected.items()))
    config = make_config().model_copy(
        update={
            "measure": PhaseConfig(
                min_iterations=20, min_time_s=0.0, max_iterations=20, max_time_s=60.0
            ),
            "scenario": ScenarioConfig(rate_hz=10, deadline_s=0.05),
        }
    )
    code, result, _ = run_main(capsys, write_config(config, tmp_path), models_dir, tmp_path)
    assert code == ExitCode.OK and isinstance(result, OkResult)
    scenario = result.scenario
    assert scenario is not None and scenario.kind == "fixed_rate"
    assert (scenario.queries, scenario.misses, scenario.miss_rate) == (20, 3, 0.15)
    assert scenario.longest_miss_run == 2
    assert scenario.deadline_ms == 50.0 and scenario.rate_hz == 10.0
    assert result.samples is not None
    latencies = result.samples.durations_ns()
    assert [k for k, ns in enumerate(latencies) if ns > 50 * MS] == sorted(injected)
    assert result.latency.count == 20
