"""The lines before a report's tables: the verdict on the run, the answer per sweep in one
sentence each, what the workflows are for, what was measured and held, which Jobs the
numbers come from, and the changes against a baseline counted."""

from collections.abc import Sequence

from contract.text import plural, shown
from report.analysis import Analysis
from report.answers import Against, Answer
from report.cheapest import cheapest_line
from report.comparison_tables import REUSED
from report.control import control_line
from report.cost_table import cost_summary
from report.intervals import Ratio
from report.model import VERDICT_ORDER, Change, JobSummary, Report
from report.table import format_ms, format_ratio, interval, ratio_interval
from report.verdict import verdict_lines


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


def summary(analysis: Analysis) -> tuple[str, ...]:
    """The lines before the tables, the verdict on the run first."""
    report = analysis.report
    lines = [
        *map(control_line, analysis.control),
        *map(cheapest_line, analysis.cheapest),
        *verdict_lines(analysis.verdict),
        *map(answer_line, analysis.answers),
        *_about(report.jobs),
    ]
    lines.append(
        f"{plural(len(report.variants), 'variant')} measured, {len(report.failures)} failed."
    )
    lines.extend(cost_summary(analysis.costs))
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
    measured = f"{format_ratio(ratio.value)}, {_ci(ratio)}"
    # A flagged pair still says what it measured: on a shared node every run is flagged,
    # and "by how much" is asked there too.
    if against.doubts:
        return f"not told apart from {other} ({measured}): {'; '.join(against.doubts)}"
    if not ratio.bounded:
        return f"not told apart from {other} ({measured}: too few iterations to say)"
    if not ratio.excludes_one:
        return f"not told apart from {other} beyond noise ({measured} includes 1)"
    if ratio.value < 1:
        slower = Ratio(1 / ratio.value, 1 / ratio.high, 1 / ratio.low, ratio.paired)
        return (
            f"{format_ratio(slower.value)} slower than {other} (95% CI "
            f"{ratio_interval(slower)}), whose accuracy is {against.accuracy}"
        )
    return (
        f"{format_ratio(ratio.value)} faster than {other} (95% CI {ratio_interval(ratio)}), "
        "beyond noise"
    )


def _ci(ratio: Ratio) -> str:
    return f"95% CI {ratio_interval(ratio)}" if ratio.bounded else ratio_interval(ratio)


def answer_line(answer: Answer) -> str:
    """The answer in one sentence: which configuration, by how much, how sure."""
    where = f"{answer.model} on {answer.target} ({answer.cluster})"
    speed = (
        f"{format_ms(answer.p50_per_sample_ms)} ms/sample "
        f"(95% CI {interval(*answer.ci_per_sample_ms)})"
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
