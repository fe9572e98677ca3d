"""How sure a median latency is, and a ratio of two: distribution-free intervals from the
per-iteration samples, and an approximation from the summary for results that carry none.

Timed iterations are not independent draws (caches, clocks, neighbours drift together), so
every interval here is a lower bound on the uncertainty; the runner's validity flags say when
the drift was large enough to distrust a run altogether.
"""

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from contract.order_stats import Z_95, median_interval, median_log_se
from contract.result import MedianInterval

_IQR_TO_SIGMA: Final = 1.349
"""IQR of a normal distribution in standard deviations."""
_MEDIAN_EFFICIENCY: Final = math.sqrt(math.pi / 2)
"""se(median) = sqrt(pi/2) sigma / sqrt(n) for normal data."""

Method = Literal["order statistics", "IQR approximation"]


@dataclass(frozen=True)
class MedianEstimate:
    """A median with its 95 % confidence interval and the standard error of its logarithm,
    which is what ratios of medians combine."""

    median: float
    low: float
    high: float
    log_se: float
    method: Method

    def scaled(self, factor: float) -> "MedianEstimate":
        """The same estimate in other units (per sample instead of per batch)."""
        return MedianEstimate(
            self.median * factor, self.low * factor, self.high * factor, self.log_se, self.method
        )


@dataclass(frozen=True)
class Ratio:
    """A ratio of two medians with its 95 % confidence interval."""

    value: float
    low: float
    high: float
    paired: bool = False
    """From rounds that alternated the two in one pod (`benchmark.interleave`), each round
    compared within itself; otherwise from both sides' own intervals."""

    @property
    def bounded(self) -> bool:
        """The interval says something: both ends finite, above 0 and apart. A side measured
        once has no interval (0 to infinity), and one round pairs into a single point; either
        printed as "0.00x-infx" or "1.10x-1.10x" would claim what was never measured."""
        return 0 < self.low < self.high < math.inf

    @property
    def excludes_one(self) -> bool:
        """The interval says the two medians differ."""
        return self.bounded and (self.low > 1 or self.high < 1)


def from_samples(values: Sequence[float]) -> MedianEstimate:
    """The estimate from every iteration's duration: the sign test's interval and Price and
    Bonett's standard error of the log median (contract/order_stats.py)."""
    if not values:
        raise ValueError("no samples")
    ordered = sorted(values)
    low, high = median_interval(ordered)
    return MedianEstimate(
        float(statistics.median(ordered)), low, high, median_log_se(ordered), "order statistics"
    )


def from_interval(median: float, interval: MedianInterval) -> MedianEstimate:
    """The estimate the runner computed from every iteration (`latency.p50_interval`)."""
    log_se = math.inf if interval.log_se is None else interval.log_se
    return MedianEstimate(median, interval.low_ms, interval.high_ms, log_se, "order statistics")


def from_summary(median: float, iqr: float, count: int) -> MedianEstimate:
    """The estimate from a result's summary alone: se(median) from the IQR as if the noise were
    normal (it rarely is: right-skewed noise makes this too narrow), on the log scale so the
    interval stays above 0 without being clipped."""
    if median <= 0 or count < 1:
        return MedianEstimate(median, -math.inf, math.inf, math.inf, "IQR approximation")
    log_se = _MEDIAN_EFFICIENCY * (iqr / _IQR_TO_SIGMA) / math.sqrt(count) / median
    spread = math.exp(Z_95 * log_se)
    return MedianEstimate(median, median / spread, median * spread, log_se, "IQR approximation")


def ratio(numerator: MedianEstimate, denominator: MedianEstimate) -> Ratio:
    """numerator / denominator, for medians measured independently of each other."""
    value = numerator.median / denominator.median
    log_se = math.hypot(numerator.log_se, denominator.log_se)
    if not math.isfinite(log_se):
        return Ratio(value, 0.0, math.inf)
    spread = math.exp(Z_95 * log_se)
    return Ratio(value, value / spread, value * spread)
