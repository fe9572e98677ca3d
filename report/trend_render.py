"""`collector report --trend` as text, Markdown and JSON: the changes beyond noise first,
with the run each began at and what changed there, then every variant's latest run against
its reference, then (folded) every run of every variant."""

import json
from typing import Any, Final, get_args

from contract.text import plural
from report.markdown import layout_markdown
from report.model import KEY_FIELDS
from report.table import KEY_HEADINGS, Column, Layout, Table, format_ms, key_cells
from report.text import layout_text
from report.trend import Change, Point, Reference, Trend, VariantTrend, Verdict

TREND_SCHEMA_VERSION: Final = 1
"""Bumped when a field of `trend_json`'s output changes meaning or goes away."""
VERDICTS: Final[tuple[Verdict, ...]] = get_args(Verdict)


def rule_text(trend: Trend) -> str:
    """The rule in one sentence, with this report's settings."""
    return (
        f"A run is a regression (an improvement) when its p50 lies above (below) the median "
        f"of the up to {trend.window} usable runs before it by more than the larger of "
        f"{trend.floor:.0%} and their spread (max/min - 1, TorchBench's max delta): the noise "
        f"the history itself shows; it needs {trend.min_history} usable runs before it, and a "
        "flagged run decides nothing and joins no reference."
    )


def _percent(change: float) -> str:
    return f"{change:+.1%}"


def _reference_text(reference: Reference | None) -> str:
    if reference is None:
        return "-"
    return (
        f"{format_ms(reference.median_ms)} ({format_ms(reference.low_ms)}-"
        f"{format_ms(reference.high_ms)}) of {len(reference.runs)}"
    )


def _change_cells(change: Change) -> tuple[str, ...]:
    return (
        change.first.run.label,
        _percent(change.ratio - 1),
        f"±{change.threshold:.1%}",
        _reference_text(change.reference),
        "; ".join(change.differences) or "no change of spec, image, torch or device",
    )


def _changes_table(trend: Trend, verdict: Verdict) -> Table | None:
    rows = [
        (*key_cells(variant.key), *_change_cells(variant.change))
        for variant in trend.with_verdict(verdict)
        if variant.change is not None
    ]
    if not rows:
        return None
    columns = (
        *(Column(name) for name in KEY_HEADINGS),
        Column("since"),
        Column("change", is_numeric=True),
        Column("threshold", is_numeric=True),
        Column("reference p50 ms (range) of runs"),
        Column("what changed at its first run"),
    )
    return Table(
        title=f"{verdict.capitalize()}s beyond the history's noise",
        columns=columns,
        rows=tuple(rows),
        notes=(
            "since: the first run from which every usable run lies beyond the reference of "
            "the runs before it; what changed: between that run and the one before it.",
        ),
        kind="alert" if verdict == "regression" else "main",
    )


def _deadline_table(trend: Trend) -> Table | None:
    """The fixed-rate variants that started missing their deadline: an alert."""
    rows = [
        (
            *key_cells(variant.key),
            variant.deadline.first.run.label,
            variant.deadline.before.run.label,
        )
        for variant in trend.missing_deadlines
        if variant.deadline is not None
    ]
    if not rows:
        return None
    return Table(
        title="Started missing its deadline",
        columns=(
            *(Column(name) for name in KEY_HEADINGS),
            Column("not held since"),
            Column("last held"),
        ),
        rows=tuple(rows),
        notes=(
            "A fixed-rate run holds when its miss rate's 95% interval lies within 0.1% and "
            "its p99.9 within the deadline (report: Control loops); flagged runs are skipped.",
        ),
        kind="alert",
    )


def _latest(variant: VariantTrend) -> Point:
    usable = [point for point in variant.points if point.run.usable]
    return usable[-1] if usable else variant.points[-1]


def _variants_table(trend: Trend) -> Table:
    rows = []
    for variant in trend.variants:
        latest = _latest(variant)
        usable = sum(point.run.usable for point in variant.points)
        reference = latest.reference
        rows.append(
            (
                *key_cells(variant.key),
                f"{usable} of {len(variant.points)}",
                latest.run.run.label,
                format_ms(latest.run.p50_ms),
                _reference_text(reference),
                f"{reference.spread:.1%}" if reference else "-",
                variant.verdict,
            )
        )
    columns = (
        *(Column(name) for name in KEY_HEADINGS),
        Column("usable runs"),
        Column("latest"),
        Column("p50 ms", is_numeric=True),
        Column("reference p50 ms (range) of runs"),
        Column("spread", is_numeric=True),
        Column("verdict"),
    )
    return Table(
        title="Variants: the latest usable run against the runs before it",
        columns=columns,
        rows=tuple(rows),
        notes=(
            "reference: the median p50 per batch of the usable runs before the latest, with "
            "their range (the band in the page's plots); spread: max/min - 1 of that range.",
        ),
    )


def _runs_table(trend: Trend) -> Table:
    rows = [
        (
            variant.key.label(KEY_FIELDS),
            point.run.run.label,
            format_ms(point.run.p50_ms),
            ", ".join(map(format_ms, point.run.repeats)) if len(point.run.repeats) > 1 else "",
            _reference_text(point.reference),
            point.verdict
            + (f" ({', '.join(point.run.flags)})" if point.run.flags else "")
            + (f" (new stack: {'; '.join(point.stack)})" if point.stack else ""),
            ", ".join(point.run.jobs),
        )
        for variant in trend.variants
        for point in variant.points
    ]
    columns = (
        Column("variant"),
        Column("run"),
        Column("p50 ms", is_numeric=True),
        Column("repeats ms"),
        Column("reference p50 ms (range) of runs"),
        Column("verdict"),
        Column("jobs"),
    )
    return Table("Every run of every variant", columns, tuple(rows), kind="detail")


def _counts(trend: Trend) -> str:
    return ", ".join(
        f"{verdict} {len(trend.with_verdict(verdict))}"
        for verdict in VERDICTS
        if trend.with_verdict(verdict)
    )


def lay_out_trend(trend: Trend) -> Layout:
    """The trend as the report's renderers show layouts."""
    regressions = trend.with_verdict("regression")
    missing = trend.missing_deadlines
    alerts = [
        *(
            [f"{plural(len(regressions), 'variant')} regressed beyond the noise of the runs before"]
            if regressions
            else []
        ),
        *([f"{plural(len(missing), 'variant')} started missing its deadline"] if missing else []),
    ]
    span = f"{trend.runs[0].label} to {trend.runs[-1].label}" if trend.runs else "none"
    summary = (
        f"{plural(len(trend.runs), 'run')} ({span}), {plural(len(trend.variants), 'variant')}: "
        f"{_counts(trend)}.",
        rule_text(trend),
    )
    tables = [
        _deadline_table(trend),
        _changes_table(trend, "regression"),
        _changes_table(trend, "improvement"),
        _variants_table(trend),
        _runs_table(trend),
    ]
    return Layout(
        title=f"Trend of {trend.workflow}",
        headline="; ".join(alerts) or None,
        summary=summary,
        tables=tuple(table for table in tables if table is not None),
    )


def trend_text(trend: Trend) -> str:
    return layout_text(lay_out_trend(trend))


def trend_markdown(trend: Trend) -> str:
    return layout_markdown(lay_out_trend(trend))


def _reference_json(reference: Reference | None, floor: float) -> dict[str, Any] | None:
    if reference is None:
        return None
    return {
        "runs": [run.label for run in reference.runs],
        "median_ms": reference.median_ms,
        "low_ms": reference.low_ms,
        "high_ms": reference.high_ms,
        "spread": reference.spread,
        "threshold": reference.threshold(floor),
    }


def _change_json(change: Change | None, floor: float) -> dict[str, Any] | None:
    if change is None:
        return None
    return {
        "verdict": change.verdict,
        "first_run": change.first.run.label,
        "first_scheduled_run": change.first.run.scheduled_run,
        "before_run": change.before.run.label,
        "ratio": change.ratio,
        "threshold": change.threshold,
        "reference": _reference_json(change.reference, floor),
        "differences": list(change.differences),
    }


def _variant_json(variant: VariantTrend, floor: float) -> dict[str, Any]:
    return {
        **variant.key.fields(),
        "verdict": variant.verdict,
        "change": _change_json(variant.change, floor),
        "deadline_change": None
        if variant.deadline is None
        else {
            "first_run": variant.deadline.first.run.label,
            "before_run": variant.deadline.before.run.label,
        },
        "points": [
            {
                "run": point.run.run.label,
                "scheduled_run": point.run.run.scheduled_run,
                "scheduled_at": point.run.run.scheduled_at,
                "p50_ms": point.run.p50_ms,
                "repeats_ms": list(point.run.repeats),
                "flags": list(point.run.flags),
                "jobs": list(point.run.jobs),
                "spec_sha256": point.run.spec_sha256,
                "image": point.run.image,
                "torch": point.run.torch,
                "reference": _reference_json(point.reference, floor),
                "verdict": point.verdict,
                # Only where the stack changed: trends before the fingerprint keep their shape.
                **({"stack": list(point.stack)} if point.stack else {}),
                "held": point.run.held,
            }
            for point in variant.points
        ],
    }


def trend_json(trend: Trend) -> str:
    """Every variant with every run, its reference and verdict, and the rule's settings."""
    document = {
        "schema_version": TREND_SCHEMA_VERSION,
        "workflow": trend.workflow,
        "rule": {
            "window": trend.window,
            "min_history": trend.min_history,
            "floor": trend.floor,
            "description": rule_text(trend),
        },
        "counts": {verdict: len(trend.with_verdict(verdict)) for verdict in VERDICTS},
        "runs": [
            {
                "label": run.label,
                "scheduled_run": run.scheduled_run,
                "scheduled_at": run.scheduled_at,
            }
            for run in trend.runs
        ],
        "variants": [_variant_json(variant, trend.floor) for variant in trend.variants],
    }
    return json.dumps(document, indent=2) + "\n"
