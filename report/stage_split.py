"""A pipeline's stage split in a table's cells: each stage's median time per query
(VariantRow.stages), for the stages any of the rows ran. The Stages table, the control
answers and the cheapest table all show it from here."""

from collections.abc import Sequence
from typing import get_args

from contract.result import StageName
from report.model import VariantRow
from report.table import Column, significant


def stage_names(rows: Sequence[VariantRow]) -> tuple[StageName, ...]:
    """The stages any of `rows` ran, by the order they run; none where no row is a pipeline."""
    return tuple(
        name for name in get_args(StageName) if any(name in (row.stages or {}) for row in rows)
    )


def stage_p50_columns(names: Sequence[StageName]) -> tuple[Column, ...]:
    return tuple(Column(f"{name} p50 ms", is_numeric=True) for name in names)


def stage_p50_cell(row: VariantRow, name: StageName) -> str:
    """The stage's median per query, "-" where the row did not run it."""
    stage = row.stages.get(name) if row.stages else None
    return "-" if stage is None else significant(stage.p50_ms, 3)


def stage_notes(names: Sequence[StageName]) -> tuple[str, ...]:
    """What the stage columns mean, where a table has any."""
    if not names:
        return ()
    return (
        "<stage> p50 ms: a pipeline's stage split, each stage's median time per query (the "
        "Stages table has each one's share of the chain); - where a variant has no such stage.",
    )
