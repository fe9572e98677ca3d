"""What the report shows of its costs (report/cost.py works them out): the columns of a
variant's cost, each defined once for the Cost per variant table and the CSV
(`COST_COLUMNS`), the Cost per target table and the summary's line on what the run held."""

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from contract.layout import FLEET_FILE
from contract.pricing import CHECKOUT, INFERENCES, table_name
from contract.text import plural
from report.cost import Costs, TargetCost, VariantCost
from report.table import (
    KEY_HEADINGS,
    Column,
    Table,
    format_figure,
    format_ms,
    key_cells,
    no_variant,
)

_UNIT_NAMES: Final = {"gpu": "GPU", "cpu": "CPU"}
_PER: Final = f"per {INFERENCES:,} inferences"


def held(cost: VariantCost | TargetCost) -> str:
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


@dataclass(frozen=True)
class CostColumn:
    """One column of what a variant cost: under `heading` in the Cost per variant table,
    its text `cell`, and named `csv` in the CSV (report.csv), its `value`. A column of only
    one of them leaves the other's pair None."""

    heading: str | None = None
    """`{money}` stands for the currency, `{per}` for "per 1,000 inferences"."""
    cell: Callable[[VariantCost], str] | None = None
    csv: str | None = None
    value: Callable[[VariantCost], object] | None = None
    is_numeric: bool = False
    priced: bool | None = None
    """Shown in the table only with prices (True), only without (False), or either way."""


def _figure(
    heading: str, csv: str, of: Callable[[VariantCost], float | None], priced: bool | None = None
) -> CostColumn:
    """A column of one number: four significant digits in the table, as it is in the CSV."""
    return CostColumn(
        heading, lambda cost: format_figure(of(cost)), csv, of, is_numeric=True, priced=priced
    )


COST_COLUMNS: Final = (
    CostColumn("held", held, "held", held),
    _figure("allocated s", "allocated_s", lambda cost: cost.seconds),
    CostColumn(
        "device-s",
        lambda cost: _device_seconds(cost.device_seconds, cost.unit),
        "device_seconds",
        lambda cost: cost.device_seconds,
        is_numeric=True,
    ),
    CostColumn(csv="device_unit", value=lambda cost: cost.unit),
    _figure("cost {money}", "cost", lambda cost: cost.cost, priced=True),
    _figure(
        "{money} {per}", "cost_per_1000_inferences", lambda cost: cost.cost_per_1000, priced=True
    ),
    _figure(
        "device-s {per}",
        "device_seconds_per_1000_inferences",
        lambda cost: cost.device_seconds_per_1000,
        priced=False,
    ),
    CostColumn("estimated or not priced", _cost_note),
    CostColumn(csv="cost_estimate", value=lambda cost: "; ".join(cost.estimate)),
    CostColumn(csv="not_priced", value=lambda cost: cost.unpriced),
    CostColumn(csv="price_table", value=lambda cost: cost.price_table),
)
"""A variant's cost columns, in the table's order (the CSV's is `CSV_COLUMNS`')."""


def cost_csv(cost: VariantCost) -> dict[str, object]:
    """A variant's cost columns of the CSV, by name."""
    return {
        column.csv: column.value(cost)
        for column in COST_COLUMNS
        if column.csv is not None and column.value is not None
    }


def _variants_table(found: Costs) -> Table:
    priced = found.currency is not None
    shown = [
        (
            Column(column.heading.format(money=found.currency or "", per=_PER), column.is_numeric),
            cell,
        )
        for column in COST_COLUMNS
        if column.heading is not None
        and (cell := column.cell) is not None
        and column.priced in (None, priced)
    ]
    return Table(
        title="Cost per variant",
        columns=(
            *(Column(name) for name in KEY_HEADINGS),
            *(heading for heading, _ in shown),
        ),
        rows=tuple(
            (
                *(key_cells(cost.key) if cost.key else no_variant(cost.cluster, cost.target)),
                *(cell(cost) for _, cell in shown),
            )
            for cost in found.variants
        ),
        notes=(
            "allocated s: the variant's share of its pods' time on their nodes, scheduled to "
            "the runner's end, every attempt and repeat (a pod's share by the variants' own "
            "times where it ran several); device-s: that times the GPUs the pod held (CPUs "
            "for a pod without GPUs), what a cloud bills.",
            f"{_PER}: what serving them would hold at the variant's p50 latency per sample on "
            "the devices its pod held"
            + (
                ", at the price when its Job ran: specs/clusters.yaml as the commit that added "
                "the Job's record held it, the checkout's for a Job not recorded yet."
                if priced
                else "; no prices in specs/clusters.yaml (docs/specs.md, `prices`)."
            ),
        ),
        kind="detail",
    )


def _targets_table(found: Costs) -> Table:
    money = found.currency or ""
    priced = found.currency is not None
    return Table(
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
                held(target),
                str(target.variants),
                _device_seconds(target.device_seconds, target.unit),
                *((format_figure(target.cost),) if priced else ()),
                str(target.estimated),
                str(target.unrecorded),
            )
            for target in found.targets
        ),
        notes=(
            "estimated: variants whose time is in part estimated or unknown (the Cost per "
            "variant table says what; an unknown time adds nothing to the sums and leaves the "
            "cost unknown); not recorded: variants gathered before allocated time was, left "
            "out of the sums.",
        ),
    )


def cost_tables(found: Costs) -> list[Table]:
    """The cost of every target and of every variant, where any run's allocation is
    recorded."""
    if not found.recorded:
        return []
    return [_targets_table(found), _variants_table(found)]


def cost_summary(found: Costs) -> list[str]:
    """The run's device time and cost in one line, where any is recorded."""
    if not found.recorded:
        return []
    held_by_unit = {
        unit: sum(t.device_seconds for t in found.targets if t.unit == unit) for unit in _UNIT_NAMES
    }
    parts = [_device_seconds(seconds, unit) for unit, seconds in held_by_unit.items() if seconds]
    line = f"Held: {' and '.join(parts) or '0 device-s'}"
    if found.currency is not None:
        total = [t.cost for t in found.targets if t.unit is not None]
        line += f", {found.currency} {format_ms(sum(filter(None, total)))}" + (
            "" if None not in total else " for the priced targets"
        )
        line += _priced_by(found)
    else:
        line += " (no prices in specs/clusters.yaml: device-seconds only)"
    estimated = sum(bool(cost.estimate) for cost in found.variants)
    if estimated:
        line += f"; the time of {plural(estimated, 'variant')} in part estimated"
    return [line + "."]


def _priced_by(found: Costs) -> str:
    """Which versions of the fleet file priced the variants, in words; nothing where none
    did."""
    counts = Counter(cost.price_table for cost in found.variants if cost.price_table)
    if not counts:
        return ""
    if set(counts) == {CHECKOUT}:
        return f", priced by {_version(CHECKOUT)}"
    # Older versions first, in the order of the table; the checkout's last.
    tables = sorted(counts.items(), key=lambda item: item[0] == CHECKOUT)
    return ", priced by the prices when each Job ran: " + ", ".join(
        f"{_version(version)} for {plural(count, 'variant')}" for version, count in tables
    )


def _version(version: str) -> str:
    return f"the checkout's {FLEET_FILE}" if version == CHECKOUT else table_name(version)
