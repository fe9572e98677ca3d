"""The report as a web page: `index.html` and its PNG plots in one folder, nothing fetched.

Plots are drawn on matplotlib's Agg canvas directly (no pyplot: no global figures, no
display) under matplotlib's default style, so a user's matplotlibrc cannot change them, and
PNGs carry no Software tag, so the same report gives the same bytes. Names on the page and
in the plots come from users, so the page escapes them, and so do the plots: a `$` would
otherwise start mathtext, and a lone one fail to draw.
"""

import html
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

import matplotlib
import matplotlib.style
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter

from collector.report import KEY_FIELDS, Comparison, Report, VariantRow
from collector.report_render import Layout, Table, lay_out

BOXES_PER_PLOT: Final = 40
COMPARISONS_PER_PLOT: Final = 6
_PLOTS_PER_LINE: Final = 3
_DPI: Final = 100
_STYLE: Final = """
body { font-family: sans-serif; margin: 2em; }
table { border-collapse: collapse; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.6em; text-align: left; }
td.number { text-align: right; font-variant-numeric: tabular-nums; }
.alert { color: #b00020; }
.note { color: #555; font-size: 0.9em; margin: 0.2em 0; }
img { max-width: 100%; }
"""


_Item = TypeVar("_Item")


@dataclass(frozen=True)
class _Plot:
    file: str
    description: str


def _chunks(items: Sequence[_Item], size: int) -> Iterator[Sequence[_Item]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class _PlainLogFormatter(LogFormatter):
    """LogFormatter's choice of ticks to label, written 0.002 and 20 rather than 2x10^-3."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return f"{x:g}" if super().__call__(x, pos) else ""


def _plain(text: str) -> str:
    return text.replace("$", r"\$")


def _save(figure: Figure, path: Path) -> None:
    FigureCanvasAgg(figure)
    figure.savefig(path, format="png", dpi=_DPI, metadata={"Software": None})


def _box(row: VariantRow, names: Sequence[str]) -> dict[str, Any]:
    latency = row.latency
    return {
        "label": _plain(row.key.label(names)) + ("" if row.is_p99_reliable else " (p99?)"),
        "q1": latency.p25_ms,
        "med": latency.p50_ms,
        "q3": latency.p75_ms,
        "whislo": latency.min_ms,
        "whishi": latency.p99_ms,
        # A notch past the measured range shows nothing the tables do not, and on a log
        # axis a lower end of 0 cannot be drawn.
        "cilo": max(row.ci_low_ms, latency.min_ms),
        "cihi": min(row.ci_high_ms, latency.max_ms),
        "fliers": [latency.max_ms],
    }


def _latency_plot(rows: Sequence[VariantRow], names: Sequence[str], path: Path) -> None:
    figure = Figure(figsize=(9, 1.2 + 0.35 * len(rows)), layout="constrained")
    axes = figure.add_subplot()
    axes.bxp(
        [_box(row, names) for row in rows],
        orientation="horizontal",
        shownotches=True,
        showfliers=True,
    )
    axes.set_xscale("log")
    axes.xaxis.set_major_formatter(_PlainLogFormatter())
    axes.xaxis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False))
    axes.invert_yaxis()
    axes.set_xlabel("latency per iteration (ms, log scale)")
    _save(figure, path)


def _latency_plots(rows: Sequence[VariantRow], folder: Path) -> list[_Plot]:
    # Labels name only what tells the variants apart; one variant alone is named by its model.
    names = [name for name in KEY_FIELDS if len({row.key.value(name) for row in rows}) > 1]
    plots = []
    for number, chunk in enumerate(_chunks(rows, BOXES_PER_PLOT), start=1):
        file = f"latency-{number:02d}.png"
        _latency_plot(chunk, names or ["model"], folder / file)
        plots.append(
            _Plot(
                file,
                "Latency per iteration: box p25 to p75, notch the median's 95% CI, "
                "whiskers min and p99 (p99?: too few iterations for it), dot max.",
            )
        )
    return plots


def _bars(axes: Axes, comparison: Comparison) -> None:
    rows = [entry.row for entry in comparison.entries]
    axes.bar(
        [_plain(row.key.label(comparison.varies)) for row in rows],
        [row.latency.p50_ms for row in rows],
        yerr=[
            [row.latency.p50_ms - row.ci_low_ms for row in rows],
            [row.ci_high_ms - row.latency.p50_ms for row in rows],
        ],
        capsize=4,
        color="#4c72b0",
    )
    axes.set_title(_plain(comparison.describe()).replace(", ", "\n"), fontsize="small")
    axes.set_ylabel("p50 ms (95% CI)")


def _target_plot(comparisons: Sequence[Comparison], path: Path) -> None:
    columns = min(_PLOTS_PER_LINE, len(comparisons))
    lines = math.ceil(len(comparisons) / columns)
    figure = Figure(figsize=(4 * columns, 3.6 * lines), layout="constrained")
    for number, comparison in enumerate(comparisons, start=1):
        _bars(figure.add_subplot(lines, columns, number), comparison)
    _save(figure, path)


def _target_plots(comparisons: Sequence[Comparison], folder: Path) -> list[_Plot]:
    plots = []
    for number, chunk in enumerate(_chunks(comparisons, COMPARISONS_PER_PLOT), start=1):
        file = f"targets-{number:02d}.png"
        _target_plot(chunk, folder / file)
        plots.append(_Plot(file, "By target: p50 latency per iteration, error bars the 95% CI."))
    return plots


def _escape(text: str) -> str:
    return html.escape(text, quote=True)


def _html_table(table: Table) -> str:
    head = "".join(f"<th>{_escape(column.heading)}</th>" for column in table.columns)
    body = "\n".join(
        "<tr>"
        + "".join(
            f'<td class="number">{_escape(cell)}</td>'
            if column.is_numeric
            else f"<td>{_escape(cell)}</td>"
            for cell, column in zip(row, table.columns, strict=True)
        )
        + "</tr>"
        for row in table.rows
    )
    notes = "".join(f'\n<p class="note">{_escape(note)}</p>' for note in table.notes)
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>{notes}"


def _html_section(table: Table) -> str:
    title = _escape(table.title)
    if table.kind == "detail":
        return f"<details>\n<summary>{title}</summary>\n{_html_table(table)}\n</details>"
    heading = (
        f'<h2 class="alert">&#9888; {title}</h2>' if table.kind == "alert" else f"<h2>{title}</h2>"
    )
    return f"{heading}\n{_html_table(table)}"


def _html_plot(plot: _Plot) -> str:
    description = _escape(plot.description)
    return (
        f'<figure><img src="{_escape(plot.file)}" alt="{description}">'
        f"<figcaption>{description}</figcaption></figure>"
    )


def _page(layout: Layout, plots: Sequence[_Plot]) -> str:
    title = _escape(layout.title)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        '<head><meta charset="utf-8">',
        f"<title>{title}</title>",
        f"<style>{_STYLE}</style></head>",
        "<body>",
        f"<h1>{title}</h1>",
    ]
    if layout.headline:
        parts.append(f'<p class="alert"><strong>&#9888; {_escape(layout.headline)}</strong></p>')
    parts.extend(f"<p>{_escape(line)}</p>" for line in layout.summary)
    parts.extend(map(_html_section, layout.tables))
    if plots:
        parts.extend(["<h2>Plots</h2>", *map(_html_plot, plots)])
    parts.extend(["</body>", "</html>"])
    return "\n".join(parts) + "\n"


def write_html(report: Report, folder: Path) -> Path:
    """Write `index.html` and its PNGs into `folder` (created if missing); the page's path.

    Latency box plots are drawn from the stored percentiles, since no samples are stored:
    box p25 to p75, notch the median's CI, whiskers min and p99 (the tail an SLO cares
    about), a dot at max. A bar chart of p50 with CI error bars shows each by-target
    comparison. Files of an earlier report in the same folder are overwritten, not removed.
    """
    folder.mkdir(parents=True, exist_ok=True)
    with matplotlib.style.context("default"):
        plots = [
            *(_latency_plots(report.variants, folder) if report.variants else []),
            *_target_plots(report.by_target, folder),
        ]
    page = folder / "index.html"
    page.write_text(_page(lay_out(report), plots), encoding="utf-8")
    return page
