"""Order statistics both the runner and the collector compute: the sign test's interval of a
median, which assumes nothing about the shape of the noise."""

import math
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
