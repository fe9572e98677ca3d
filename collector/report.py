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

from collector.store import StoredRun
from contract.result import LatencyStats, OkResult
from contract.variant import SETTING_FIELDS, VariantRef

REPORT_SCHEMA_VERSION: Final = 1
"""Bumped when a field of `to_json`'s output changes meaning or goes away."""
NOTCH_FACTOR: Final = 1.57
"""McGill, Tukey & Larsen's notch constant, as matplotlib uses it (R's boxplot uses 1.58)."""
DEFAULT_REGRESSION_THRESHOLD: Final = 0.05

Verdict = Literal["regression", "improvement", "inconclusive", "unchanged"]
"""A change beyond the threshold is a regression or improvement only when the CIs are
disjoint; otherwise it is inconclusive."""
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
        return ", ".join(f"{heading(name)} {value}" for name, value in self.fixed)


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
            VERDICT_ORDER[change.verdict],
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
