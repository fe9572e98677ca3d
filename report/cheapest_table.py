"""The cheapest that holds the rate, per model and rate, as a table after the control
answers: every fixed-rate variant, those that can win cheapest first, then those that
cannot, each saying why."""

from collections.abc import Sequence

from report.cheapest import Candidate, CheapestHolder
from report.stage_split import stage_names, stage_notes, stage_p50_cell, stage_p50_columns
from report.table import Column, Table, format_ms


def _cost(candidate: Candidate) -> str:
    return "?" if candidate.cost_per_hour is None else f"{candidate.cost_per_hour:,.4g}"


def _against(candidate: Candidate, holder: CheapestHolder) -> str:
    """Its cost an hour over the cheapest's, for those that can win."""
    cheapest = holder.cheapest
    if cheapest is None or not candidate.can_win or candidate.cost_per_hour is None:
        return ""
    assert cheapest.cost_per_hour is not None
    if cheapest.cost_per_hour == 0:
        return ""
    return f"{candidate.cost_per_hour / cheapest.cost_per_hour:.2f}x"


def cheapest_table(holders: Sequence[CheapestHolder]) -> Table | None:
    """None without fixed-rate variants."""
    if not holders:
        return None
    currency = next((holder.currency for holder in holders if holder.currency), None)
    stages = stage_names(
        [candidate.row for holder in holders for candidate in (*holder.ranked, *holder.left_out)]
    )
    rows = []
    for holder in holders:
        for candidate in (*holder.ranked, *holder.left_out):
            rows.append(
                (
                    holder.model,
                    f"{holder.rate_hz:g}",
                    format_ms(holder.deadline_ms),
                    candidate.configuration,
                    "cheapest" if candidate is holder.cheapest else "",
                    candidate.held,
                    candidate.accuracy,
                    _cost(candidate),
                    _against(candidate, holder),
                    "?" if candidate.p99_9_ms is None else format_ms(candidate.p99_9_ms),
                    *(stage_p50_cell(candidate.row, name) for name in stages),
                    candidate.why,
                )
            )
    return Table(
        title="Control loops: the cheapest that holds the rate",
        columns=(
            Column("model"),
            Column("rate Hz", is_numeric=True),
            Column("deadline ms", is_numeric=True),
            Column("target and configuration"),
            Column("answer"),
            Column("held"),
            Column("accuracy"),
            Column(f"{currency or 'cost'} an hour", is_numeric=True),
            Column("x the cheapest", is_numeric=True),
            Column("p99.9 ms", is_numeric=True),
            *stage_p50_columns(stages),
            Column("why"),
        ),
        rows=tuple(rows),
        notes=(
            "An hour of the devices its pod held at specs/clusters.yaml's price: at a fixed "
            "rate the loop holds its device however fast each query is, so the device-hour, "
            "not the cost per 1,000 inferences, is what holding the rate costs.",
            "Only a variant that held, is priced and is not known to fail its accuracy gate "
            "can win; within its gate ranks before accuracy not measured. Not held, "
            "undecided (a disturbed machine, too few queries) and outside the gate never win.",
            *stage_notes(stages),
        ),
    )
