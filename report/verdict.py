"""What a whole run decides, said before any table: how many variants are usable, why the
rest are not, how many are outside their accuracy gate or were never measured for accuracy,
how many comparisons reached a verdict, and what to change when few did.

A report of 81 variants of which 77 were flagged on a shared node opened with tables as if
they answered; every verdict in them was "inconclusive". The verdict on the run comes first,
in every format, so that nobody reads a ranking of numbers the report itself doubts.
"""

from collections import Counter
from dataclasses import dataclass
from typing import Final

from contract.layout import LOCAL_CLUSTER
from contract.text import plural
from report.model import FLAGS, Report

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

ADVICE_GUARANTEED: Final = {
    "contended": "other work shared the node although the runs had whole CPUs, requests "
    "equal to limits (what `resources: guaranteed` gives): run on a dedicated node pool "
    "(select it with the device type's `node_labels` in specs/clusters.yaml)",
    "cpu_throttled": "the CPU quota throttled the runner although it had whole CPUs, requests "
    "equal to limits (what `resources: guaranteed` gives): the node's kubelet does not pin "
    "cores (CPU manager policy not static); run on a dedicated node pool that does (select "
    "it with the device type's `node_labels` in specs/clusters.yaml)",
}
"""The advice for a flag where every run it flags already had guaranteed CPUs: never the
setting the spec has, but what is left."""

ADVICE_LOCAL: Final = (
    "a local try shares this machine's cores with everything else on it (and a pod may ask "
    "more CPUs than it has): it proves the spec runs; the workflow's cluster, on a node of "
    "the target's own, decides which variant is faster"
)
"""The advice for contention where every run it flags was a local try: no spec setting
helps a workstation."""


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
    accuracy_failed: int = 0
    """Measured variants outside their accuracy gate: they compute something else, so none
    may be the best configuration, however fast."""
    accuracy_not_measured: int = 0
    """Measured variants whose accuracy is not known: never taken for passing."""
    accuracy_before: int = 0
    """Of `accuracy_not_measured`, those whose result has no accuracy at all (a runner
    before it); the others' comparison failed or is not meaningful, and their rows say why."""
    accuracy_not_meaningful: int = 0
    """Of `accuracy_not_measured`, those compared with a reference whose outputs are
    constant: however close, the comparison says nothing of them."""

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
    advice = [_advice(flag, report) for flag in ADVICE if flagged[flag]]
    if report.failures:
        advice.append(
            f"{plural(len(report.failures), 'variant')} failed: the Failed table says why"
        )
    states = Counter(row.accuracy.state for row in report.variants)
    return RunVerdict(
        measured=len(report.variants),
        usable=sum(not row.doubts for row in report.variants),
        failed=len(report.failures),
        flagged={flag: flagged[flag] for flag in FLAGS if flagged[flag]},
        comparisons=len(axis_entries) + len(changes),
        decided=decided,
        advice=tuple(advice),
        accuracy_failed=states["accuracy_failed"],
        accuracy_not_measured=states["not measured"],
        accuracy_before=sum(row.accuracy.accuracy is None for row in report.variants),
        accuracy_not_meaningful=sum(row.accuracy.not_meaningful for row in report.variants),
    )


def _advice(flag: str, report: Report) -> str:
    rows = [row for row in report.variants if flag in row.flags]
    if flag in ("contended", "cpu_throttled") and all(
        row.key.cluster == LOCAL_CLUSTER for row in rows
    ):
        return ADVICE_LOCAL
    if flag in ADVICE_GUARANTEED and all(row.guaranteed_cpus for row in rows):
        return ADVICE_GUARANTEED[flag]
    return ADVICE[flag]


def verdict_lines(verdict: RunVerdict) -> tuple[str, ...]:
    """The verdict in sentences: first what the run decides, then what to change."""
    total = verdict.measured + verdict.failed
    unusable = verdict.measured - verdict.usable
    why = ", ".join(f"{count} {FLAGS[flag]}" for flag, count in verdict.flagged.items())
    parts = [f"{verdict.usable} of {plural(total, 'variant')} usable"]
    if unusable:
        parts.append(f"{unusable} flagged ({why})")
    if verdict.accuracy_failed:
        its = "its" if verdict.accuracy_failed == 1 else "their"
        parts.append(f"{verdict.accuracy_failed} outside {its} accuracy gate")
    if verdict.accuracy_not_measured:
        parts.append(f"accuracy not measured for {verdict.accuracy_not_measured}")
    if verdict.failed:
        parts.append(f"{verdict.failed} failed")
    if verdict.comparisons:
        parts.append(f"{verdict.decided} of {plural(verdict.comparisons, 'comparison')} decided")
    opening = "This run decides nothing" if verdict.decides_nothing else "Verdict"
    lines = [f"{opening}: {'; '.join(parts)}.", *_accuracy_lines(verdict)]
    lines += [f"To decide more: {advice}." for advice in verdict.advice]
    return tuple(lines)


def _accuracy_lines(verdict: RunVerdict) -> list[str]:
    """What the accuracy gates leave out of "which is best", and why."""
    lines = []
    failed = verdict.accuracy_failed
    if failed:
        its, they = ("its", "it computes") if failed == 1 else ("their", "they compute")
        lines.append(
            f"{plural(failed, 'variant')} outside {its} accuracy gate: {they} something else, "
            "so never the best configuration, however fast; the tables' accuracy columns show "
            "by how much (the gates: `benchmark.accuracy`, `models[i].accuracy`)."
        )
    unknown = verdict.accuracy_not_measured
    if unknown:
        before, meaningless = verdict.accuracy_before, verdict.accuracy_not_meaningful
        why = [f"{before} from a runner before accuracy: run again to judge them"] if before else []
        if meaningless:
            why.append(
                f"{meaningless} not meaningful: the reference's outputs are constant, so any "
                "variant returning the same agrees with it; the Variants table says which"
            )
        if unknown > before + meaningless:
            failed_comparisons = unknown - before - meaningless
            why.append(f"{failed_comparisons} whose comparison failed: the Variants table says why")
        lines.append(
            f"Accuracy not measured for {plural(unknown, 'variant')} ({'; '.join(why)}): "
            "never taken for passing, ranked after every variant known to be within its gate."
        )
    return lines
