"""What a workflow's runs say: each variant's latency with a confidence interval, the
comparisons the design note asks for (GPUs side by side, the best configuration of a sweep,
a ranking of models) and the change from an earlier run ("today vs last week").

`build_report` is pure: stored rows in, a frozen `Report` out, no database or cluster.
`collector.report_render` turns it into text, Markdown, CSV and JSON; `collector.report_html`
into a page with plots (only those who want pictures import matplotlib).
"""

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import Final, Literal

from collector import intervals
from collector.intervals import MedianEstimate, Ratio
from collector.store import StoredRun
from contract.result import LatencyStats, OkResult, Validity
from contract.variant import SETTING_FIELDS, VariantRef

REPORT_SCHEMA_VERSION: Final = 2
"""Bumped when a field of `to_json`'s output changes meaning or goes away."""
DEFAULT_REGRESSION_THRESHOLD: Final = 0.05

Verdict = Literal["regression", "improvement", "inconclusive", "unchanged"]
"""A change beyond the threshold is a regression or improvement only when the ratio's CI
excludes 1 and neither run is in doubt (see `VariantRow.doubts`); otherwise inconclusive."""
VERDICT_ORDER: Final[dict[Verdict, int]] = {
    "regression": 0,
    "improvement": 1,
    "inconclusive": 2,
    "unchanged": 3,
}


@dataclass(frozen=True, order=True)
class VariantKey:
    """What makes two runs the same variant: for de-duplication and for matching baselines."""

    cluster: str
    target: str
    model: str
    precision: str
    quantization: str
    batch_size: int

    def value(self, name: str) -> str:
        """One field, by name, as text."""
        return str(getattr(self, name))

    def label(self, names: Sequence[str]) -> str:
        """The fields `names`, for a reader: "fp16 int8-weight-only batch 64"."""
        return " ".join(
            f"batch {self.batch_size}" if name == "batch_size" else self.value(name)
            for name in names
        )


KEY_FIELDS: Final = tuple(field.name for field in fields(VariantKey))
_HEADINGS: Final = {"batch_size": "batch"}


def heading(name: str) -> str:
    return _HEADINGS.get(name, name)


@dataclass(frozen=True)
class VariantRow:
    """One measured variant: its latest run, which succeeded."""

    key: VariantKey
    variant_id: str
    job: str
    finished_at: str | None
    device_name: str | None
    """The device as the runner saw it ("NVIDIA A100-SXM4-80GB", a CPU model)."""
    latency: LatencyStats
    """Per iteration, i.e. per batch."""
    estimate: MedianEstimate
    """The median per batch with its 95 % CI: from the samples where the result has them."""
    is_p99_reliable: bool
    """False when too few iterations lie beyond p99 (or the result does not say)."""
    is_noisy: bool | None
    """IQR above 10 % of the median, as the runner judged it; None when it did not say."""
    mean_samples_per_s: float | None
    """The runner's throughput: samples over the timed loop's total time, i.e. at the mean."""
    doubts: tuple[str, ...]
    """Why this run's number must not decide a comparison: the runner's validity flags that
    are set (noisy, contended, CPU or GPU throttled, stopped early), with their reasons."""

    @property
    def ci_low_ms(self) -> float:
        return self.estimate.low

    @property
    def ci_high_ms(self) -> float:
        return self.estimate.high

    @property
    def per_sample(self) -> MedianEstimate:
        """The median latency divided by the batch size: what a sweep's best minimises."""
        return self.estimate.scaled(1 / self.key.batch_size)

    @property
    def p50_per_sample_ms(self) -> float:
        return self.per_sample.median

    @property
    def ci_per_sample_ms(self) -> tuple[float, float]:
        """The median's confidence interval, per sample."""
        return self.per_sample.low, self.per_sample.high

    @property
    def samples_per_s(self) -> float:
        """Throughput at the median: batch size over the p50, the statistic latency uses."""
        return 1000 / self.p50_per_sample_ms


@dataclass(frozen=True)
class FailedVariant:
    """A variant whose latest run gave no measurement, and why."""

    cluster: str
    target: str
    job: str
    index: int
    variant: VariantRef | None
    """None when no result named the variant (the pod never started, or was OOMKilled)."""
    explanation: str
    attempts: int


@dataclass(frozen=True)
class Ranked:
    """One variant within a comparison."""

    row: VariantRow
    ratio: Ratio
    """Its p50 per sample over the fastest's (1 for the fastest), with the ratio's CI."""
    doubts: tuple[str, ...]
    """Why it cannot be told apart from the fastest even if the CI says so: either side's
    validity flags."""

    @property
    def is_significant(self) -> bool:
        """Slower than the fastest beyond noise, with neither run in doubt (False for the
        fastest itself)."""
        return self.ratio.excludes_one and not self.doubts


@dataclass(frozen=True)
class Comparison:
    """Variants that differ only in some key fields, fastest (per sample) first."""

    fixed: tuple[tuple[str, str], ...]
    """The key fields all entries share, as (name, value)."""
    varies: tuple[str, ...]
    """The key fields that tell the entries apart."""
    entries: tuple[Ranked, ...]

    def describe(self) -> str:
        """What the entries share: "model tiny-cnn, precision fp32, ...", fields in key order."""
        return ", ".join(f"{heading(name)} {value}" for name, value in self.fixed)


@dataclass(frozen=True)
class BestConfiguration:
    """The configurations of one model on one target: which is fastest, and is it clearly so."""

    comparison: Comparison

    @property
    def is_significant(self) -> bool:
        """The runner-up is slower than the best beyond noise, neither run in doubt."""
        return self.comparison.entries[1].is_significant


Direction = Literal["faster", "slower", "no difference", "inconclusive"]


@dataclass(frozen=True)
class AxisEntry:
    """One variant against the reference value of an axis, every other setting the same."""

    row: VariantRow
    reference: VariantRow
    ratio: Ratio
    """Its p50 per sample over the reference's, with the ratio's CI."""
    doubts: tuple[str, ...]
    """Either side's validity flags: then no direction is claimed."""

    @property
    def direction(self) -> Direction:
        """What the numbers allow to say, and no more."""
        if self.doubts:
            return "inconclusive"
        if not self.ratio.excludes_one:
            return "no difference"
        return "faster" if self.ratio.value < 1 else "slower"


@dataclass(frozen=True)
class AxisComparison:
    """Each value of one sweep axis against a reference value, the other axes held fixed:
    "bf16 vs fp32 at batch 1: 0.62x [0.58, 0.66]"."""

    axis: str
    entries: tuple[AxisEntry, ...]
    """Grouped by the settings held fixed, in key order."""


@dataclass(frozen=True)
class Change:
    """One variant now and in the baseline."""

    current: VariantRow
    baseline: VariantRow
    ratio: Ratio
    """Current p50 over the baseline's, with the ratio's CI."""
    verdict: Verdict
    doubts: tuple[str, ...]
    """Why the verdict is inconclusive although the CI excludes no change: either side's
    validity flags."""


@dataclass(frozen=True)
class BaselineComparison:
    """Today vs an earlier run, matched by `VariantKey`."""

    threshold: float
    changes: tuple[Change, ...]
    """Regressions first (largest first), then improvements, inconclusive, unchanged."""
    new: tuple[VariantKey, ...]
    """Measured now, not in the baseline."""
    missing: tuple[VariantKey, ...]
    """Measured in the baseline, not now (see the failures for why)."""

    def with_verdict(self, verdict: Verdict) -> tuple[Change, ...]:
        """The changes with that verdict, in report order."""
        return tuple(change for change in self.changes if change.verdict == verdict)


@dataclass(frozen=True)
class Report:
    """Everything the renderers show; built by `build_report`."""

    workflows: tuple[str, ...]
    variants: tuple[VariantRow, ...]
    """Sorted by key."""
    failures: tuple[FailedVariant, ...]
    by_target: tuple[Comparison, ...]
    """The same model, precision, quantization and batch on several targets (or clusters)."""
    best_configurations: tuple[BestConfiguration, ...]
    """Per cluster, target and model with several configurations."""
    rankings: tuple[Comparison, ...]
    """Models side by side, per cluster, target and configuration with several models."""
    axes: tuple[AxisComparison, ...]
    """Per sweep axis with several values: each value against the axis's reference."""
    baseline: BaselineComparison | None
    superseded: int
    """Runs left out because a later run of the same variant exists."""


def _target(run: StoredRun) -> str:
    result = run.variant.result
    return run.job.target or (result.target if result else None) or "unknown"


def _key(run: StoredRun, ref: VariantRef) -> VariantKey:
    setting = {field: getattr(ref, field) for field in SETTING_FIELDS}
    return VariantKey(cluster=run.job.cluster, target=_target(run), **setting)


def _ref(run: StoredRun) -> VariantRef | None:
    """Which variant the run was: as config.json named it, else as its result says."""
    result = run.variant.result
    return run.variant.variant or (result.variant if result else None)


def _variant_key(run: StoredRun) -> VariantKey | None:
    ref = _ref(run)
    return _key(run, ref) if ref else None


def _instant(text: str | None) -> datetime:
    if text is None:
        return datetime.min.replace(tzinfo=UTC)
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _recency(run: StoredRun) -> tuple[datetime, str, str, int]:
    # Past finished_at, the rest only makes the choice independent of the input's order.
    return _instant(run.variant.finished_at), run.collected_at, run.job.job, run.variant.index


def _latest(runs: Iterable[StoredRun]) -> tuple[list[StoredRun], int]:
    """One run per variant key, the latest finished; also how many were left out."""
    latest: dict[VariantKey, StoredRun] = {}
    unnamed: list[StoredRun] = []
    left_out = 0
    for run in runs:
        key = _variant_key(run)
        if key is None:
            # Without a result nothing says which variant this was, so nothing supersedes it.
            unnamed.append(run)
            continue
        if key in latest:
            left_out += 1
            if _recency(run) <= _recency(latest[key]):
                continue
        latest[key] = run
    return [*latest.values(), *unnamed], left_out


def _measured(run: StoredRun) -> VariantRow | None:
    result = run.variant.result
    if run.variant.state != "succeeded" or not isinstance(result, OkResult) or not result.variant:
        return None
    validity = result.validity
    return VariantRow(
        key=_key(run, result.variant),
        variant_id=result.variant.id,
        job=run.job.job,
        finished_at=run.variant.finished_at,
        device_name=result.environment.device_name if result.environment else None,
        latency=result.latency,
        estimate=_estimate(result),
        is_p99_reliable=validity is not None and "p99" in validity.reliable_percentiles,
        is_noisy=validity.noisy if validity else None,
        mean_samples_per_s=result.throughput_samples_per_s,
        doubts=_doubts(validity),
    )


def _estimate(result: OkResult) -> MedianEstimate:
    if result.samples is not None:
        try:
            return intervals.from_samples([ns / 1e6 for ns in result.samples.durations_ns()])
        except ValueError:
            pass  # damaged samples: the summary still holds
    latency = result.latency
    return intervals.from_summary(latency.p50_ms, latency.iqr_ms, latency.count)


_FLAGS: Final = {
    "noisy": "noisy",
    "contended": "contended",
    "cpu_throttled": "CPU-throttled",
    "gpu_throttled": "GPU-throttled",
    "stopped_early": "stopped early",
}


def _doubts(validity: Validity | None) -> tuple[str, ...]:
    if validity is None:
        return ()
    flagged = [words for flag, words in _FLAGS.items() if getattr(validity, flag)]
    if not flagged:
        return ()
    return (
        (f"{', '.join(flagged)}: {'; '.join(validity.reasons)}",)
        if validity.reasons
        else (", ".join(flagged),)
    )


def _failure(run: StoredRun) -> FailedVariant:
    return FailedVariant(
        cluster=run.job.cluster,
        target=_target(run),
        job=run.job.job,
        index=run.variant.index,
        variant=_ref(run),
        explanation=run.variant.explanation,
        attempts=run.variant.attempts,
    )


def _split(runs: Iterable[StoredRun]) -> tuple[tuple[VariantRow, ...], tuple[FailedVariant, ...]]:
    rows: list[VariantRow] = []
    failures: list[FailedVariant] = []
    for run in runs:
        row = _measured(run)
        if row is None:
            failures.append(_failure(run))
        else:
            rows.append(row)
    rows.sort(key=lambda row: row.key)
    failures.sort(key=lambda failed: (failed.cluster, failed.target, failed.job, failed.index))
    return tuple(rows), tuple(failures)


def _compare(rows: Sequence[VariantRow]) -> Comparison:
    ranked = sorted(rows, key=lambda row: (row.p50_per_sample_ms, row.key))
    fastest = ranked[0]
    fastest_doubts = _labelled(fastest)
    varies = tuple(name for name in KEY_FIELDS if len({row.key.value(name) for row in rows}) > 1)
    return Comparison(
        fixed=tuple((name, fastest.key.value(name)) for name in KEY_FIELDS if name not in varies),
        varies=varies,
        entries=tuple(
            Ranked(
                row=row,
                ratio=intervals.ratio(row.per_sample, fastest.per_sample),
                doubts=() if row is fastest else (*fastest_doubts, *_labelled(row)),
            )
            for row in ranked
        ),
    )


def _comparisons(rows: Sequence[VariantRow], by: tuple[str, ...]) -> tuple[Comparison, ...]:
    """A comparison per group of rows sharing the fields `by`, where a group has several."""
    groups: dict[tuple[str, ...], list[VariantRow]] = defaultdict(list)
    for row in rows:
        groups[tuple(row.key.value(name) for name in by)].append(row)
    return tuple(_compare(group) for group in groups.values() if len(group) > 1)


def _best_configuration(comparison: Comparison) -> BestConfiguration:
    return BestConfiguration(comparison=comparison)


AXES: Final = ("target", "precision", "quantization", "batch_size", "model")
_REFERENCE_VALUES: Final = {"precision": "fp32", "quantization": "none"}
"""What other values are compared with, where a group has it; else the group's first value
(the smallest batch, the first target or model by name)."""


def _reference(axis: str, group: Sequence[VariantRow]) -> VariantRow:
    preferred = _REFERENCE_VALUES.get(axis)
    for row in group:
        if row.key.value(axis) == preferred:
            return row
    return min(group, key=lambda row: (getattr(row.key, axis), row.key))


def _axis(axis: str, rows: Sequence[VariantRow]) -> AxisComparison | None:
    held = tuple(name for name in KEY_FIELDS if name != axis)
    groups: dict[tuple[str, ...], list[VariantRow]] = defaultdict(list)
    for row in rows:
        groups[tuple(row.key.value(name) for name in held)].append(row)
    entries: list[AxisEntry] = []
    for group in groups.values():
        if len(group) < 2:
            continue
        reference = _reference(axis, group)
        entries.extend(
            AxisEntry(
                row=row,
                reference=reference,
                ratio=intervals.ratio(row.per_sample, reference.per_sample),
                doubts=(*_labelled(reference), *_labelled(row)),
            )
            for row in sorted(group, key=lambda row: row.key)
            if row is not reference
        )
    return AxisComparison(axis, tuple(entries)) if entries else None


def _labelled(row: VariantRow) -> tuple[str, ...]:
    """The row's doubts, saying whose they are."""
    return tuple(f"{row.key.label(KEY_FIELDS[1:])} is {doubt}" for doubt in row.doubts)


def _verdict(ratio: Ratio, doubts: tuple[str, ...], threshold: float) -> Verdict:
    if 1 - threshold <= ratio.value <= 1 + threshold:
        return "unchanged"
    if doubts or not ratio.excludes_one:
        return "inconclusive"
    return "regression" if ratio.value > 1 else "improvement"


def _change(current: VariantRow, baseline: VariantRow, threshold: float) -> Change:
    ratio = intervals.ratio(current.estimate, baseline.estimate)
    doubts = (
        *(f"now {doubt}" for doubt in current.doubts),
        *(f"in the baseline {doubt}" for doubt in baseline.doubts),
    )
    return Change(
        current=current,
        baseline=baseline,
        ratio=ratio,
        verdict=_verdict(ratio, doubts, threshold),
        doubts=doubts,
    )


def _against(
    rows: Sequence[VariantRow], baseline: Iterable[StoredRun], threshold: float
) -> BaselineComparison:
    now = {row.key: row for row in rows}
    before = {row.key: row for row in _split(_latest(baseline)[0])[0]}
    changes = [_change(now[key], before[key], threshold) for key in now.keys() & before.keys()]
    changes.sort(
        key=lambda change: (
            VERDICT_ORDER[change.verdict],
            -abs(math.log(change.ratio.value)),
            change.current.key,
        )
    )
    return BaselineComparison(
        threshold=threshold,
        changes=tuple(changes),
        new=tuple(sorted(now.keys() - before.keys())),
        missing=tuple(sorted(before.keys() - now.keys())),
    )


def build_report(
    runs: Sequence[StoredRun],
    *,
    baseline: Sequence[StoredRun] | None = None,
    regression_threshold: float = DEFAULT_REGRESSION_THRESHOLD,
) -> Report:
    """The report on `runs`, compared with `baseline` (earlier runs) when given.

    Where several runs of the same variant (cluster, target, model, precision, quantization,
    batch size) exist, in `runs` or in `baseline`, the one that finished last wins and the
    others count as superseded. A variant is a regression when its p50 grew by more than
    `regression_threshold` (a fraction: 0.05 is 5 %) and its CI and the baseline's are
    disjoint; an improvement likewise for a p50 that shrank by more than the threshold.
    """
    if not 0 <= regression_threshold < 1:
        raise ValueError(
            f"regression_threshold is a fraction in [0, 1), not {regression_threshold}"
        )
    latest, superseded = _latest(runs)
    rows, failures = _split(latest)
    return Report(
        workflows=tuple(sorted({run.job.workflow for run in runs})),
        variants=rows,
        failures=failures,
        by_target=_comparisons(rows, ("model", "precision", "quantization", "batch_size")),
        best_configurations=tuple(
            _best_configuration(comparison)
            for comparison in _comparisons(rows, ("cluster", "target", "model"))
        ),
        rankings=_comparisons(
            rows, ("cluster", "target", "precision", "quantization", "batch_size")
        ),
        axes=tuple(comparison for axis in AXES if (comparison := _axis(axis, rows))),
        baseline=_against(rows, baseline, regression_threshold) if baseline is not None else None,
        superseded=superseded,
    )


# Rendering: every format but CSV and JSON shows the same tables, laid out once here.
