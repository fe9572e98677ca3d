"""Intervals of a median and of a ratio of medians: they cover what they claim on data shaped
like timings, and they never leave the positive axis."""

import math
import random

import pytest

from contract.order_stats import median_interval, quantile_interval
from report.intervals import from_samples, from_summary, ratio


def timings(rng: random.Random, median: float, count: int) -> list[float]:
    # Right-skewed like iteration times: a log-normal body and an exponential tail.
    return [median * rng.lognormvariate(0, 0.1) + rng.expovariate(50) for _ in range(count)]


def test_the_median_interval_is_the_sign_tests() -> None:
    values = list(range(1, 101))
    assert median_interval(values) == (40, 61)


def test_a_tail_quantiles_interval_covers_it_about_95_times_in_a_hundred() -> None:
    # Of 10,000 queries, p99.9 lies between the 9,983rd and the 9,998th order statistic.
    assert quantile_interval(list(range(1, 10_001)), 0.999) == (9_983, 9_998)
    rng = random.Random(7)
    true_p99_9 = -math.log(0.001) / 50  # of the exponential part: 1 ms plus a 20 us mean tail
    covered = 0
    for _ in range(300):
        values = [1 + rng.expovariate(50) for _ in range(10_000)]
        low, high = quantile_interval(values, 0.999)
        covered += low <= 1 + true_p99_9 <= high
    assert 0.9 <= covered / 300 <= 0.99


@pytest.mark.parametrize("count", [20, 400])
def test_two_runs_of_one_setup_are_told_apart_about_five_times_in_a_hundred(count: int) -> None:
    rng = random.Random(count)
    trials = 400
    apart = sum(
        ratio(
            from_samples(timings(rng, 1.0, count)), from_samples(timings(rng, 1.0, count))
        ).excludes_one
        for _ in range(trials)
    )
    assert 0.01 * trials <= apart <= 0.10 * trials


def test_a_real_difference_is_found_and_its_interval_holds_the_true_ratio() -> None:
    rng = random.Random(7)
    slow, fast = timings(rng, 2.0, 300), timings(rng, 1.0, 300)
    found = ratio(from_samples(fast), from_samples(slow))
    assert found.excludes_one
    # Medians of the shifted body; the tail moves the true ratio a little off 0.5.
    assert found.low < 0.52 and found.high > 0.48


def test_an_interval_without_samples_stays_positive_however_wide() -> None:
    estimate = from_summary(median=0.1, iqr=1.0, count=4)
    assert 0 < estimate.low < 0.1 < estimate.high
    assert estimate.method == "IQR approximation"


def test_zero_durations_give_an_unbounded_ratio_not_a_crash() -> None:
    estimate = from_samples([0.0] * 10 + [1.0] * 10)
    assert math.isinf(estimate.log_se)
    unbounded = ratio(estimate, from_samples([1.0, 1.1, 1.2]))
    assert (unbounded.low, unbounded.high) == (0.0, math.inf)
    assert not unbounded.excludes_one


def test_identical_samples_have_no_spread() -> None:
    estimate = from_samples([2.0] * 50)
    assert (estimate.median, estimate.low, estimate.high, estimate.log_se) == (2.0, 2.0, 2.0, 0.0)
