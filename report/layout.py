"""Which tables a report shows, and in what order: alerts first, then the comparisons and
answers, then (folded) the details. Every human-readable format writes this one layout."""

from contract.text import plural
from report.analysis import Analysis
from report.cheapest_table import cheapest_table
from report.comparison_tables import (
    axis_table,
    baseline_tables,
    best_table,
    comparison_table,
    param_table,
    stacks_apart_table,
)
from report.control_table import control_table
from report.cost_table import cost_tables
from report.run_tables import (
    energy_table,
    failures_table,
    flagged_table,
    jobs_table,
    lacks_table,
    memory_table,
    plan_table,
    provenance_table,
    stacks_table,
    stages_table,
    startup_table,
    variants_table,
)
from report.summary import summary
from report.table import Layout, Table


def lay_out(analysis: Analysis) -> Layout:
    """The tables every human-readable format shows, alerts first, in a fixed order."""
    report = analysis.report
    regressions = report.baseline.with_verdict("regression") if report.baseline else ()
    tables: list[Table | None] = [
        control_table(analysis.control),
        cheapest_table(analysis.cheapest),
        *(baseline_tables(report.baseline) if report.baseline else []),
        failures_table(report.failures),
        lacks_table(report.lacks),
        stacks_apart_table(report.stacks_apart, report.across_stacks),
        *map(axis_table, report.axes),
        *map(param_table, analysis.params),
        *(comparison_table("By target", comparison) for comparison in report.by_target),
        *map(best_table, report.best_configurations),
        *(comparison_table("Ranking", comparison) for comparison in report.rankings),
        *cost_tables(analysis.costs),
        stages_table(report.variants),
        energy_table(report.variants),
        variants_table(report.variants) if report.variants else None,
        flagged_table(report.variants),
        *(
            table
            for startup in report.startup
            for table in (startup_table(startup), memory_table(startup))
        ),
        plan_table(report.plan_checks),
        jobs_table(report.jobs) if report.jobs else None,
        provenance_table(report.jobs) if any(job.reported for job in report.jobs) else None,
        stacks_table(report.jobs),
    ]
    return Layout(
        title=f"benchfleet report: {', '.join(report.workflows) or 'no runs'}",
        headline=(
            f"{plural(len(regressions), 'regression')} against the baseline"
            if regressions
            else None
        ),
        summary=summary(analysis),
        tables=tuple(table for table in tables if table is not None),
    )
