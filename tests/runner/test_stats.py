"""Latency statistics and the validity flags derived from them."""

import numpy as np
import pytest

from runner.stats import noise, reliable_percentiles, summarize


def test_percentiles_interpolate_like_numpy() -> None:
    milliseconds = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 100.0]
    stats = summarize([int(ms * 1e6) for ms in milliseconds])
    expected = np.percentile(milliseconds, [25, 50, 99, 99.9])
    measured = (stats.p25_ms, stats.p50_ms, stats.p99_ms, stats.p99_9_ms)
    assert measured == pytest.approx(tuple(expected))
    assert (stats.min_ms, stats.max_ms, stats.count) == (1.0, 100.0, 10)


def test_std_is_the_sample_standard_deviation() -> None:
    stats = summarize([1_000_000, 3_000_000])
    assert stats.std_ms == pytest.approx(np.sqrt(2.0))
    assert stats.cv == pytest.approx(np.sqrt(2.0) / 2.0)


def test_a_single_iteration_has_zero_spread() -> None:
    stats = summarize([2_000_000])
    assert (stats.std_ms, stats.iqr_ms, stats.p99_ms) == (0.0, 0.0, 2.0)


def test_no_iterations_is_an_error() -> None:
    with pytest.raises(ValueError, match="no iterations"):
        summarize([])


def test_noise_is_iqr_over_median() -> None:
    stats = summarize([int(x * 1e6) for x in (10, 10, 10, 12, 14)])
    assert noise(stats) == pytest.approx(stats.iqr_ms / stats.p50_ms)


@pytest.mark.parametrize(
    ("count", "reliable"),
    [
        (50, ["p50"]),
        (100, ["p50", "p90"]),
        (200, ["p50", "p90", "p95"]),
        (1000, ["p50", "p90", "p95", "p99"]),
        (9999, ["p50", "p90", "p95", "p99"]),
        (10_000, ["p50", "p90", "p95", "p99", "p99.9"]),
    ],
)
def test_a_percentile_is_reliable_with_ten_samples_beyond_it(
    count: int, reliable: list[str]
) -> None:
    assert reliable_percentiles(count) == reliable
