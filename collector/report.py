"""What a workflow's runs say: each variant's latency with a confidence interval, the
comparisons the design note asks for (GPUs side by side, the best configuration of a sweep,
a ranking of models) and the change from an earlier run ("today vs last week").

`build_report` is pure: stored rows in, a frozen `Report` out, no database or cluster.
`to_text`, `to_markdown`, `to_csv` and `to_json` render it, and the same report always gives
the same bytes, so that a report can be committed and diffed. The HTML page with its plots
lives in `collector.report_html`, so that only those who want pictures import matplotlib.
"""

import csv
import html
import io
import json
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from typing import Final, Literal

from pydantic import BaseModel

from collector.store import StoredRun
from runner.result import LatencyStats, VariantRef

REPORT_SCHEMA_VERSION: Final = 1
"""Bumped when a field of `to_json`'s output changes meaning or goes away."""
NOTCH_FACTOR: Final = 1.57
"""McGill, Tukey & Larsen's notch constant, as matplotlib uses it (R's boxplot uses 1.58)."""
DEFAULT_REGRESSION_THRESHOLD: Final = 0.05

Verdict = Literal["regression", "improvement", "inconclusive", "unchanged"]
"""A change beyond the threshold is a regression or improvement only when the CIs are
disjoint; otherwise it is inconclusive."""
_VERDICT_ORDER: Final[dict[Verdict, int]] = {
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


def _heading(name: str) -> str:
    return _HEADINGS.get(name, name)


def median_interval(latency: LatencyStats) -> tuple[float, float]:
    """An approximate 95 % confidence interval of the median, from the stored summary alone.

    No raw samples are stored, so this is the notch of a box plot (McGill, Tukey & Larsen,
    "Variations of Box Plots", The American Statistician 32(1), 1978): median ± 1.57·IQR/√n.
    The constant was chosen so that two such intervals that do not overlap mark medians that
    differ at roughly the 5 % level, which is how this report uses them; as an interval for
    one median it covers about 91 % for normal data. Iterations of a timed loop are not
    independent (caches, clocks, neighbours), so take it as a lower bound on the uncertainty.
    The lower end stops at 0, since no latency is negative.
    """
    half_width = NOTCH_FACTOR * latency.iqr_ms / math.sqrt(latency.count)
    return max(0.0, latency.p50_ms - half_width), latency.p50_ms + half_width


def _overlaps(first: tuple[float, float], second: tuple[float, float]) -> bool:
    return first[0] <= second[1] and second[0] <= first[1]


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
    ci_low_ms: float
    """The median's confidence interval, see `median_interval`."""
    ci_high_ms: float
    is_p99_reliable: bool
    """False when too few iterations lie beyond p99 (or the result does not say)."""
    throughput_samples_per_s: float | None
    is_noisy: bool | None
    """IQR above 10 % of the median, as the runner judged it; None when it did not say."""

    @property
    def p50_per_sample_ms(self) -> float:
        """The median latency divided by the batch size: what a sweep's best minimises."""
        return self.latency.p50_ms / self.key.batch_size

    @property
    def ci_per_sample_ms(self) -> tuple[float, float]:
        """The median's confidence interval, per sample."""
        batch = self.key.batch_size
        return self.ci_low_ms / batch, self.ci_high_ms / batch


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
    ratio: float
    """Its p50 per sample over the fastest's (1 for the fastest)."""
    is_significant: bool
    """Its CI and the fastest's are disjoint (False for the fastest itself)."""


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
        return ", ".join(f"{_heading(name)} {value}" for name, value in self.fixed)


@dataclass(frozen=True)
class BestConfiguration:
    """The configurations of one model on one target: which is fastest, and is it clearly so."""

    comparison: Comparison
    highest_throughput: VariantRow | None
    """None when no run reported a throughput."""

    @property
    def is_significant(self) -> bool:
        """The best's CI and the runner-up's are disjoint."""
        return self.comparison.entries[1].is_significant


@dataclass(frozen=True)
class Change:
    """One variant now and in the baseline."""

    current: VariantRow
    baseline: VariantRow
    ratio: float
    """Current p50 over the baseline's."""
    verdict: Verdict


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
    baseline: BaselineComparison | None
    superseded: int
    """Runs left out because a later run of the same variant exists."""


def _target(run: StoredRun) -> str:
    result = run.variant.result
    return run.job.target or (result.target if result else None) or "unknown"


def _key(run: StoredRun, ref: VariantRef) -> VariantKey:
    return VariantKey(
        cluster=run.job.cluster,
        target=_target(run),
        model=ref.model,
        precision=ref.precision,
        quantization=ref.quantization,
        batch_size=ref.batch_size,
    )


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
    if (
        run.variant.state != "succeeded"
        or result is None
        or result.status != "ok"
        or result.latency is None
        or result.variant is None
    ):
        return None
    low, high = median_interval(result.latency)
    validity = result.validity
    return VariantRow(
        key=_key(run, result.variant),
        variant_id=result.variant.id,
        job=run.job.job,
        finished_at=run.variant.finished_at,
        device_name=result.environment.device_name if result.environment else None,
        latency=result.latency,
        ci_low_ms=low,
        ci_high_ms=high,
        is_p99_reliable=validity is not None and "p99" in validity.reliable_percentiles,
        throughput_samples_per_s=result.throughput_samples_per_s,
        is_noisy=validity.noisy if validity else None,
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
    varies = tuple(name for name in KEY_FIELDS if len({row.key.value(name) for row in rows}) > 1)
    return Comparison(
        fixed=tuple((name, fastest.key.value(name)) for name in KEY_FIELDS if name not in varies),
        varies=varies,
        entries=tuple(
            Ranked(
                row=row,
                ratio=row.p50_per_sample_ms / fastest.p50_per_sample_ms,
                is_significant=not _overlaps(row.ci_per_sample_ms, fastest.ci_per_sample_ms),
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
    throughputs = [
        (entry.row.throughput_samples_per_s, entry.row)
        for entry in comparison.entries
        if entry.row.throughput_samples_per_s is not None
    ]
    # On a tie, max keeps the first: the one with the lower p50 per sample.
    top = max(throughputs, key=lambda pair: pair[0], default=None)
    return BestConfiguration(comparison=comparison, highest_throughput=top[1] if top else None)


def _verdict(current: VariantRow, baseline: VariantRow, ratio: float, threshold: float) -> Verdict:
    if 1 - threshold <= ratio <= 1 + threshold:
        return "unchanged"
    if _overlaps(
        (current.ci_low_ms, current.ci_high_ms), (baseline.ci_low_ms, baseline.ci_high_ms)
    ):
        return "inconclusive"
    return "regression" if ratio > 1 else "improvement"


def _change(current: VariantRow, baseline: VariantRow, threshold: float) -> Change:
    ratio = current.latency.p50_ms / baseline.latency.p50_ms
    return Change(
        current=current,
        baseline=baseline,
        ratio=ratio,
        verdict=_verdict(current, baseline, ratio, threshold),
    )


def _against(
    rows: Sequence[VariantRow], baseline: Iterable[StoredRun], threshold: float
) -> BaselineComparison:
    now = {row.key: row for row in rows}
    before = {row.key: row for row in _split(_latest(baseline)[0])[0]}
    changes = [_change(now[key], before[key], threshold) for key in now.keys() & before.keys()]
    changes.sort(
        key=lambda change: (
            _VERDICT_ORDER[change.verdict],
            -abs(math.log(change.ratio)),
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
        baseline=_against(rows, baseline, regression_threshold) if baseline is not None else None,
        superseded=superseded,
    )


# Rendering: every format but CSV and JSON shows the same tables, laid out once here.

TableKind = Literal["alert", "main", "detail"]
"""How prominent a table is: alerts come first and are marked; details may be folded away."""


@dataclass(frozen=True)
class Column:
    """A table's column: its heading, and whether it holds numbers (aligned right)."""

    heading: str
    is_numeric: bool = False


@dataclass(frozen=True)
class Table:
    """One section of a report, as text cells; renderers escape and align them."""

    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = ()
    kind: TableKind = "main"


@dataclass(frozen=True)
class Layout:
    """A report as its renderers show it: a title, a few lines of summary, the tables."""

    title: str
    headline: str | None
    """The one thing not to miss (regressions), or None."""
    summary: tuple[str, ...]
    tables: tuple[Table, ...]


_CI_NOTE: Final = (
    "95% CI: median ± 1.57·IQR/√n, the box-plot notch (McGill, Tukey & Larsen 1978); "
    "disjoint CIs mark a real difference."
)


_NUMERIC: Final = frozenset(
    {
        "#",
        "batch",
        "index",
        "attempts",
        "iters",
        "cv",
        "change",
        "samples/s",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "95% CI ms",
        "baseline p50 ms",
        "baseline CI ms",
        "p50 ms/sample",
        "95% CI ms/sample",
    }
)


def _columns(*headings: str) -> tuple[Column, ...]:
    return tuple(Column(heading, heading in _NUMERIC) for heading in headings)


def format_ms(value: float) -> str:
    """Four significant digits and no exponent: 0.0002134, 0.4123, 12.35, 1235."""
    if value == 0:
        return "0"
    decimals = max(0, 3 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def format_ratio(ratio: float) -> str:
    """Like 3.10x or 1.02x: two decimals, fewer from 10x on."""
    decimals = 2 if ratio < 10 else 1 if ratio < 100 else 0
    return f"{ratio:.{decimals}f}x"


def _interval(low: float, high: float) -> str:
    return f"{format_ms(low)}-{format_ms(high)}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _optional(value: float | None, pattern: str) -> str:
    return "" if value is None else format(value, pattern)


def _key_cells(key: VariantKey) -> tuple[str, ...]:
    return tuple(key.value(name) for name in KEY_FIELDS)


_KEY_HEADINGS: Final = tuple(_heading(name) for name in KEY_FIELDS)


def _p99(row: VariantRow) -> str:
    return format_ms(row.latency.p99_ms) + ("" if row.is_p99_reliable else "?")


def _noisy(row: VariantRow) -> str:
    return {True: "yes", False: "", None: "?"}[row.is_noisy]


def _variants_table(rows: Sequence[VariantRow]) -> Table:
    return Table(
        title=f"Variants ({len(rows)})",
        columns=_columns(
            *_KEY_HEADINGS,
            *("p50 ms", "95% CI ms", "p90 ms", "p99 ms", "samples/s", "cv", "iters", "noisy"),
            "device",
        ),
        rows=tuple(
            (
                *_key_cells(row.key),
                format_ms(row.latency.p50_ms),
                _interval(row.ci_low_ms, row.ci_high_ms),
                format_ms(row.latency.p90_ms),
                _p99(row),
                _optional(row.throughput_samples_per_s, ",.1f"),
                f"{row.latency.cv:.3f}",
                str(row.latency.count),
                _noisy(row),
                row.device_name or "",
            )
            for row in rows
        ),
        notes=(
            _CI_NOTE,
            "p99? : too few iterations beyond p99 for it to be reliable.",
            "noisy: IQR above 10 % of the median.",
        ),
        kind="detail",
    )


def _versus(entry: Ranked, fastest: Ranked, varies: Sequence[str], first: str) -> str:
    if entry is fastest:
        return first
    doubt = "" if entry.is_significant else " (CIs overlap)"
    return f"{format_ratio(entry.ratio)} {fastest.row.key.label(varies)}{doubt}"


def _comparison_table(title: str, comparison: Comparison) -> Table:
    varies = comparison.varies
    fastest = comparison.entries[0]
    return Table(
        title=f"{title}: {comparison.describe()}",
        columns=_columns(
            "#",
            *map(_heading, varies),
            *("p50 ms", "95% CI ms", "p99 ms", "samples/s", "device", "vs fastest"),
        ),
        rows=tuple(
            (
                str(place),
                *(entry.row.key.value(name) for name in varies),
                format_ms(entry.row.latency.p50_ms),
                _interval(entry.row.ci_low_ms, entry.row.ci_high_ms),
                _p99(entry.row),
                _optional(entry.row.throughput_samples_per_s, ",.1f"),
                entry.row.device_name or "",
                _versus(entry, fastest, varies, "fastest"),
            )
            for place, entry in enumerate(comparison.entries, start=1)
        ),
        notes=("vs fastest: ratio of p50; (CIs overlap): not told apart from noise.",),
    )


def _significance_note(best: BestConfiguration) -> str:
    varies = best.comparison.varies
    first, second = best.comparison.entries[:2]
    verdict, why = ("is", "CIs disjoint") if best.is_significant else ("is not", "CIs overlap")
    close = sum(not entry.is_significant for entry in best.comparison.entries[1:])
    return (
        f"{first.row.key.label(varies)} {verdict} significantly faster per sample than the "
        f"runner-up, {second.row.key.label(varies)} ({why}); "
        f"{_plural(close, 'configuration')} within noise of the best."
    )


def _best_table(best: BestConfiguration) -> Table:
    comparison = best.comparison
    varies = comparison.varies
    fastest, runner_up = comparison.entries[:2]
    picks = [("lowest p50/sample", fastest), ("runner-up", runner_up)]
    if best.highest_throughput is not None:
        top = next(entry for entry in comparison.entries if entry.row is best.highest_throughput)
        picks.append(("highest throughput", top))
    return Table(
        title=(
            f"Best configuration: {comparison.describe()} "
            f"({_plural(len(comparison.entries), 'configuration')})"
        ),
        columns=_columns(
            "pick",
            *map(_heading, varies),
            *("p50 ms/sample", "95% CI ms/sample", "p50 ms", "samples/s", "vs best"),
        ),
        rows=tuple(
            (
                pick,
                *(entry.row.key.value(name) for name in varies),
                format_ms(entry.row.p50_per_sample_ms),
                _interval(*entry.row.ci_per_sample_ms),
                format_ms(entry.row.latency.p50_ms),
                _optional(entry.row.throughput_samples_per_s, ",.1f"),
                _versus(entry, fastest, varies, "best"),
            )
            for pick, entry in picks
        ),
        notes=(_significance_note(best),),
    )


def _changes_table(title: str, changes: Sequence[Change], kind: TableKind = "main") -> Table | None:
    if not changes:
        return None
    return Table(
        title=f"{title} ({len(changes)})",
        columns=_columns(
            *_KEY_HEADINGS, "baseline p50 ms", "p50 ms", "change", "baseline CI ms", "95% CI ms"
        ),
        rows=tuple(
            (
                *_key_cells(change.current.key),
                format_ms(change.baseline.latency.p50_ms),
                format_ms(change.current.latency.p50_ms),
                f"{change.ratio - 1:+.1%} ({format_ratio(change.ratio)})",
                _interval(change.baseline.ci_low_ms, change.baseline.ci_high_ms),
                _interval(change.current.ci_low_ms, change.current.ci_high_ms),
            )
            for change in changes
        ),
        kind=kind,
    )


def _keys_table(title: str, keys: Sequence[VariantKey]) -> Table | None:
    if not keys:
        return None
    return Table(
        title=f"{title} ({len(keys)})",
        columns=_columns(*_KEY_HEADINGS),
        rows=tuple(_key_cells(key) for key in keys),
    )


def _baseline_tables(comparison: BaselineComparison) -> list[Table | None]:
    threshold = f"{comparison.threshold:.0%}"
    return [
        _changes_table(
            f"Regressions: p50 more than {threshold} slower, CIs disjoint",
            comparison.with_verdict("regression"),
            "alert",
        ),
        _changes_table(
            f"Improvements: p50 more than {threshold} faster, CIs disjoint",
            comparison.with_verdict("improvement"),
        ),
        _changes_table(
            f"Inconclusive: p50 changed by more than {threshold}, CIs overlap",
            comparison.with_verdict("inconclusive"),
        ),
        _keys_table("New: not in the baseline", comparison.new),
        _keys_table("Missing: measured in the baseline, not now", comparison.missing),
        _changes_table(
            f"Unchanged: within {threshold}", comparison.with_verdict("unchanged"), "detail"
        ),
    ]


def _named(ref: VariantRef | None) -> tuple[str, ...]:
    if ref is None:
        return ("", "", "", "")
    return ref.model, ref.precision, ref.quantization, str(ref.batch_size)


def _failures_table(failures: Sequence[FailedVariant]) -> Table | None:
    if not failures:
        return None
    return Table(
        title=f"Failed ({len(failures)})",
        columns=_columns(
            "cluster", "target", *_KEY_HEADINGS[2:], "job", "index", "attempts", "explanation"
        ),
        rows=tuple(
            (
                failed.cluster,
                failed.target,
                *_named(failed.variant),
                failed.job,
                str(failed.index),
                str(failed.attempts),
                failed.explanation,
            )
            for failed in failures
        ),
    )


def _summary(report: Report) -> tuple[str, ...]:
    lines = [f"{_plural(len(report.variants), 'variant')} measured, {len(report.failures)} failed."]
    if report.superseded:
        lines.append(
            f"{_plural(report.superseded, 'earlier run')} of the same variants left out: "
            "the latest finished run of a variant wins."
        )
    comparison = report.baseline
    if comparison is not None:
        regressions, improvements, inconclusive, unchanged = (
            len(comparison.with_verdict(verdict)) for verdict in _VERDICT_ORDER
        )
        lines.append(
            f"Against the baseline (threshold {comparison.threshold:.0%}): "
            f"{_plural(regressions, 'regression')}, {_plural(improvements, 'improvement')}, "
            f"{inconclusive} inconclusive, {unchanged} unchanged, "
            f"{len(comparison.new)} new, {len(comparison.missing)} missing."
        )
    return tuple(lines)


def lay_out(report: Report) -> Layout:
    """The tables every human-readable format shows, alerts first, in a fixed order."""
    regressions = report.baseline.with_verdict("regression") if report.baseline else ()
    tables: list[Table | None] = [
        *(_baseline_tables(report.baseline) if report.baseline else []),
        _failures_table(report.failures),
        *(_comparison_table("By target", comparison) for comparison in report.by_target),
        *map(_best_table, report.best_configurations),
        *(_comparison_table("Ranking", comparison) for comparison in report.rankings),
        _variants_table(report.variants) if report.variants else None,
    ]
    return Layout(
        title=f"benchfleet report: {', '.join(report.workflows) or 'no runs'}",
        headline=(
            f"{_plural(len(regressions), 'regression')} against the baseline"
            if regressions
            else None
        ),
        summary=_summary(report),
        tables=tuple(table for table in tables if table is not None),
    )


def _aligned(table: Table) -> list[str]:
    rows = [tuple(column.heading for column in table.columns), *table.rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(table.columns))]
    return [
        "  ".join(
            cell.rjust(width) if column.is_numeric else cell.ljust(width)
            for cell, width, column in zip(row, widths, table.columns, strict=True)
        ).rstrip()
        for row in rows
    ]


def to_text(report: Report) -> str:
    """For a terminal: fixed-width columns, alerts marked with !!."""
    layout = lay_out(report)
    lines = [layout.title, "=" * len(layout.title)]
    if layout.headline:
        lines.append(f"!! {layout.headline.upper()}")
    lines.extend(layout.summary)
    for table in layout.tables:
        title = f"!! {table.title}" if table.kind == "alert" else table.title
        lines.extend(["", title, "-" * len(title), *_aligned(table), *table.notes])
    return "\n".join(lines) + "\n"


_MARKDOWN_SPECIAL: Final = str.maketrans(
    {
        **{char: f"\\{char}" for char in "\\`*_[]|~#"},
        "<": "&lt;",
        ">": "&gt;",
        "&": "&amp;",
        "\n": " ",
    }
)


def _md(text: str) -> str:
    # Model names come from users: no cell may end the table, open a link or inject HTML.
    return text.translate(_MARKDOWN_SPECIAL)


def _markdown_table(table: Table) -> list[str]:
    def line(cells: Iterable[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    return [
        line(_md(column.heading) for column in table.columns),
        line("---:" if column.is_numeric else "---" for column in table.columns),
        *(line(map(_md, row)) for row in table.rows),
        *(text for note in table.notes for text in ("", f"_{_md(note)}_")),
    ]


def _markdown_section(table: Table) -> list[str]:
    if table.kind == "detail":
        return [
            "",
            f"<details><summary>{html.escape(table.title)}</summary>",
            "",
            *_markdown_table(table),
            "",
            "</details>",
        ]
    marker = "🔴 " if table.kind == "alert" else ""
    return ["", f"### {marker}{_md(table.title)}", "", *_markdown_table(table)]


def to_markdown(report: Report) -> str:
    """For a pull-request comment: GitHub tables, regressions first under a red marker."""
    layout = lay_out(report)
    lines = [f"## {_md(layout.title)}", ""]
    if layout.headline:
        lines.extend([f"🔴 **{_md(layout.headline)}**", ""])
    lines.append("  \n".join(map(_md, layout.summary)))
    for table in layout.tables:
        lines.extend(_markdown_section(table))
    return "\n".join(lines) + "\n"


CSV_COLUMNS: Final = (
    "status",
    *KEY_FIELDS,
    "variant_id",
    "job",
    "finished_at",
    "device_name",
    "iterations",
    "p50_ms",
    "ci_low_ms",
    "ci_high_ms",
    "p50_per_sample_ms",
    "min_ms",
    "p25_ms",
    "p75_ms",
    "p90_ms",
    "p99_ms",
    "max_ms",
    "p99_reliable",
    "cv",
    "noisy",
    "throughput_samples_per_s",
    "baseline_p50_ms",
    "change_ratio",
    "verdict",
    "explanation",
)
"""`to_csv`'s header; columns are only ever added at the end."""


def _csv_measured(row: VariantRow, change: Change | None) -> dict[str, object]:
    latency = row.latency
    return {
        "status": "measured",
        **asdict(row.key),
        "variant_id": row.variant_id,
        "job": row.job,
        "finished_at": row.finished_at,
        "device_name": row.device_name,
        "iterations": latency.count,
        "p50_ms": latency.p50_ms,
        "ci_low_ms": row.ci_low_ms,
        "ci_high_ms": row.ci_high_ms,
        "p50_per_sample_ms": row.p50_per_sample_ms,
        "min_ms": latency.min_ms,
        "p25_ms": latency.p25_ms,
        "p75_ms": latency.p75_ms,
        "p90_ms": latency.p90_ms,
        "p99_ms": latency.p99_ms,
        "max_ms": latency.max_ms,
        "p99_reliable": row.is_p99_reliable,
        "cv": latency.cv,
        "noisy": row.is_noisy,
        "throughput_samples_per_s": row.throughput_samples_per_s,
        **(
            {
                "baseline_p50_ms": change.baseline.latency.p50_ms,
                "change_ratio": change.ratio,
                "verdict": change.verdict,
            }
            if change
            else {}
        ),
    }


def _csv_failed(failed: FailedVariant) -> dict[str, object]:
    ref = failed.variant
    return {
        "status": "failed",
        "cluster": failed.cluster,
        "target": failed.target,
        **(
            {
                "model": ref.model,
                "precision": ref.precision,
                "quantization": ref.quantization,
                "batch_size": ref.batch_size,
                "variant_id": ref.id,
            }
            if ref
            else {}
        ),
        "job": failed.job,
        "explanation": failed.explanation,
    }


def to_csv(report: Report) -> str:
    """One row per variant of this run, measured then failed, with the columns CSV_COLUMNS.

    The baseline columns are empty for a variant the baseline lacks (and for all without one);
    variants missing since the baseline are not rows here, since they did not run.
    """
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    baseline = report.baseline
    changes = {change.current.key: change for change in baseline.changes} if baseline else {}
    writer.writerows(_csv_measured(row, changes.get(row.key)) for row in report.variants)
    writer.writerows(map(_csv_failed, report.failures))
    return buffer.getvalue()


def _json_default(value: object) -> object:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    raise TypeError(f"{type(value).__name__} is not part of a report")


def to_json(report: Report) -> str:
    """The whole report, keys sorted, for other tools; `schema_version` says its shape."""
    document = {"schema_version": REPORT_SCHEMA_VERSION, **asdict(report)}
    return json.dumps(document, default=_json_default, sort_keys=True, indent=2) + "\n"
