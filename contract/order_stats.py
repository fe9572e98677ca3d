"""Order statistics both the runner and the collector compute: the sign test's interval of a
median, which assumes nothing about the shape of the noise, and the paired ratio of two
variants measured in the same interleaved rounds (the runner's `paired`, the report's any
pair): one function, so the two can never disagree."""

import math
import statistics
from collections.abc import Sequence
from statistics import NormalDist
from typing import Final

Z_95: Final = NormalDist().inv_cdf(0.975)


def median_interval(values: Sequence[float], z: float = Z_95) -> tuple[float, float]:
    """The sign test's distribution-free interval of the median: the order statistics at ranks
    n/2 -+ z*sqrt(n)/2. It assumes nothing about the shape of the noise."""
    ordered = sorted(values)
    n = len(ordered)
    half_width = z * math.sqrt(n) / 2
    low = max(math.floor(n / 2 - half_width), 1)
    high = min(math.ceil(1 + n / 2 + half_width), n)
    return ordered[low - 1], ordered[high - 1]


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
