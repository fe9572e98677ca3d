"""Order statistics both the runner and the collector compute: the sign test's interval of a
median, which assumes nothing about the shape of the noise, the standard error of its
logarithm that ratios of medians combine, and the paired ratio of two variants measured in the
same interleaved rounds (the runner's `paired`, the report's any pair): one function each, so
the two can never disagree."""

import math
import statistics
from collections.abc import Sequence
from statistics import NormalDist
from typing import Final

Z_95: Final = NormalDist().inv_cdf(0.975)
_EXACT_BINOMIAL_UP_TO: Final = 1000


def median_interval(values: Sequence[float], z: float = Z_95) -> tuple[float, float]:
    """The sign test's distribution-free interval of the median: the order statistics at ranks
    n/2 -+ z*sqrt(n)/2. It assumes nothing about the shape of the noise."""
    return quantile_interval(values, 0.5, z)


def quantile_interval(values: Sequence[float], q: float, z: float = Z_95) -> tuple[float, float]:
    """The distribution-free interval of the `q` quantile: the order statistics at ranks
    nq -+ z*sqrt(nq(1-q)), as many values lie below it as a Binomial(n, q) count (its normal
    approximation). The median's is the sign test's; p99.9's, of 10,000 queries, lies between
    the 9,983rd and the 9,998th."""
    ordered = sorted(values)
    n = len(ordered)
    # n * q * (1 - q) is exact for q = 1/2, so the median's ranks are as they always were.
    half_width = z * math.sqrt(n * q * (1 - q))
    low = max(math.floor(n * q - half_width), 1)
    high = min(math.ceil(1 + n * q + half_width), n)
    return ordered[low - 1], ordered[high - 1]


def median_log_se(values: Sequence[float]) -> float:
    """The standard error of ln(median) by Price and Bonett (2002, "Distribution-free confidence
    intervals for difference and ratio of medians", J. Stat. Comput. Simul. 72(2)): the spread
    of the order statistics c and n-c+1, c = (n+1)/2 - sqrt(n), divided by twice the normal
    quantile of the exact coverage those two ranks give. Infinite where nothing bounds it (a
    single value, or a value that is not positive)."""
    ordered = sorted(values)
    n = len(ordered)
    if not n:
        raise ValueError("no values")
    c = max(1, round((n + 1) / 2 - math.sqrt(n)))
    inner, outer = ordered[c - 1], ordered[n - c]
    coverage = 1 - 2 * _binomial_cdf(c - 1, n)
    if inner <= 0 or coverage <= 0:
        return math.inf
    z = NormalDist().inv_cdf((1 + coverage) / 2)
    return (math.log(outer) - math.log(inner)) / (2 * z)


def _binomial_cdf(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2); the normal approximation past 1000 trials."""
    if k < 0:
        return 0.0
    if n > _EXACT_BINOMIAL_UP_TO:
        return NormalDist(n / 2, math.sqrt(n) / 2).cdf(k + 0.5)
    return math.fsum(math.comb(n, i) for i in range(k + 1)) / 2.0**n


def paired_ratio(
    mine: Sequence[float], theirs: Sequence[float], z: float = Z_95
) -> tuple[float, float, float]:
    """(median, low, high) over rounds of `mine[r] / theirs[r]`: two variants' block medians
    in the same rounds, each round compared within itself so drift both saw cancels out, with
    the sign test's interval of that median. Raises ValueError for rounds that do not match
    or a median that is not positive (no ratio of a duration of 0 means anything)."""
    if len(mine) != len(theirs) or not mine:
        raise ValueError(f"{len(mine)} and {len(theirs)} rounds cannot be paired")
    if min(*mine, *theirs) <= 0:
        raise ValueError("a round's median is not positive")
    ratios = [a / b for a, b in zip(mine, theirs, strict=True)]
    low, high = median_interval(ratios, z)
    return statistics.median(ratios), low, high
