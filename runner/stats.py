"""Summary statistics of per-iteration latencies."""

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Final

import numpy as np

from contract.config import TAIL_SAMPLES
from contract.order_stats import median_interval, median_log_se
from contract.result import LatencyStats, MedianInterval

NOISY_IQR_RATIO: Final = 0.10
"""IQR / median above this marks a measurement as noisy."""
_REPORTED: Final = ("p50", "p90", "p95", "p99", "p99.9")


def summarize(durations_ns: Sequence[int]) -> LatencyStats:
    """Latency statistics in milliseconds; percentiles interpolate linearly (numpy's default)."""
    if not durations_ns:
        raise ValueError("no iterations were timed")
    ms = np.asarray(durations_ns, dtype=np.float64) / 1e6
    p25, p50, p75, p90, p95, p99, p99_9 = np.percentile(ms, [25, 50, 75, 90, 95, 99, 99.9])
    mean = float(ms.mean())
    std = float(ms.std(ddof=1)) if ms.size > 1 else 0.0
    ordered = sorted(ms.tolist())
    low, high = median_interval(ordered)
    log_se = median_log_se(ordered)
    return LatencyStats(
        count=int(ms.size),
        mean_ms=mean,
        std_ms=std,
        cv=std / mean if mean > 0 else 0.0,
        min_ms=float(ms.min()),
        p25_ms=float(p25),
        p50_ms=float(p50),
        p75_ms=float(p75),
        p90_ms=float(p90),
        p95_ms=float(p95),
        p99_ms=float(p99),
        p99_9_ms=float(p99_9),
        max_ms=float(ms.max()),
        iqr_ms=float(p75 - p25),
        p50_interval=MedianInterval(
            low_ms=low, high_ms=high, log_se=log_se if math.isfinite(log_se) else None
        ),
    )


def noise(stats: LatencyStats) -> float:
    """IQR relative to the median."""
    return stats.iqr_ms / stats.p50_ms if stats.p50_ms > 0 else 0.0


def reliable_percentiles(count: int) -> list[str]:
    """The reported percentiles that have at least TAIL_SAMPLES samples beyond them."""
    # Exact fractions: in floats, 10,000 x (100 - 99.9) / 100 falls short of 10.
    return [
        name
        for name in _REPORTED
        if count * (1 - Fraction(name.removeprefix("p")) / 100) >= TAIL_SAMPLES
    ]
