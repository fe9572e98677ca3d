"""`collector report --trend --format html`: the trend's tables, then per cluster and target
a small plot per variant: its p50 in each run, the band of the runs before it (their range:
the noise the history shows), the thresholds the rule judges by, and each regression or
improvement marked. Drawn as the report's plots are (report.html): the same trend
gives the same bytes."""

from collections import defaultdict
from collections.abc import Sequence
from typing import Final

import matplotlib.style
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from report.html import Plot, chunked, figure_png, html_page, plot_text
from report.trend import Point, Trend, VariantTrend
from report.trend_render import lay_out_trend

VARIANTS_PER_PLOT: Final = 12
_COLUMNS: Final = 3
_MARKERS: Final = {
    "regression": ("v", "#b00020"),
    "improvement": ("^", "#1b7f3b"),
    "within noise": ("o", "#1f77b4"),
    "not enough history": ("o", "#7f7f7f"),
    "flagged": ("x", "#7f7f7f"),
}
"""How each verdict's point is drawn: a regression is a red triangle pointing down."""


def _band(axes: Axes, positions: dict[str, int], points: Sequence[Point], floor: float) -> None:
    """The range of each point's reference, and the thresholds around its median."""
    judged = [point for point in points if point.reference is not None]
    if not judged:
        return
    xs = [positions[point.run.run.label] for point in judged]
    references = [point.reference for point in judged if point.reference is not None]
    axes.fill_between(
        xs,
        [reference.low_ms for reference in references],
        [reference.high_ms for reference in references],
        step="mid",
        alpha=0.2,
        color="#1f77b4",
        label="range of the runs before",
    )
    thresholds = [reference.threshold(floor) for reference in references]
    axes.step(
        xs,
        [r.median_ms * (1 + t) for r, t in zip(references, thresholds, strict=True)],
        where="mid",
        linestyle="--",
        linewidth=0.8,
        color="#b00020",
        label="regression threshold",
    )
    axes.step(
        xs,
        [r.median_ms / (1 + t) for r, t in zip(references, thresholds, strict=True)],
        where="mid",
        linestyle="--",
        linewidth=0.8,
        color="#1b7f3b",
        label="improvement threshold",
    )


def _variant(axes: Axes, variant: VariantTrend, positions: dict[str, int], trend: Trend) -> None:
    _band(axes, positions, variant.points, trend.floor)
    xs = [positions[point.run.run.label] for point in variant.points]
    axes.plot(xs, [point.run.p50_ms for point in variant.points], color="#1f77b4", linewidth=1)
    for verdict, (marker, color) in _MARKERS.items():
        chosen = [point for point in variant.points if point.verdict == verdict]
        if chosen:
            axes.scatter(
                [positions[point.run.run.label] for point in chosen],
                [point.run.p50_ms for point in chosen],
                marker=marker,
                color=color,
                zorder=3,
                label=verdict,
            )
    for point in variant.points:
        if point.stack:
            # A new stack starts the history afresh (report/trend.py): a line says where.
            axes.axvline(positions[point.run.run.label] - 0.5, color="#7f7f7f", linewidth=0.8)
    axes.set_title(plot_text(f"{variant.key.describe()}: {variant.verdict}"), fontsize=9)
    axes.set_ylabel("p50 ms", fontsize=8)
    axes.tick_params(labelsize=7)


def _plot(trend: Trend, variants: Sequence[VariantTrend]) -> bytes:
    labels = [run.label for run in trend.runs]
    positions = {label: index for index, label in enumerate(labels)}
    rows = -(-len(variants) // _COLUMNS)
    figure = Figure(figsize=(4 * _COLUMNS, 2.6 * rows + 0.6), layout="constrained")
    grid = figure.subplots(rows, _COLUMNS, squeeze=False)
    for index, variant in enumerate(variants):
        axes = grid[index // _COLUMNS][index % _COLUMNS]
        _variant(axes, variant, positions, trend)
        shown = sorted({positions[point.run.run.label] for point in variant.points})
        axes.set_xticks(shown, [plot_text(labels[x]) for x in shown], rotation=30, ha="right")
    for index in range(len(variants), rows * _COLUMNS):
        grid[index // _COLUMNS][index % _COLUMNS].set_visible(False)
    handles, names = grid[0][0].get_legend_handles_labels()
    figure.legend(handles, names, loc="outside lower center", ncols=4, fontsize=8)
    return figure_png(figure)


def trend_html(trend: Trend) -> str:
    """The page: the trend's tables, then the plots, a figure per cluster and target (each
    of at most VARIANTS_PER_PLOT variants)."""
    groups: dict[tuple[str, str], list[VariantTrend]] = defaultdict(list)
    for variant in trend.variants:
        groups[variant.key.cluster, variant.key.target].append(variant)
    plots = []
    with matplotlib.style.context("default"):
        for (cluster, target), variants in sorted(groups.items()):
            for chunk in chunked(variants, VARIANTS_PER_PLOT):
                plots.append(
                    Plot(
                        _plot(trend, chunk),
                        f"p50 per run of {len(chunk)} variants on {target} ({cluster}): the "
                        "band is the range of the usable runs before each run, the dashed "
                        "lines the thresholds the rule judges by",
                    )
                )
    return html_page(lay_out_trend(trend), plots)
