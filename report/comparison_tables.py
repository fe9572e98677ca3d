"""The tables of comparisons: variants side by side (by target, a ranking of models), the
best configuration of a sweep, each value of a sweep axis against its reference, and the
changes against a baseline. Their words claim no more than the intervals and the flags allow,
and never call a variant outside its accuracy gate faster without saying so."""

from collections.abc import Callable, Sequence
from typing import Final

from contract.accuracy import Accuracy
from contract.text import plural
from contract.variant import heading
from report.intervals import Ratio
from report.model import (
    KEY_FIELDS,
    AxisComparison,
    AxisEntry,
    BaselineComparison,
    BestConfiguration,
    Change,
    Comparison,
    OtherStack,
    Ranked,
    VariantKey,
    VariantRow,
)
from report.params import ParamComparison
from report.run_tables import ACCURACY_NOTE
from report.table import (
    KEY_HEADINGS,
    Table,
    TableKind,
    columns,
    format_ms,
    format_p99,
    format_ratio,
    key_cells,
    ratio_interval,
    row_interval,
)


def _direction(ratio: Ratio, doubts: Sequence[str], than: str) -> str:
    """The ratio in words, claiming no more than the interval and the flags allow."""
    if doubts:
        return "inconclusive: " + "; ".join(doubts)
    if not ratio.bounded:
        return "inconclusive: too few iterations for an interval"
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


def _versus(entry: Ranked, fastest: Ranked, varies: Sequence[str], first: str) -> str:
    if entry is fastest:
        return _gated(first, entry.row)
    than = fastest.row.key.label(varies)
    words = f"{_direction(entry.ratio, entry.doubts, than)} [{ratio_interval(entry.ratio)}]"
    return _gated(words, entry.row)


def comparison_table(title: str, comparison: Comparison) -> Table:
    """Variants side by side, fastest first, each against the fastest."""
    varies = comparison.varies
    fastest = comparison.entries[0]
    return Table(
        title=f"{title}: {comparison.describe()}",
        columns=columns(
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
                row_interval(entry.row, entry.row.ci_low_ms, entry.row.ci_high_ms),
                format_p99(entry.row),
                f"{entry.row.samples_per_s:,.1f}",
                entry.row.device_name or "",
                _versus(entry, fastest, varies, "fastest"),
                entry.row.accuracy.describe(),
            )
            for place, entry in enumerate(comparison.entries, start=1)
        ),
        notes=("vs fastest: ratio of p50 per sample with its 95% CI.", ACCURACY_NOTE),
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
        unknown = "not meaningful" if first.row.accuracy.not_meaningful else "not measured"
        return (
            f"{first.row.key.label(varies)}: accuracy {unknown}; it is best by speed among "
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


def best_table(best: BestConfiguration) -> Table:
    """The best configuration of a sweep, its runner-up, and those faster but failing."""
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
        columns=columns(
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
                row_interval(entry.row, *entry.row.ci_per_sample_ms),
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
            f"{ACCURACY_NOTE} The best is the fastest within its gate.",
        ),
    )


def _changes_table(title: str, changes: Sequence[Change], kind: TableKind = "main") -> Table | None:
    if not changes:
        return None
    return Table(
        title=f"{title} ({len(changes)})",
        columns=columns(
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
                ratio_interval(change.ratio),
                _accuracy_change(change),
                "; ".join((*change.doubts, *change.stack)),
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
        columns=columns(*KEY_HEADINGS),
        rows=tuple(key_cells(key) for key in keys),
    )


REUSED: Final = "reused, same run"
"""What a variant whose number is the baseline's own run shows instead of a change."""


def _reused_table(rows: Sequence[VariantRow]) -> Table | None:
    if not rows:
        return None
    return Table(
        title=f"Reused: the baseline's own run, not measured again ({len(rows)})",
        columns=columns(*KEY_HEADINGS, "p50 ms", "job", "change"),
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


def _other_stack_table(apart: Sequence[OtherStack]) -> Table | None:
    if not apart:
        return None
    return Table(
        title=f"Another stack: not compared with the baseline ({len(apart)})",
        columns=columns(*KEY_HEADINGS, "baseline p50 ms", "p50 ms", "stack: baseline vs now"),
        rows=tuple(
            (
                *key_cells(other.current.key),
                format_ms(other.baseline.latency.p50_ms),
                format_ms(other.current.latency.p50_ms),
                "; ".join(other.differences),
            )
            for other in apart
        ),
        notes=(
            "Measured on another driver, CUDA or library build, MIG profile, power limit or "
            "CPU than in the baseline: a change there is the stack's as much as the "
            "variant's. `--across-stacks` compares them anyway.",
        ),
    )


def stacks_apart_table(notes: Sequence[str], across: bool) -> Table | None:
    """The variants of a comparison that ran on different stacks, and which fields differ."""
    if not notes:
        return None
    title = "Compared across stacks" if across else "Kept apart: measured on different stacks"
    return Table(
        title=f"{title} ({len(notes)})",
        columns=columns("variants"),
        rows=tuple((note,) for note in notes),
        notes=(
            "Comparisons hold variants of one stack (driver, CUDA and library builds as "
            "loaded, MIG profile, power limit, application clocks, CPU model; "
            "docs/report.md): `--across-stacks` compares the others too, naming what "
            "differs. Targets are compared stacks and all.",
        ),
    )


def baseline_tables(comparison: BaselineComparison) -> list[Table | None]:
    """The changes against the baseline by verdict, regressions first (None: none such)."""
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
        _other_stack_table(comparison.other_stack),
        _keys_table("New: not in the baseline", comparison.new),
        _keys_table("Missing: measured in the baseline, not now", comparison.missing),
        _changes_table(
            f"Unchanged: the whole 95% CI within {threshold}",
            comparison.with_verdict("unchanged"),
            "detail",
        ),
        _reused_table(comparison.reused),
    ]


def axis_table(comparison: AxisComparison) -> Table:
    """Each value of a sweep axis against its reference, the other settings held fixed."""
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
        columns=columns(
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
            *comparison.not_compared,
        ),
    )


def param_table(comparison: ParamComparison) -> Table:
    """Each member of a family against the one at a param's smallest value, the other params
    and settings held fixed (report/params.py)."""
    param, entries = comparison.param, comparison.entries
    held = [
        name
        for name in KEY_FIELDS
        if name != "model" and len({entry.row.key.value(name) for entry in entries}) > 1
    ]
    others = sorted({name for e in entries for name, _ in e.row.params if name != param})
    return Table(
        title=f"Family {comparison.family}, {param}: each member against its smallest {param}, "
        "other params and settings held fixed",
        columns=columns(
            *map(heading, held),
            *others,
            "model",
            param,
            "vs",
            *("p50 ms/sample", "ratio", "95% CI", "accuracy"),
            "verdict",
        ),
        rows=tuple(_param_row(entry, param, held, others) for entry in entries),
        notes=(
            "ratio: p50 per sample over the member's at the smallest value; the verdict claims "
            "a direction only when the 95% CI excludes 1 and neither run is flagged.",
        ),
    )


def _param_row(
    entry: AxisEntry, param: str, held: Sequence[str], others: Sequence[str]
) -> tuple[str, ...]:
    values, reference = dict(entry.row.params), dict(entry.reference.params)
    than = f"{param}={reference[param]}"
    return (
        *(entry.row.key.value(name) for name in held),
        *(str(values.get(name, "-")) for name in others),
        entry.row.key.model,
        str(values[param]),
        str(reference[param]),
        format_ms(entry.row.p50_per_sample_ms),
        format_ratio(entry.ratio.value),
        ratio_interval(entry.ratio),
        entry.row.accuracy.state,
        _gated(_direction(entry.ratio, entry.doubts, than), entry.row),
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
        ratio_interval(entry.ratio),
        *_errors(entry, axis),
        entry.row.accuracy.state,
        _gated(
            _direction(entry.ratio, entry.doubts, entry.reference.key.label((axis,))), entry.row
        ),
    )
