"""The interval of a proportion (a fixed-rate run's share of missed deadlines), which the
runner records and the report judges, and the share a deadline tolerates: one definition
for all."""

import math
from typing import Final

MISS_TOLERANCE: Final = 0.001
"""The share of a fixed-rate run's queries its deadline may miss and still hold: a deadline
judged at p99.9 lets the tail beyond p99.9 be late. The report's held / not held and the
alert rule on the miss-rate metric both read it."""
Z_95: Final = 1.959963984540054
"""The normal quantile of a two-sided 95 % interval."""


def wilson_interval(hits: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson's score interval of `hits` out of `trials` (95 % by default).

    Wilson's rather than Clopper-Pearson's: a closed form in the standard library, so the
    contract needs no scipy; and at zero hits, where a run's "held" is decided, its upper
    bound z^2 / (n + z^2) (about 3.84 / n) lies above Clopper-Pearson's exact one
    (-ln(0.025) / n, about 3.69 / n), so it never claims more than the exact interval there.
    """
    if trials < 1 or not 0 <= hits <= trials:
        raise ValueError(f"{hits} hits of {trials} trials")
    share = hits / trials
    z2 = z * z
    centre = (share + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(share * (1 - share) / trials + z2 / (4 * trials * trials))
    half /= 1 + z2 / trials
    # The interval holds the share exactly; rounding alone put it outside at the ends (60
    # misses of 60 gave a high end of 0.9999999999999998, 0 of 7 a low end of 6e-17).
    return max(0.0, min(share, centre - half)), min(1.0, max(share, centre + half))
