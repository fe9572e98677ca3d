"""The control question, answered first for fixed-rate runs: does this variant, on this
target, hold its rate? Pure, like the report it reads.

A deadline judged at p99.9 tolerates one late query in a thousand (MISS_TOLERANCE): a run
holds its rate when the miss rate's 95 % interval lies within that tolerance and its p99.9
(reliable: 10,000 queries) lies within the deadline; it does not when the interval lies
wholly above the tolerance or the p99.9 beyond the deadline. A run the machine disturbed
(contended, throttled) or that stopped short is not judged either way: it is flagged, and
the model is not blamed.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from contract.config import tail_fraction
from contract.order_stats import quantile_interval
from contract.proportions import MISS_TOLERANCE
from contract.result import Scenario
from contract.variant import SETTING_FIELDS
from report.model import Report, VariantRow
from report.table import format_ms, interval

_MACHINE_FLAGS: Final = ("contended", "cpu_throttled", "gpu_throttled", "stopped_early")
"""The validity flags that make a run's misses the machine's, or too few to judge."""

Held = Literal["held", "not held", "undecided"]


@dataclass(frozen=True)
class ControlAnswer:
    """Whether one fixed-rate variant held its rate, and the numbers that decide it."""

    row: VariantRow
    held: Held
    rate_hz: float
    deadline_ms: float
    miss_rate: float
    miss_rate_interval: tuple[float, float]
    """Wilson's 95 % interval (contract/proportions.py), as the runner recorded it."""
    p99_9_ms: float | None
    """None where the run had too few queries for it to be reliable."""
    p99_9_interval: tuple[float, float] | None
    """p99.9's distribution-free 95 % interval (contract/order_stats.py) from the stored
    per-query latencies; None without them, or where p99.9 is not reliable."""
    jitter_ms: float
    longest_miss_run: int
    why: str


def judge(scenario: Scenario, tail: float | None, flags: Sequence[str]) -> tuple[Held, str]:
    """Held or not, and why: by the miss rate's interval, the reliable p99.9 `tail` (None:
    too few queries) and the run's validity flags (by field name)."""
    low, high = scenario.miss_rate_low, scenario.miss_rate_high
    flagged = [flag for flag in flags if flag in _MACHINE_FLAGS]
    if flagged:
        return "undecided", f"{', '.join(flagged).replace('_', ' ')}: the machine, not the model"
    if low > MISS_TOLERANCE:
        return "not held", f"missed {low:.2%} or more, over the {MISS_TOLERANCE:.1%} allowed"
    if tail is not None and tail > scenario.deadline_ms:
        return "not held", "p99.9 is past the deadline"
    if tail is None:
        return "undecided", "too few queries for a reliable p99.9 (10,000)"
    if high > MISS_TOLERANCE:
        return "undecided", f"the miss rate's interval reaches {high:.2%}"
    return "held", f"at most {high:.2%} missed, p99.9 within the deadline"


def _tail_interval(row: VariantRow) -> tuple[float, float] | None:
    if row.timeline is None:
        return None
    try:
        latencies = row.timeline.durations_ns()
    except ValueError:
        return None  # damaged samples: the runner's p99.9 still stands
    low, high = quantile_interval(latencies, float(1 - tail_fraction("p99.9")))
    return low / 1e6, high / 1e6


def control_answers(report: Report) -> tuple[ControlAnswer, ...]:
    """One answer per fixed-rate variant, in the report's order."""
    answers = []
    for row in report.variants:
        scenario = row.scenario
        if scenario is None or scenario.kind != "fixed_rate":
            continue
        tail = row.latency.p99_9_ms if row.is_p99_9_reliable else None
        held, why = judge(scenario, tail, row.flags)
        answers.append(
            ControlAnswer(
                row=row,
                held=held,
                rate_hz=scenario.rate_hz,
                deadline_ms=scenario.deadline_ms,
                miss_rate=scenario.miss_rate,
                miss_rate_interval=(scenario.miss_rate_low, scenario.miss_rate_high),
                p99_9_ms=row.latency.p99_9_ms if row.is_p99_9_reliable else None,
                p99_9_interval=_tail_interval(row) if row.is_p99_9_reliable else None,
                jitter_ms=scenario.jitter_ms,
                longest_miss_run=scenario.longest_miss_run,
                why=why,
            )
        )
    return tuple(answers)


def worst_run(answers: Sequence[ControlAnswer]) -> ControlAnswer | None:
    """The run that missed most (then the longest p99.9) of those whose per-query latencies
    are stored: the one the web page draws over time."""
    stored = [answer for answer in answers if answer.row.timeline is not None]
    return max(stored, key=lambda a: (a.miss_rate, a.p99_9_ms or 0.0), default=None)


def control_line(answer: ControlAnswer) -> str:
    """One answer in one sentence."""
    key = answer.row.key
    settings = key.label([name for name in SETTING_FIELDS if name != "model"])
    low, high = answer.miss_rate_interval
    tail = "p99.9 ?" if answer.p99_9_ms is None else f"p99.9 {format_ms(answer.p99_9_ms)} ms"
    if answer.p99_9_interval is not None:
        tail += f" [95% CI {interval(*answer.p99_9_interval)}]"
    return (
        f"{key.model} on {key.target} ({key.cluster}), {settings}: {answer.held.upper()} "
        f"{answer.rate_hz:g} Hz "
        f"(deadline {format_ms(answer.deadline_ms)} ms): missed {answer.miss_rate:.2%} "
        f"[95% CI {low:.2%}-{high:.2%}], {tail}, jitter {format_ms(answer.jitter_ms)} ms; "
        f"{answer.why}."
    )
