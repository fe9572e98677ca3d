"""What a whole run decides, said before any table: how many variants are usable, why the
rest are not, how many comparisons reached a verdict, and what to change when few did.

A report of 81 variants of which 77 were flagged on a shared node opened with tables as if
they answered; every verdict in them was "inconclusive". The verdict on the run comes first,
in every format, so that nobody reads a ranking of numbers the report itself doubts.
"""

from collections import Counter
from dataclasses import dataclass
from typing import Final

from collector.progress import plural
from collector.report import FLAGS, Report

ADVICE: Final = {
    "contended": "other work shared the node: run on a dedicated node pool (select it with "
    "the device type's `node_labels` in specs/clusters.yaml) or with `resources: guaranteed`",
    "cpu_throttled": "the CPU quota throttled the runner: `resources: guaranteed` gives it "
    "whole CPUs, limits equal to requests",
    "noisy": "each run's spread was wide: measure longer (`benchmark.measure.min_time`) or "
    "repeat the runs (`benchmark.repeats`)",
    "gpu_throttled": "the GPU slowed for power or heat: a dedicated node pool, or fewer pods "
    "per node",
    "stopped_early": "the timed loop reached `benchmark.measure.max_time` before its stopping "
    "rule: raise it",
}
"""What to change in the specs for each validity flag, in the order the advice is given."""


@dataclass(frozen=True)
class RunVerdict:
    """The whole run at a glance."""

    measured: int
    usable: int
    """Measured with no validity flag set: the numbers a comparison may rest on."""
    failed: int
    flagged: dict[str, int]
    """Validity flag -> how many measured variants carry it (a variant may carry several)."""
    comparisons: int
    """Each value of a sweep axis against its reference, and each change against a baseline."""
    decided: int
    """Of `comparisons`, those whose numbers allow a direction or a verdict."""
    advice: tuple[str, ...]

    @property
    def decides_nothing(self) -> bool:
        """No usable variant, or comparisons of which none reached a verdict."""
        return self.usable == 0 or (self.comparisons > 0 and self.decided == 0)


def run_verdict(report: Report) -> RunVerdict:
    """What `report`'s run decides, and what to change for it to decide more."""
    flagged = Counter(flag for row in report.variants for flag in row.flags)
    axis_entries = [entry for axis in report.axes for entry in axis.entries]
    changes = report.baseline.changes if report.baseline else ()
    decided = sum(entry.direction != "inconclusive" for entry in axis_entries) + sum(
        change.verdict != "inconclusive" for change in changes
    )
    advice = [ADVICE[flag] for flag in ADVICE if flagged[flag]]
    if report.failures:
        advice.append(
            f"{plural(len(report.failures), 'variant')} failed: the Failed table says why"
        )
    return RunVerdict(
        measured=len(report.variants),
        usable=sum(not row.doubts for row in report.variants),
        failed=len(report.failures),
        flagged={flag: flagged[flag] for flag in FLAGS if flagged[flag]},
        comparisons=len(axis_entries) + len(changes),
        decided=decided,
        advice=tuple(advice),
    )


def verdict_lines(verdict: RunVerdict) -> tuple[str, ...]:
    """The verdict in sentences: first what the run decides, then what to change."""
    total = verdict.measured + verdict.failed
    unusable = verdict.measured - verdict.usable
    why = ", ".join(f"{count} {FLAGS[flag]}" for flag, count in verdict.flagged.items())
    parts = [f"{verdict.usable} of {plural(total, 'variant')} usable"]
    if unusable:
        parts.append(f"{unusable} flagged ({why})")
    if verdict.failed:
        parts.append(f"{verdict.failed} failed")
    if verdict.comparisons:
        parts.append(f"{verdict.decided} of {plural(verdict.comparisons, 'comparison')} decided")
    opening = "This run decides nothing" if verdict.decides_nothing else "Verdict"
    lines = [f"{opening}: {'; '.join(parts)}."]
    lines += [f"To decide more: {advice}." for advice in verdict.advice]
    return tuple(lines)
