"""Paired, interleaved timing: the only comparison that holds on a shared 2-core machine.

Absolute medians drift by up to 30 % between runs here (see shared/notes/measurement.md),
so every benchmark times a candidate against its baseline alternately, A B A B ..., and
reports the median of the per-pair ratios with their range.
"""

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Pairing:
    """The result of timing a candidate against a baseline, pair by pair."""

    name: str
    candidate_s: float
    baseline_s: float
    ratio: float
    ratio_low: float
    ratio_high: float
    ratios: tuple[float, ...] = ()
    """Every pair's ratio, where the pairs were timed here (not for rows built by hand)."""


def seconds(run: Callable[[], object]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def pairing(name: str, pairs: Sequence[tuple[float, float]]) -> Pairing:
    """(candidate, baseline) seconds, compared pair by pair."""
    ratios = [c / b for c, b in pairs]
    return Pairing(
        name=name,
        candidate_s=statistics.median(c for c, _ in pairs),
        baseline_s=statistics.median(b for _, b in pairs),
        ratio=statistics.median(ratios),
        ratio_low=min(ratios),
        ratio_high=max(ratios),
        ratios=tuple(ratios),
    )


def paired(
    name: str, candidate: Callable[[], object], baseline: Callable[[], object], rounds: int
) -> Pairing:
    """Time both `rounds` times, alternating, and compare them pair by pair."""
    candidate(), baseline()  # warm caches and imports outside the measurement
    return pairing(name, [(seconds(candidate), seconds(baseline)) for _ in range(rounds)])


def interleaved(
    name: str, candidate: Callable[[], float], baseline: Callable[[], float], rounds: int
) -> Pairing:
    """Like `paired`, for two measurers that report their own seconds (a median, say) rather
    than being timed whole; which one goes first alternates by round, so that neither always
    runs in the caches and clock state the other leaves behind."""
    candidate(), baseline()  # warm caches and imports outside the measurement
    pairs: list[tuple[float, float]] = []
    for round_ in range(rounds):
        if round_ % 2 == 0:
            pairs.append((candidate(), baseline()))
        else:
            baseline_first = baseline()
            pairs.append((candidate(), baseline_first))
    return pairing(name, pairs)


def table(title: str, baseline: str, rows: Sequence[Pairing]) -> str:
    """A fixed-width table of pairings."""
    lines = [
        title,
        f"{'case':<34} {'median s':>9} {baseline + ' s':>12} {'ratio':>7} {'range':>13}",
    ]
    for row in rows:
        spread = f"{row.ratio_low:.2f}-{row.ratio_high:.2f}"
        lines.append(
            f"{row.name:<34} {row.candidate_s:>9.4f} {row.baseline_s:>12.4f} "
            f"{row.ratio:>7.2f} {spread:>13}"
        )
    return "\n".join(lines)
