"""The stopping rules of warmup and the timed loop, driven by a fake clock: both minimums
must be met, either maximum stops the loop."""

import pytest

from contract.config import PhaseConfig, Tail
from contract.result import Contention
from runner.measure import run_phase
from runner.stats import reliable_percentiles, summarize
from runner.validity import validity


class FakeClock:
    """Advances by `step_ns` per iteration (the step advances it, as real work would)."""

    def __init__(self, step_ns: int) -> None:
        self.now = 0
        self.step_ns = step_ns

    def __call__(self) -> int:
        return self.now

    def step(self) -> int:
        self.now += self.step_ns
        return self.step_ns


def rule(
    min_iterations: int, min_time_s: float, max_iterations: int, max_time_s: float
) -> PhaseConfig:
    return PhaseConfig(
        min_iterations=min_iterations,
        min_time_s=min_time_s,
        max_iterations=max_iterations,
        max_time_s=max_time_s,
    )


def test_count_alone_does_not_stop_before_the_minimum_time() -> None:
    clock = FakeClock(step_ns=10_000_000)  # 10 ms per iteration
    outcome = run_phase(clock.step, rule(5, 1.0, 10_000, 60.0), clock=clock)
    assert (len(outcome.durations_ns), outcome.stopped_by) == (100, "minimums")


def test_time_alone_does_not_stop_before_the_minimum_count() -> None:
    clock = FakeClock(step_ns=2_000_000_000)  # 2 s per iteration
    outcome = run_phase(clock.step, rule(5, 1.0, 10_000, 60.0), clock=clock)
    assert (len(outcome.durations_ns), outcome.stopped_by) == (5, "minimums")


def test_max_iterations_stops_even_when_minimum_time_is_unmet() -> None:
    clock = FakeClock(step_ns=1_000)
    outcome = run_phase(clock.step, rule(5, 10.0, 50, 60.0), clock=clock)
    assert (len(outcome.durations_ns), outcome.stopped_by) == (50, "max_iterations")


def test_max_time_stops_even_when_minimum_count_is_unmet() -> None:
    clock = FakeClock(step_ns=1_000_000_000)
    outcome = run_phase(clock.step, rule(1000, 0.0, 10_000, 3.0), clock=clock)
    assert (len(outcome.durations_ns), outcome.stopped_by) == (3, "max_time")
    assert outcome.elapsed_s == pytest.approx(3.0)


def test_a_phase_with_zero_minimums_runs_no_iteration() -> None:
    clock = FakeClock(step_ns=1_000)
    assert run_phase(clock.step, rule(0, 0.0, 10, 1.0), clock=clock).durations_ns == []


def test_at_least_forces_iterations_even_past_max_time() -> None:
    clock = FakeClock(step_ns=5_000_000_000)
    outcome = run_phase(clock.step, rule(0, 0.0, 10, 1.0), at_least=1, clock=clock)
    assert len(outcome.durations_ns) == 1


def test_durations_are_what_each_step_returned() -> None:
    durations = iter([5, 7, 11])
    clock = FakeClock(step_ns=0)
    outcome = run_phase(lambda: next(durations), rule(3, 0.0, 3, 1.0), clock=clock)
    assert outcome.durations_ns == [5, 7, 11]


@pytest.mark.parametrize(
    ("tail", "iterations"), [("p90", 100), ("p95", 200), ("p99", 1000), ("p99.9", 10_000)]
)
def test_a_tail_runs_on_until_ten_iterations_lie_beyond_it(tail: Tail, iterations: int) -> None:
    clock = FakeClock(step_ns=10_000_000)
    asked = rule(5, 0.1, 20_000, 600.0).model_copy(update={"tail": tail})
    outcome = run_phase(clock.step, asked, clock=clock)
    assert (len(outcome.durations_ns), outcome.stopped_by) == (iterations, "minimums")
    assert tail in reliable_percentiles(len(outcome.durations_ns))
    assert tail not in reliable_percentiles(len(outcome.durations_ns) - 1)


def test_a_maximum_before_the_tail_is_reliable_is_stopped_early_and_says_why() -> None:
    clock = FakeClock(step_ns=10_000_000)
    asked = rule(5, 0.1, 10_000, 3.0).model_copy(update={"tail": "p99"})
    outcome = run_phase(clock.step, asked, clock=clock)
    assert (len(outcome.durations_ns), outcome.stopped_by) == (300, "max_time")
    stats = summarize(outcome.durations_ns)
    clean = Contention(wall_s=3.0, cpu_time_s=3.0, threads=1, cpus_allowed=2.0)
    flags = validity(stats, True, [("measurement", outcome, asked)], clean, None)
    assert flags.stopped_early
    assert flags.reasons == [
        "measurement stopped at max time with 300 of 1000 iterations (for a reliable p99)"
    ]
