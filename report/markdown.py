"""A report, or a trend, for a pull-request comment: GitHub tables, regressions first under a
red marker, details folded; every cell escaped, since names come from users."""

import html
from collections.abc import Iterable
from typing import Final

from contract.text import shown
from report.analysis import analyse
from report.layout import lay_out
from report.model import Report
from report.table import Layout, Table

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
    return layout_markdown(lay_out(analyse(report)))


def layout_markdown(layout: Layout) -> str:
    """A layout (a report's, a trend's) for a pull-request comment."""
    lines = [f"## {_md(layout.title)}", ""]
    if layout.headline:
        lines.extend([f"🔴 **{_md(layout.headline)}**", ""])
    lines.append("  \n".join(map(_md, layout.summary)))
    for table in layout.tables:
        lines.extend(_markdown_section(table))
    return "\n".join(lines) + "\n"
