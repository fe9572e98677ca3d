"""A Report as people read it: the tables every format shares (`lay_out`), and text for a
terminal, Markdown for a pull request, CSV and JSON for other tools. The same report always
gives the same bytes, so a rendered report can be committed and diffed."""

import csv
import html
import io
import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Final, Literal

from pydantic import BaseModel

from contract.accuracy import Accuracy
from contract.pricing import INFERENCES
from contract.result import ENERGY_ON_CPU
from contract.text import plural, shown
from contract.variant import VariantRef
from report.answers import Against, Answer, answers
from report.cost import Costs, TargetCost, VariantCost, costs
from report.intervals import Ratio
from report.model import (
    KEY_FIELDS,
    REPORT_SCHEMA_VERSION,
    VERDICT_ORDER,
    AxisComparison,
    AxisEntry,
    BaselineComparison,
    BestConfiguration,
    Change,
    Comparison,
    FailedVariant,
    JobSummary,
    Ranked,
    Report,
    VariantKey,
    VariantRow,
    heading,
)
from report.startup import Startup
from report.verdict import run_verdict, verdict_lines

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
    "95% CI of the median: from every iteration's time (order statistics, distribution-free) "
    "where the result carries them; ≈ marks the IQR approximation for results without samples. "
    "Ratios combine both sides' uncertainty (Price & Bonett 2002); a paired one comes from "
    "rounds alternating the two in one pod (benchmark.interleave), each round compared within "
    "itself; over repeats, the median of the runs' paired ratios, its CI spanning all of theirs."
)
_ACCURACY_NOTE: Final = (
    "accuracy: the outputs against the untouched program's fp32 outputs on the same inputs, "
    "judged by the variant's gate (docs/runner.md): passed, accuracy_failed (it computes "
    "something else: measured and stored, never the best), or not measured (never taken for "
    "passing)."
)
_FLAGS_NOTE: Final = (
    "flags: the runner's validity flags (noisy, contended, throttled, stopped early); a "
    "flagged run never decides a comparison."
)


_NUMERIC: Final = frozenset(
    {
        "#",
        "batch",
        "index",
        "attempts",
        "measured",
        "failed",
        "iters",
        "cv",
        "change",
        "samples/s (p50)",
        "ratio",
        "95% CI",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "95% CI ms",
        "baseline p50 ms",
        "baseline CI ms",
        "p50 ms/sample",
        "95% CI ms/sample",
        "n",
        "median s",
        "max s",
        "file",
        "peak RSS median",
        "peak RSS max",
        "max / file",
    }
)


def _columns(*headings: str) -> tuple[Column, ...]:
    return tuple(Column(heading, heading in _NUMERIC) for heading in headings)


def _significant(value: float, digits: int) -> str:
    """`digits` significant digits and no exponent."""
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def format_ms(value: float) -> str:
    """Four significant digits and no exponent: 0.0002134, 0.4123, 12.35, 1235."""
    return _significant(value, 4)


def format_ratio(ratio: float) -> str:
    """Like 3.10x or 1.02x: two decimals, fewer from 10x on, and three significant digits
    below 0.1x (0.0031x), which two decimals would show as 0.00x."""
    if 0 < ratio < 0.1:
        return f"{ratio:.3g}x"
    decimals = 2 if ratio < 10 else 1 if ratio < 100 else 0
    return f"{ratio:.{decimals}f}x"


def format_finished(text: str | None) -> str:
    """A finish time to the minute, in UTC: 2026-12-03 05:59Z; "-" for none."""
    if text is None:
        return "-"
    moment = datetime.fromisoformat(text)
    moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    return f"{moment:%Y-%m-%d %H:%M}Z"


def _interval(low: float, high: float) -> str:
    return f"{format_ms(low)}-{format_ms(high)}"


def _row_interval(row: VariantRow, low: float, high: float) -> str:
    approximate = "≈" if row.estimate.method == "IQR approximation" else ""
    return approximate + _interval(low, high)


def _ratio_interval(ratio: Ratio) -> str:
    paired = " paired" if ratio.paired else ""
    return f"{format_ratio(ratio.low)}-{format_ratio(ratio.high)}{paired}"


def _direction(ratio: Ratio, doubts: Sequence[str], than: str) -> str:
    """The ratio in words, claiming no more than the interval and the flags allow."""
    if doubts:
        return "inconclusive: " + "; ".join(doubts)
    if not ratio.excludes_one:
        return f"no difference from {than} beyond noise"
    if ratio.value < 1:
        return f"{format_ratio(1 / ratio.value)} faster than {than}"
    return f"{format_ratio(ratio.value)} slower than {than}"


def _gated(words: str, row: VariantRow) -> str:
    """Words on a row's speed that say so where the row is outside its accuracy gate: a
    variant that computes something else is never called faster, or fastest, without it."""
    if row.accuracy.state != "accuracy_failed":
        return words
    return f"{words}; accuracy_failed: outside its gate"


def key_cells(key: VariantKey) -> tuple[str, ...]:
    """A variant's key as the first cells of a row of any table of variants."""
    return tuple(key.value(name) for name in KEY_FIELDS)


KEY_HEADINGS: Final = tuple(heading(name) for name in KEY_FIELDS)
"""The headings of `key_cells`' columns."""


def _no_variant(cluster: str, target: str) -> tuple[str, ...]:
    """The key cells of a run that names no variant: its cluster and target, "-" for the rest."""
    return (cluster, target, *("-",) * (len(KEY_FIELDS) - 2))


def _p99(row: VariantRow) -> str:
    return format_ms(row.latency.p99_ms) + ("" if row.is_p99_reliable else "?")


def _flags(row: VariantRow) -> str:
    return "; ".join(row.doubts)


def _runs(row: VariantRow) -> str:
    """How many runs the row's number is the median of, and how far they spread."""
    if row.repeats is None:
        return "1"
    return f"{len(row.repeats.p50s_ms)} runs, spread ±{row.repeats.spread:.1%}"


_RUNS_NOTE: Final = (
    "runs: where the spec repeats a variant (benchmark.repeats), its p50 is the median of its "
    "runs' p50s and the other numbers the median run's; the spread is their largest p50 over "
    "their smallest, less 1. A difference within either side's spread is inconclusive."
)


def _variants_table(rows: Sequence[VariantRow]) -> Table:
    # Shown only where a variant ran more than once: a report without repeats is unchanged.
    repeated = any(row.repeats for row in rows)
    return Table(
        title=f"Variants ({len(rows)})",
        columns=_columns(
            *KEY_HEADINGS,
            *("p50 ms", "95% CI ms", "p90 ms", "p99 ms", "samples/s (p50)", "cv", "iters"),
            *(("runs",) if repeated else ()),
            *("quantized", "accuracy", "flags", "device", "job", "finished"),
        ),
        rows=tuple(
            (
                *key_cells(row.key),
                format_ms(row.latency.p50_ms),
                _row_interval(row, row.ci_low_ms, row.ci_high_ms),
                format_ms(row.latency.p90_ms),
                _p99(row),
                f"{row.samples_per_s:,.1f}",
                f"{row.latency.cv:.3f}",
                str(row.latency.count),
                *((_runs(row),) if repeated else ()),
                row.quantized or "",
                row.accuracy.describe(),
                _flags(row),
                row.device_name or "",
                row.job,
                format_finished(row.finished_at),
            )
            for row in rows
        ),
        notes=(
            _CI_NOTE,
            "p99? : too few iterations beyond p99 for it to be reliable.",
            "samples/s (p50): batch size over the median latency, the statistic of every table.",
            _FLAGS_NOTE,
            "job, finished: the run the number comes from (UTC).",
            "quantized: the layers the quantization reached, as the runner proved it; the "
            "others ran in the precision (an int8 label over mostly fp32 compute).",
            _ACCURACY_NOTE,
            *((_RUNS_NOTE,) if repeated else ()),
        ),
        kind="detail",
    )


def _flagged_table(rows: Sequence[VariantRow]) -> Table | None:
    flagged = [row for row in rows if row.doubts]
    if not flagged:
        return None
    return Table(
        title=f"Flagged ({len(flagged)}): why these runs decide nothing",
        columns=_columns(*KEY_HEADINGS, "flags", "why"),
        rows=tuple(
            (*key_cells(row.key), _flags(row), "; ".join(row.flag_reasons)) for row in flagged
        ),
        notes=(
            "why: the runner's own reasons, measured during the timed loop (docs/runner.md). "
            "Every comparison with these runs is inconclusive.",
        ),
        kind="detail",
    )


def _versus(entry: Ranked, fastest: Ranked, varies: Sequence[str], first: str) -> str:
    if entry is fastest:
        return _gated(first, entry.row)
    than = fastest.row.key.label(varies)
    words = f"{_direction(entry.ratio, entry.doubts, than)} [{_ratio_interval(entry.ratio)}]"
    return _gated(words, entry.row)


def _comparison_table(title: str, comparison: Comparison) -> Table:
    varies = comparison.varies
    fastest = comparison.entries[0]
    return Table(
        title=f"{title}: {comparison.describe()}",
        columns=_columns(
            "#",
            *map(heading, varies),
            *("p50 ms", "95% CI ms", "p99 ms", "samples/s (p50)", "device", "vs fastest"),
            "accuracy",
        ),
        rows=tuple(
            (
                str(place),
                *(entry.row.key.value(name) for name in varies),
                format_ms(entry.row.latency.p50_ms),
                _row_interval(entry.row, entry.row.ci_low_ms, entry.row.ci_high_ms),
                _p99(entry.row),
                f"{entry.row.samples_per_s:,.1f}",
                entry.row.device_name or "",
                _versus(entry, fastest, varies, "fastest"),
                entry.row.accuracy.describe(),
            )
            for place, entry in enumerate(comparison.entries, start=1)
        ),
        notes=("vs fastest: ratio of p50 per sample with its 95% CI.", _ACCURACY_NOTE),
    )


def _significance_note(best: BestConfiguration) -> str:
    varies = best.comparison.varies
    first, second = best.comparison.entries[:2]
    if best.is_significant:
        verdict, why = "is", "the ratio's CI excludes 1"
    elif second.doubts:
        verdict, why = "cannot be said to be", "; ".join(second.doubts)
    elif second.ratio.value < 1:
        verdict, why = "is not", f"the runner-up is {second.row.accuracy.state}"
    else:
        verdict, why = "is not", "the ratio's CI includes 1"
    close = sum(not entry.is_significant for entry in best.comparison.entries[1:])
    return (
        f"{first.row.key.label(varies)} {verdict} faster per sample than the "
        f"runner-up, {second.row.key.label(varies)} ({why}); "
        f"{plural(close, 'configuration')} not told apart from the best."
    )


def _accuracy_note(best: BestConfiguration) -> str | None:
    """What the pick means for accuracy, where it is not simply within its gate."""
    varies = best.comparison.varies
    first = best.comparison.entries[0]
    state = first.row.accuracy.state
    if state == "accuracy_failed":
        return "No configuration is within its accuracy gate: the best is fastest by speed alone."
    if state == "not measured":
        return (
            f"{first.row.key.label(varies)}: accuracy not measured; it is best by speed among "
            "those not known to fail their gate."
        )
    failed = best.faster_but_failed
    if not failed:
        return None
    return (
        f"{plural(len(failed), 'configuration')} faster than the best "
        f"({', '.join(entry.row.key.label(varies) for entry in failed)}) "
        f"{'misses' if len(failed) == 1 else 'miss'} its accuracy gate: accuracy_failed."
    )


def _best_table(best: BestConfiguration) -> Table:
    comparison = best.comparison
    varies = comparison.varies
    fastest, runner_up = comparison.entries[:2]
    picks = [
        ("lowest p50/sample", fastest),
        ("runner-up", runner_up),
        *(("faster, accuracy_failed", entry) for entry in best.faster_but_failed),
    ]
    accuracy = _accuracy_note(best)
    return Table(
        title=(
            f"Best configuration: {comparison.describe()} "
            f"({plural(len(comparison.entries), 'configuration')})"
        ),
        columns=_columns(
            "pick",
            *map(heading, varies),
            *("p50 ms/sample", "95% CI ms/sample", "p50 ms", "samples/s (p50)", "vs best"),
            "accuracy",
        ),
        rows=tuple(
            (
                pick,
                *(entry.row.key.value(name) for name in varies),
                format_ms(entry.row.p50_per_sample_ms),
                _row_interval(entry.row, *entry.row.ci_per_sample_ms),
                format_ms(entry.row.latency.p50_ms),
                f"{entry.row.samples_per_s:,.1f}",
                _versus(entry, fastest, varies, "best"),
                entry.row.accuracy.describe(),
            )
            for pick, entry in picks
        ),
        notes=(
            _significance_note(best),
            *((accuracy,) if accuracy else ()),
            f"{_ACCURACY_NOTE} The best is the fastest within its gate.",
        ),
    )


def _changes_table(title: str, changes: Sequence[Change], kind: TableKind = "main") -> Table | None:
    if not changes:
        return None
    return Table(
        title=f"{title} ({len(changes)})",
        columns=_columns(
            *KEY_HEADINGS,
            *("baseline p50 ms", "p50 ms", "change", "ratio", "95% CI", "accuracy", "why"),
        ),
        rows=tuple(
            (
                *key_cells(change.current.key),
                format_ms(change.baseline.latency.p50_ms),
                format_ms(change.current.latency.p50_ms),
                f"{change.ratio.value - 1:+.1%}",
                format_ratio(change.ratio.value),
                _ratio_interval(change.ratio),
                _accuracy_change(change),
                "; ".join(change.doubts),
            )
            for change in changes
        ),
        notes=(
            "accuracy: the variant's now, and in the baseline where that differs: a change in "
            "speed of a variant outside its gate is one of something else.",
        ),
        kind=kind,
    )


def _accuracy_change(change: Change) -> str:
    now, before = change.current.accuracy, change.baseline.accuracy
    if now.state == before.state:
        return now.describe()
    return f"{now.describe()}; baseline: {before.state}"


def _keys_table(title: str, keys: Sequence[VariantKey]) -> Table | None:
    if not keys:
        return None
    return Table(
        title=f"{title} ({len(keys)})",
        columns=_columns(*KEY_HEADINGS),
        rows=tuple(key_cells(key) for key in keys),
    )


REUSED: Final = "reused, same run"
"""What a variant whose number is the baseline's own run shows instead of a change."""


def _reused_table(rows: Sequence[VariantRow]) -> Table | None:
    if not rows:
        return None
    return Table(
        title=f"Reused: the baseline's own run, not measured again ({len(rows)})",
        columns=_columns(*KEY_HEADINGS, "p50 ms", "job", "change"),
        rows=tuple(
            (*key_cells(row.key), format_ms(row.latency.p50_ms), " ".join(row.run_jobs), REUSED)
            for row in rows
        ),
        notes=(
            "The current spec revision reuses these results instead of running the variants "
            "again (docs/synth.md, incremental sweeps): there is nothing to compare.",
        ),
        kind="detail",
    )


def _baseline_tables(comparison: BaselineComparison) -> list[Table | None]:
    threshold = f"{comparison.threshold:.0%}"
    return [
        _changes_table(
            f"Regressions: p50 more than {threshold} slower, beyond noise",
            comparison.with_verdict("regression"),
            "alert",
        ),
        _changes_table(
            f"Improvements: p50 more than {threshold} faster, beyond noise",
            comparison.with_verdict("improvement"),
        ),
        _changes_table(
            f"Inconclusive: the 95% CI reaches past {threshold} and 1, or a run is flagged",
            comparison.with_verdict("inconclusive"),
        ),
        _keys_table("New: not in the baseline", comparison.new),
        _keys_table("Missing: measured in the baseline, not now", comparison.missing),
        _changes_table(
            f"Unchanged: the whole 95% CI within {threshold}",
            comparison.with_verdict("unchanged"),
            "detail",
        ),
        _reused_table(comparison.reused),
    ]


def _named(ref: VariantRef | None) -> tuple[str, ...]:
    if ref is None:
        return ("", "", "", "", "")
    return ref.model, ref.precision, ref.quantization, str(ref.batch_size), ref.compile


def _failures_table(failures: Sequence[FailedVariant]) -> Table | None:
    if not failures:
        return None
    return Table(
        title=f"Failed ({len(failures)})",
        columns=_columns(
            "cluster",
            "target",
            *KEY_HEADINGS[2:],
            *("job", "index", "attempts", "finished", "explanation"),
        ),
        rows=tuple(
            (
                failed.cluster,
                failed.target,
                *_named(failed.variant),
                failed.job,
                str(failed.index),
                str(failed.attempts),
                format_finished(failed.finished_at),
                failed.explanation,
            )
            for failed in failures
        ),
    )


def _jobs_table(jobs: Sequence[JobSummary]) -> Table:
    return Table(
        title=f"Jobs ({len(jobs)})",
        columns=_columns(
            *("cluster", "target", "job", "spec", "finished", "measured", "failed", "reported")
        ),
        rows=tuple(
            (
                job.cluster,
                job.target,
                job.job,
                (job.spec_sha256 or "")[:12],
                format_finished(job.finished_at) + (" (ahead)" if job.finished_ahead else ""),
                str(job.measured),
                str(job.failed),
                "yes" if job.reported else "no",
            )
            for job in jobs
        ),
        notes=(
            "One Job per target and spec revision, newest first (what dist/ runs, then by spec "
            "revision in git: never by finish times); spec: the spec file's sha256, finished: "
            "when its last variant finished (UTC), as its node's clock said; ahead: later than "
            "the collector stored it, or than now.",
        ),
        kind="detail",
    )


def format_bytes(count: int) -> str:
    """Like 97.7 MiB or 3.61 GiB: binary units, three significant digits."""
    value, unit = float(count), "bytes"
    for larger in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, larger
    return f"{count} bytes" if unit == "bytes" else f"{_significant(value, 3)} {unit}"


_STARTUP_NOTE: Final = (
    "Each phase's median and longest, counted where it is paid: a pod's start once per pod, a "
    "model's file and torch.export.load once per model and pod (its first variant there), "
    "the rest per variant. Waiting for a node and the pod's start come from the pod's status "
    "(whole seconds: the node's image pulls, an oci model's too, are in the pod's start); the "
    "rest from the runner. To first measurement: from getting a node to the first timed loop."
)


def _startup_table(startup: Startup) -> Table | None:
    if not startup.phases:
        return None  # runs of runners and collectors before the start-up timings
    share = (
        f"measurement {startup.measured_share:.0%} of their wall time"
        if startup.measured_share is not None
        else "their wall time unknown"
    )
    return Table(
        title=(
            f"Start-up on {startup.target} ({startup.cluster}): "
            f"{plural(startup.pods, 'pod')}, {share}"
        ),
        columns=_columns("phase", "per", "n", "median s", "max s"),
        rows=tuple(
            (
                phase.phase,
                phase.per,
                str(phase.count),
                _significant(phase.median_s, 3),
                _significant(phase.max_s, 3),
            )
            for phase in startup.phases
        ),
        notes=(_STARTUP_NOTE,),
        kind="detail",
    )


def _memory_table(startup: Startup) -> Table | None:
    if not startup.memory:
        return None
    return Table(
        title=f"Memory on {startup.target} ({startup.cluster}): the runner's peak RSS per model",
        columns=_columns("model", "file", "n", "peak RSS median", "peak RSS max", "max / file"),
        rows=tuple(
            (
                memory.model,
                format_bytes(memory.file_bytes) if memory.file_bytes is not None else "-",
                str(memory.variants),
                format_bytes(memory.median_peak_rss_bytes),
                format_bytes(memory.max_peak_rss_bytes),
                format_ratio(ratio) if (ratio := memory.max_over_file) is not None else "-",
            )
            for memory in startup.memory
        ),
        notes=(
            "The runner process's peak resident memory (the kernel's VmHWM) in the variants of "
            "each model, against the size of the model's .pt2: torch itself takes a few "
            "hundred MiB, and a pod running several models holds each it loaded.",
        ),
        kind="detail",
    )


def _listed(values: Sequence[str], most: int = 3) -> str:
    listed = ", ".join(values[:most])
    return f"{listed} (+{len(values) - most})" if len(values) > most else listed or "-"


def _provenance_table(jobs: Sequence[JobSummary]) -> Table:
    """Where the reported numbers come from: enough to rerun them, or to doubt them."""
    reported = [job for job in jobs if job.reported]
    return Table(
        title="Provenance",
        columns=_columns(
            *(
                "cluster",
                "target",
                "job",
                "spec file",
                "spec",
                "commit",
                "image",
                "torch",
                "device",
                "nodes",
                "runs",
            )
        ),
        rows=tuple(
            (
                job.cluster,
                job.target,
                job.job,
                job.spec_file or "-",
                (job.spec_sha256 or "")[:12] or "-",
                (job.spec_commit or "")[:12] or "-",
                job.image or "-",
                _listed(job.torch),
                _listed(job.devices),
                _listed(job.nodes),
                f"{format_finished(job.first_finished_at)} to {format_finished(job.finished_at)}",
            )
            for job in reported
        ),
        notes=(
            "Per reported Job: the spec file, its sha256 and the git commit holding those "
            "bytes (- where none of its last 50 does), the runner image its pods ran, "
            "the torch, devices and nodes its results report, and when its first and last "
            "variants finished (UTC).",
        ),
        kind="detail",
    )


def _axis_table(comparison: AxisComparison) -> Table:
    axis = comparison.axis
    entries = comparison.entries
    held = [
        name
        for name in KEY_FIELDS
        if name != axis and len({entry.row.key.value(name) for entry in entries}) > 1
    ]
    references = {entry.reference.key.label((axis,)) for entry in entries}
    against = f"against {references.pop()}" if len(references) == 1 else "against the first"
    return Table(
        title=f"{heading(axis).capitalize()}: each {against}, other settings held fixed",
        columns=_columns(
            *map(heading, held),
            heading(axis),
            "vs",
            *("p50 ms/sample", "ratio", "95% CI", "max rel error", "1 - cosine", "accuracy"),
            "verdict",
        ),
        rows=tuple(_axis_row(entry, axis, held) for entry in entries),
        notes=(
            "ratio: p50 per sample over the reference's; the verdict claims a direction only "
            "when the 95% CI excludes 1 and neither run is flagged.",
            "max rel error, 1 - cosine: the worst output's error against the untouched "
            "program's fp32 outputs, then the reference's in brackets: what the speed costs "
            "in accuracy. accuracy: the variant's gate's verdict on it.",
        ),
    )


def _errors(entry: AxisEntry, axis: str) -> tuple[str, str]:
    """The row's max relative error and 1 - cosine, each beside the reference's."""
    reference = entry.reference.key.label((axis,))
    first, second = (
        f"{_error(entry.row, measure)} ({reference}: {_error(entry.reference, measure)})"
        for measure in (_max_rel_error, _cosine_distance)
    )
    return first, second


def _max_rel_error(accuracy: Accuracy) -> float | None:
    return accuracy.max_rel_error


def _cosine_distance(accuracy: Accuracy) -> float | None:
    # An output identical in direction can read a cosine a rounding above 1.
    return None if accuracy.cosine is None else max(0.0, 1 - accuracy.cosine)


def _error(row: VariantRow, measure: Callable[[Accuracy], float | None]) -> str:
    """One error of the row's outputs, two significant digits; "-" where not measured."""
    accuracy = row.accuracy.accuracy
    value = measure(accuracy) if accuracy is not None and accuracy.measured else None
    return "-" if value is None else f"{value:.2g}"


def _axis_row(entry: AxisEntry, axis: str, held: Sequence[str]) -> tuple[str, ...]:
    reference = entry.reference.key.value(axis)
    return (
        *(entry.row.key.value(name) for name in held),
        entry.row.key.value(axis),
        reference,
        format_ms(entry.row.p50_per_sample_ms),
        format_ratio(entry.ratio.value),
        _ratio_interval(entry.ratio),
        *_errors(entry, axis),
        entry.row.accuracy.state,
        _gated(
            _direction(entry.ratio, entry.doubts, entry.reference.key.label((axis,))), entry.row
        ),
    )


def _selection(report: Report) -> str | None:
    """Which Jobs the numbers come from, and how to see the others."""
    left_out = sum(not job.reported for job in report.jobs)
    if report.selection == "all":
        return (
            f"Every revision combined ({plural(len(report.jobs), 'Job')}): each variant from "
            "the newest Job that ran it, named in its row."
        )
    if report.selection == "named":
        names = sorted({job.job for job in report.jobs if job.reported})
        left = plural(left_out, "other Job")
        return f"Only the Jobs asked for ({', '.join(names)}); {left} left out."
    if not left_out:
        return None
    return (
        f"The newest Job of each target; {plural(left_out, 'older Job')} left out "
        "(collector report --job NAME reports one, --all-revisions combines them)."
    )


def _about(jobs: Sequence[JobSummary]) -> list[str]:
    """Each workflow's description and owner, as its newest reported Job's record says."""
    lines, seen = [], set()
    for job in jobs:
        if job.reported and job.description and job.workflow not in seen:
            seen.add(job.workflow)
            # From a record in results/, which a pull request may have edited.
            owner = f" (owner: {shown(job.owner)})" if job.owner else ""
            lines.append(f"{shown(job.workflow)}: {shown(job.description)}{owner}")
    return lines


def _summary(report: Report, found: Costs) -> tuple[str, ...]:
    lines = [
        *verdict_lines(run_verdict(report)),
        *map(answer_line, answers(report)),
        *_about(report.jobs),
    ]
    lines.append(
        f"{plural(len(report.variants), 'variant')} measured, {len(report.failures)} failed."
    )
    lines.extend(_cost_summary(found))
    selection = _selection(report)
    if selection:
        lines.append(selection)
    ahead = [job.job for job in report.jobs if job.finished_ahead]
    if ahead:
        lines.append(
            f"{plural(len(ahead), 'Job')} ({', '.join(ahead)}) report finish times in the "
            "future, their nodes' clocks ahead: finish times decide nothing here."
        )
    if report.superseded:
        lines.append(
            f"{plural(report.superseded, 'earlier run')} of the same variants left out: "
            "the newest Job's run of a variant wins."
        )
    comparison = report.baseline
    if comparison is not None:
        regressions, improvements, inconclusive, unchanged = (
            len(comparison.with_verdict(verdict)) for verdict in VERDICT_ORDER
        )
        lines.append(
            f"Against the baseline (threshold {comparison.threshold:.0%}): "
            f"{plural(regressions, 'regression')}, {plural(improvements, 'improvement')}, "
            f"{inconclusive} inconclusive, {unchanged} unchanged, "
            f"{len(comparison.new)} new, {len(comparison.missing)} missing"
            + (f", {len(comparison.reused)} {REUSED}." if comparison.reused else ".")
        )
        lines.extend(_outside_gate_now(comparison.changes))
    return tuple(lines)


def _outside_gate_now(changes: Sequence[Change]) -> list[str]:
    """The changes of variants outside their accuracy gate now, counted: a change of speed
    of something that computes otherwise, and perhaps a change of accuracy itself."""
    failing = [change for change in changes if change.current.accuracy.state == "accuracy_failed"]
    if not failing:
        return []
    newly = sum(change.baseline.accuracy.state == "passed" for change in failing)
    return [
        f"{plural(len(failing), 'changed variant')} outside "
        f"{'its' if len(failing) == 1 else 'their'} accuracy gate now ({newly} within it in "
        "the baseline): the changes tables' accuracy column says by how much."
    ]


def _speedup(against: Against, role: str) -> str:
    """How much faster the best is than another configuration, claiming no more than the
    interval and the flags allow."""
    other = f"{role} {against.configuration}"
    ratio = against.ratio
    measured = f"{format_ratio(ratio.value)}, 95% CI {_ratio_interval(ratio)}"
    # A flagged pair still says what it measured: on a shared node every run is flagged,
    # and "by how much" is asked there too.
    if against.doubts:
        return f"not told apart from {other} ({measured}): {'; '.join(against.doubts)}"
    if not ratio.excludes_one:
        return f"not told apart from {other} beyond noise ({measured} includes 1)"
    if ratio.value < 1:
        slower = Ratio(1 / ratio.value, 1 / ratio.high, 1 / ratio.low, ratio.paired)
        return (
            f"{format_ratio(slower.value)} slower than {other} (95% CI "
            f"{_ratio_interval(slower)}), whose accuracy is {against.accuracy}"
        )
    return (
        f"{format_ratio(ratio.value)} faster than {other} (95% CI {_ratio_interval(ratio)}), "
        "beyond noise"
    )


def answer_line(answer: Answer) -> str:
    """The answer in one sentence: which configuration, by how much, how sure."""
    where = f"{answer.model} on {answer.target} ({answer.cluster})"
    speed = (
        f"{format_ms(answer.p50_per_sample_ms)} ms/sample "
        f"(95% CI {_interval(*answer.ci_per_sample_ms)})"
    )
    if answer.accuracy == "accuracy_failed":
        return (
            f"{where}: none of its {answer.configurations} configurations is within its "
            f"accuracy gate, so none is the best; the fastest by speed alone is {answer.best}, "
            f"{speed}."
        )
    lead = (
        "fastest within its accuracy gate"
        if answer.accuracy == "passed"
        else "fastest of those not known to fail their accuracy gate (not measured)"
    )
    parts = [f"{where}: {lead} is {answer.best}, {speed}"]
    plain = answer.untouched
    runner_up = answer.runner_up
    if runner_up is None:
        standing = "within" if answer.accuracy == "passed" else "not known to fail"
        parts.append(f"the only one of its {answer.configurations} configurations {standing} it")
    elif plain is not None and plain.variant_id == runner_up.variant_id:
        parts.append(_speedup(runner_up, "the runner-up, the untouched"))
        plain = None
    else:
        parts.append(_speedup(runner_up, "the runner-up,"))
    if plain is not None:
        parts.append(_speedup(plain, "the untouched"))
    sentence = "; ".join(parts) + "."
    faster = answer.faster_outside_gate
    if faster:
        named = ", ".join(
            f"{against.configuration} ({format_ratio(1 / against.ratio.value)} faster)"
            for against in faster
        )
        sentence += f" Faster, but outside their accuracy gate: {named}."
    if answer.not_measured and answer.accuracy == "passed":
        sentence += (
            f" Accuracy not measured for {plural(answer.not_measured, 'other configuration')},"
            " ranked after."
        )
    return sentence


def lay_out(report: Report) -> Layout:
    """The tables every human-readable format shows, alerts first, in a fixed order."""
    regressions = report.baseline.with_verdict("regression") if report.baseline else ()
    found = costs(report)
    tables: list[Table | None] = [
        *(_baseline_tables(report.baseline) if report.baseline else []),
        _failures_table(report.failures),
        *map(_axis_table, report.axes),
        *(_comparison_table("By target", comparison) for comparison in report.by_target),
        *map(_best_table, report.best_configurations),
        *(_comparison_table("Ranking", comparison) for comparison in report.rankings),
        *_cost_tables(found),
        _energy_table(report.variants),
        _variants_table(report.variants) if report.variants else None,
        _flagged_table(report.variants),
        *(
            table
            for startup in report.startup
            for table in (_startup_table(startup), _memory_table(startup))
        ),
        _jobs_table(report.jobs) if report.jobs else None,
        _provenance_table(report.jobs) if any(job.reported for job in report.jobs) else None,
    ]
    return Layout(
        title=f"benchfleet report: {', '.join(report.workflows) or 'no runs'}",
        headline=(
            f"{plural(len(regressions), 'regression')} against the baseline"
            if regressions
            else None
        ),
        summary=_summary(report, found),
        tables=tuple(table for table in tables if table is not None),
    )


_UNIT_NAMES: Final = {"gpu": "GPU", "cpu": "CPU"}


def _figure(value: float | None) -> str:
    """A number of a cost table: four significant digits, "-" for none."""
    return "-" if value is None else format_ms(value)


def _held(cost: VariantCost | TargetCost) -> str:
    """What its pods held, and how it was bought: "1 GPU nvidia-t4, spot"."""
    if cost.unit is None:
        return "-"
    count = f"{cost.devices:g} " if isinstance(cost, VariantCost) and cost.devices else ""
    kind = f" {cost.device_type}" if cost.device_type else ""
    capacity = f", {cost.capacity}" if cost.capacity else ""
    return f"{count}{_UNIT_NAMES[cost.unit]}{kind}{capacity}"


def _device_seconds(value: float | None, unit: str | None) -> str:
    return "-" if value is None or unit is None else f"{format_ms(value)} {_UNIT_NAMES[unit]}-s"


def _cost_note(cost: VariantCost) -> str:
    return "; ".join(
        (*(() if cost.measured else ("failed",)), *cost.estimate, *filter(None, [cost.unpriced]))
    )


def _cost_tables(found: Costs) -> list[Table]:
    """The cost of every variant and of every target, where any run's allocation is
    recorded (report/cost.py)."""
    if not found.recorded:
        return []
    money = found.currency or ""
    per = f"per {INFERENCES:,} inferences"
    priced = found.currency is not None
    variants = Table(
        title="Cost per variant",
        columns=(
            *(Column(name) for name in KEY_HEADINGS),
            Column("held"),
            Column("allocated s", True),
            Column("device-s", True),
            *((Column(f"cost {money}", True),) if priced else ()),
            Column(f"{money} {per}" if priced else f"device-s {per}", True),
            Column("estimated or not priced"),
        ),
        rows=tuple(
            (
                *(key_cells(cost.key) if cost.key else _no_variant(cost.cluster, cost.target)),
                _held(cost),
                _figure(cost.seconds),
                _device_seconds(cost.device_seconds, cost.unit),
                *((_figure(cost.cost),) if priced else ()),
                _figure(cost.cost_per_1000 if priced else cost.device_seconds_per_1000),
                _cost_note(cost),
            )
            for cost in found.variants
        ),
        notes=(
            "allocated s: the variant's share of its pods' time on their nodes, scheduled to "
            "the runner's end, every attempt and repeat (a pod's share by the variants' own "
            "times where it ran several); device-s: that times the GPUs the pod held (CPUs "
            "for a pod without GPUs), what a cloud bills.",
            f"{per}: what serving them would hold at the variant's p50 latency per sample on "
            "the devices its pod held"
            + (
                ", at the price in specs/clusters.yaml."
                if priced
                else "; no prices in specs/clusters.yaml (docs/specs.md, `prices`)."
            ),
        ),
        kind="detail",
    )
    targets = Table(
        title="Cost per target",
        columns=(
            *(Column(name) for name in ("cluster", "target", "held")),
            Column("variants", True),
            Column("device-s", True),
            *((Column(f"cost {money}", True),) if priced else ()),
            Column("estimated", True),
            Column("not recorded", True),
        ),
        rows=tuple(
            (
                target.cluster,
                target.target,
                _held(target),
                str(target.variants),
                _device_seconds(target.device_seconds, target.unit),
                *((_figure(target.cost),) if priced else ()),
                str(target.estimated),
                str(target.unrecorded),
            )
            for target in found.targets
        ),
        notes=(
            "estimated: variants whose time is in part estimated (the Cost per variant table "
            "says what); not recorded: variants gathered before allocated time was, left out "
            "of the sums.",
        ),
    )
    return [targets, variants]


def _cost_summary(found: Costs) -> list[str]:
    """The run's device time and cost in one line, where any is recorded."""
    if not found.recorded:
        return []
    held = {
        unit: sum(t.device_seconds for t in found.targets if t.unit == unit) for unit in _UNIT_NAMES
    }
    parts = [_device_seconds(seconds, unit) for unit, seconds in held.items() if seconds]
    line = f"Held: {' and '.join(parts) or '0 device-s'}"
    if found.currency is not None:
        total = [t.cost for t in found.targets if t.unit is not None]
        line += f", {found.currency} {format_ms(sum(filter(None, total)))}" + (
            "" if None not in total else " for the priced targets"
        )
    else:
        line += " (no prices in specs/clusters.yaml: device-seconds only)"
    estimated = sum(bool(cost.estimate) for cost in found.variants)
    if estimated:
        line += f"; the time of {plural(estimated, 'variant')} in part estimated"
    return [line + "."]


def _energy_cells(row: VariantRow) -> tuple[str, str]:
    """mJ per inference and average W, or why there are none."""
    energy = row.energy
    if energy is None:
        return "-", "not measured: a runner before energy"
    if energy.unavailable == ENERGY_ON_CPU:
        return "-", "not available: a CPU target"
    if energy.joules_per_inference is None:
        return "-", f"not available: {energy.unavailable}"
    return _figure(energy.joules_per_inference * 1000), _figure(energy.average_w)


def _energy_table(rows: Sequence[VariantRow]) -> Table | None:
    """Each variant's energy per inference and average power, the throttle reasons beside
    them, or why there are none: shown where any GPU variant has a word on it."""
    if all(row.energy is None or row.energy.unavailable == ENERGY_ON_CPU for row in rows):
        return None
    return Table(
        title="Energy",
        columns=(
            *(Column(name) for name in KEY_HEADINGS),
            Column("mJ/inference", True),
            Column("average W", True),
            Column("throttle reasons"),
            Column("device"),
        ),
        rows=tuple(
            (
                *key_cells(row.key),
                *_energy_cells(row),
                ", ".join(row.throttle_reasons) or "none",
                row.device_name or "",
            )
            for row in rows
        ),
        notes=(
            "From NVML's total-energy counter, read as the timed loop started and as it ended "
            "(docs/runner.md, Energy): the whole GPU's energy over the samples the loop "
            "computed (an interleaved variant's share by its time), and the average power; a "
            "throttle reason (power cap, thermal) says the GPU slowed its clocks in that loop.",
        ),
        kind="detail",
    )


def _aligned(table: Table) -> list[str]:
    # Cells quote records from git (names, a failure's explanation): each on its one line.
    cells = (tuple(column.heading for column in table.columns), *table.rows)
    rows = [tuple(shown(cell) for cell in row) for row in cells]
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
    return layout_text(lay_out(report))


def layout_text(layout: Layout) -> str:
    """A layout (a report's, a trend's) for a terminal."""
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
    }
)


def _md(text: str) -> str:
    # Model names come from users: no cell may end the table, open a link or inject HTML.
    return shown(text).translate(_MARKDOWN_SPECIAL)


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
    return layout_markdown(lay_out(report))


def layout_markdown(layout: Layout) -> str:
    """A layout (a report's, a trend's) for a pull-request comment."""
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
    "samples_per_s_at_p50",
    "ci_method",
    "flags",
    "quantized",
    "runs",
    "between_run_spread",
    "flag_reasons",
    "usable",
    "accuracy",
    "cosine",
    "max_rel_error",
    "max_abs_error",
    "top1_agreement",
    "accuracy_failures",
    "best",
    "ratio_to_best",
    "ratio_to_best_low",
    "ratio_to_best_high",
    "allocated_s",
    "device_seconds",
    "device_unit",
    "held",
    "currency",
    "cost",
    "device_seconds_per_1000_inferences",
    "cost_per_1000_inferences",
    "cost_estimate",
    "not_priced",
    "joules_per_inference",
    "average_w",
    "throttle_reasons",
    "energy_unavailable",
)
"""`to_csv`'s header; columns are only ever added at the end."""


def _csv_cost(cost: VariantCost | None, currency: str | None) -> dict[str, object]:
    """The cost columns of a row (report/cost.py); empty where nothing is recorded."""
    if cost is None:
        return {}
    return {
        "allocated_s": cost.seconds,
        "device_seconds": cost.device_seconds,
        "device_unit": cost.unit,
        "held": _held(cost),
        "currency": currency,
        "cost": cost.cost,
        "device_seconds_per_1000_inferences": cost.device_seconds_per_1000,
        "cost_per_1000_inferences": cost.cost_per_1000,
        "cost_estimate": "; ".join(cost.estimate),
        "not_priced": cost.unpriced,
    }


def _csv_energy(row: VariantRow) -> dict[str, object]:
    energy = row.energy
    return {
        "joules_per_inference": energy.joules_per_inference if energy else None,
        "average_w": energy.average_w if energy else None,
        "throttle_reasons": "; ".join(row.throttle_reasons),
        "energy_unavailable": energy.unavailable if energy else "a runner before energy",
    }


def _csv_accuracy(row: VariantRow) -> dict[str, object]:
    """The accuracy columns: the gate's verdict ("not measured" is never passing), the worst
    of each number over the outputs, and what the gate found missing."""
    check = row.accuracy
    numbers = check.accuracy
    return {
        "accuracy": check.state,
        **{
            name: getattr(numbers, name) if numbers else None
            for name in ("cosine", "max_rel_error", "max_abs_error", "top1_agreement")
        },
        "accuracy_failures": "; ".join(check.failures),
    }


def _csv_best(
    best_configurations: Iterable[BestConfiguration],
) -> dict[VariantKey, dict[str, object]]:
    """The best-configuration columns of each row in a sweep: whether it is the best (the
    fastest within its accuracy gate, or of those not known to fail it; with every one
    outside its gate, none is), and its p50 per sample over the best's with the 95% CI."""
    columns: dict[VariantKey, dict[str, object]] = {}
    for best in best_configurations:
        first = best.comparison.entries[0]
        has_best = first.row.accuracy.state != "accuracy_failed"
        for entry in best.comparison.entries:
            columns[entry.row.key] = {
                "best": has_best and entry is first,
                "ratio_to_best": entry.ratio.value,
                "ratio_to_best_low": entry.ratio.low,
                "ratio_to_best_high": entry.ratio.high,
            }
    return columns


def _csv_measured(
    row: VariantRow, change: Change | None, *, reused: bool = False
) -> dict[str, object]:
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
        "throughput_samples_per_s": row.mean_samples_per_s,
        "samples_per_s_at_p50": row.samples_per_s,
        "ci_method": row.estimate.method,
        "flags": "; ".join(row.doubts),
        "quantized": row.quantized,
        # Empty where the variant ran once.
        "runs": len(row.repeats.p50s_ms) if row.repeats else None,
        "between_run_spread": row.repeats.spread if row.repeats else None,
        "flag_reasons": "; ".join(row.flag_reasons),
        # What the run's verdict counts: the other formats say it in words before any table.
        "usable": not row.doubts,
        **_csv_accuracy(row),
        **(
            {
                "baseline_p50_ms": change.baseline.latency.p50_ms,
                "change_ratio": change.ratio.value,
                "verdict": change.verdict,
            }
            if change
            else {}
        ),
        # The baseline's own run: its p50, and no ratio, which would compare it with itself.
        **({"baseline_p50_ms": latency.p50_ms, "verdict": "reused"} if reused else {}),
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
                "compile": ref.compile,
                "variant_id": ref.id,
            }
            if ref
            else {}
        ),
        "job": failed.job,
        "finished_at": failed.finished_at,
        "explanation": failed.explanation,
        "usable": False,
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
    reused = {row.key for row in baseline.reused} if baseline else set()
    best = _csv_best(report.best_configurations)
    found = costs(report)
    measured = {cost.key: cost for cost in found.variants if cost.measured}
    failed = {(c.cluster, c.job, c.index): c for c in found.variants if not c.measured}
    writer.writerows(
        _csv_measured(row, changes.get(row.key), reused=row.key in reused)
        | best.get(row.key, {})
        | _csv_cost(measured.get(row.key), found.currency)
        | _csv_energy(row)
        for row in report.variants
    )
    writer.writerows(
        _csv_failed(failure)
        | _csv_cost(failed.get((failure.cluster, failure.job, failure.index)), found.currency)
        for failure in report.failures
    )
    return buffer.getvalue()


def _json_default(value: object) -> object:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    raise TypeError(f"{type(value).__name__} is not part of a report")


def _finite(value: object) -> object:
    """JSON has no infinity: an unbounded interval's end is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def to_json(report: Report) -> str:
    """The whole report, keys sorted, for other tools; `schema_version` says its shape."""
    document = _finite(
        {
            "schema_version": REPORT_SCHEMA_VERSION,
            "verdict": asdict(run_verdict(report)),
            "answers": [
                asdict(answer) | {"sentence": answer_line(answer)} for answer in answers(report)
            ],
            "costs": asdict(costs(report)),
            **asdict(report),
        }
    )
    return (
        json.dumps(document, default=_json_default, sort_keys=True, indent=2, allow_nan=False)
        + "\n"
    )
