"""A report, or a trend, for a terminal: fixed-width columns, alerts marked with !!."""

from contract.text import shown
from report.analysis import analyse
from report.layout import lay_out
from report.model import Report
from report.table import Layout, Table


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
    return layout_text(lay_out(analyse(report)))


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
