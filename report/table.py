"""The table model every format shares: a `Table` of text cells under `Column`s, a
`Layout` of tables with a title and a summary, and how numbers, times and variant keys are
written into cells. What the tables are is `report.layout`'s; how each format writes them,
`report.text`, `report.markdown` and `report.html`'s."""

import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final, Literal

from contract.variant import heading
from report.intervals import Ratio
from report.model import KEY_FIELDS, VariantKey, VariantRow

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
        "p99.9 ms",
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
        "after others",
        "added median",
        "added max",
        "max / file",
    }
)


def columns(*headings: str) -> tuple[Column, ...]:
    """Columns under `headings`, those of numbers aligned right."""
    return tuple(Column(heading, heading in _NUMERIC) for heading in headings)


def significant(value: float, digits: int) -> str:
    """`digits` significant digits and no exponent."""
    if value == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def format_ms(value: float) -> str:
    """Four significant digits and no exponent: 0.0002134, 0.4123, 12.35, 1235."""
    return significant(value, 4)


def format_figure(value: float | None) -> str:
    """A number of a cost or energy table: four significant digits, "-" for none."""
    return "-" if value is None else format_ms(value)


def format_ratio(ratio: float) -> str:
    """Like 3.10x or 1.02x: two decimals, fewer from 10x on, and three significant digits
    below 0.1x (0.0031x), which two decimals would show as 0.00x."""
    if 0 < ratio < 0.1:
        return f"{ratio:.3g}x"
    decimals = 2 if ratio < 10 else 1 if ratio < 100 else 0
    return f"{ratio:.{decimals}f}x"


def format_finished(moment: datetime | None) -> str:
    """A finish time to the minute, in UTC: 2026-12-03 05:59Z; "-" for none."""
    return "-" if moment is None else f"{moment.astimezone(UTC):%Y-%m-%d %H:%M}Z"


def format_bytes(count: int) -> str:
    """Like 97.7 MiB or 3.61 GiB: binary units, three significant digits."""
    value, unit = float(count), "bytes"
    for larger in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value, unit = value / 1024, larger
    return f"{count} bytes" if unit == "bytes" else f"{significant(value, 3)} {unit}"


def interval(low: float, high: float) -> str:
    return f"{format_ms(low)}-{format_ms(high)}"


def row_interval(row: VariantRow, low: float, high: float) -> str:
    """An interval of a row's latency, marked ≈ where it is the IQR approximation."""
    approximate = "≈" if row.estimate.method == "IQR approximation" else ""
    return approximate + interval(low, high)


NO_INTERVAL: Final = "no interval"
"""What a ratio's interval cell says where there is none (`Ratio.bounded`)."""


def ratio_interval(ratio: Ratio) -> str:
    if not ratio.bounded:
        return NO_INTERVAL
    paired = " paired" if ratio.paired else ""
    return f"{format_ratio(ratio.low)}-{format_ratio(ratio.high)}{paired}"


def key_cells(key: VariantKey) -> tuple[str, ...]:
    """A variant's key as the first cells of a row of any table of variants."""
    return tuple(key.value(name) for name in KEY_FIELDS)


KEY_HEADINGS: Final = tuple(heading(name) for name in KEY_FIELDS)
"""The headings of `key_cells`' columns."""


def no_variant(cluster: str, target: str) -> tuple[str, ...]:
    """The key cells of a run that names no variant: its cluster and target, "-" for the rest."""
    return (cluster, target, *("-",) * (len(KEY_FIELDS) - 2))


def format_p99(row: VariantRow) -> str:
    """A row's p99, marked ? where too few iterations lie beyond it."""
    return format_ms(row.latency.p99_ms) + ("" if row.is_p99_reliable else "?")


def format_p99_9(row: VariantRow) -> str:
    """A row's p99.9, marked ? where too few iterations lie beyond it; empty where its
    runner measured none."""
    tail = row.latency.p99_9_ms
    return "" if tail is None else format_ms(tail) + ("" if row.is_p99_9_reliable else "?")
