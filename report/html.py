"""The report as one self-contained web page: its PNG plots are inline data URIs, so the file
can be attached, mailed or archived alone, and nothing is fetched when it opens.

Plots are drawn on matplotlib's Agg canvas directly (no pyplot: no global figures, no
display) under matplotlib's default style, so a user's matplotlibrc cannot change them, and
PNGs carry no Software tag, so the same report gives the same bytes. Names on the page and
in the plots come from users, so the page escapes them, and so do the plots: a `$` would
otherwise start mathtext, and a lone one fail to draw.
"""

import base64
import html
import io
import math
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import matplotlib
import matplotlib.style
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import LogFormatter

from contract.pricing import INFERENCES
from report.analysis import Analysis, analyse
from report.cheapest import Candidate, CheapestHolder
from report.control import ControlAnswer, worst_run
from report.cost import CostPoint, Costs
from report.layout import lay_out
from report.model import (
    KEY_FIELDS,
    AccuracyState,
    BestConfiguration,
    Comparison,
    Report,
    VariantKey,
    VariantRow,
)
from report.table import Layout, Table

BOXES_PER_PLOT: Final = 40
COMPARISONS_PER_PLOT: Final = 6
FIGURES_PER_KIND: Final = 4
"""At most this many figures of each kind of plot. Figures grow with what they show, and
10,000 variants made about 700 of them, more than 5 minutes of drawing and a page nobody
reads; past the bound a kind draws its first items in the order its table lists them, and
says how many it left out (the tables list every one)."""
BARS_PER_PLOT: Final = 24
"""By target: at most this many targets of one comparison, the fastest (a comparison of 100
targets draws bars too thin to read)."""
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
Size = tuple[float, float]
"""Width and height in inches."""


@dataclass(frozen=True)
class Plot:
    """A plot's PNG bytes and the words that describe it."""

    png: bytes
    description: str


def chunked(items: Sequence[_Item], size: int) -> Iterator[Sequence[_Item]]:
    """`items` in runs of at most `size`: one figure each, so that no plot grows unreadable."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def bounded(
    items: Sequence[_Item], size: int, description: str, what: str
) -> Iterator[tuple[Sequence[_Item], str]]:
    """`items` in figures of at most `size`, at most FIGURES_PER_KIND of them, each with
    `description`, which says how many of the `what` (a plural) it left out, if any."""
    drawn = items[: size * FIGURES_PER_KIND]
    if len(drawn) < len(items):
        description += (
            f" Drawn: the first {len(drawn):,} of {len(items):,} {what}, as the tables list "
            f"them (at most {FIGURES_PER_KIND} figures of a kind); the tables give every one."
        )
    for chunk in chunked(drawn, size):
        yield chunk, description


class _PlainLogFormatter(LogFormatter):
    """LogFormatter's choice of ticks to label, written 0.002 and 20 rather than 2x10^-3."""

    def __call__(self, x: float, pos: int | None = None) -> str:
        return f"{x:g}" if super().__call__(x, pos) else ""


def _log_x(axes: Axes) -> None:
    """A log x axis with plain tick labels."""
    axes.set_xscale("log")
    axes.xaxis.set_major_formatter(_PlainLogFormatter())
    axes.xaxis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False))


def plot_text(text: str) -> str:
    """A user's name as a plot may draw it (a `$` would start mathtext)."""
    return text.replace("$", r"\$")


def figure_png(figure: Figure) -> bytes:
    """A figure as the page's PNGs are: the same figure always gives the same bytes."""
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=_DPI, metadata={"Software": None})
    return buffer.getvalue()


def _box(row: VariantRow, names: Sequence[str]) -> dict[str, Any]:
    latency = row.latency
    return {
        "label": plot_text(row.key.label(names)) + ("" if row.is_p99_reliable else " (p99?)"),
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


def _latency_plot(rows: Sequence[VariantRow], names: Sequence[str]) -> bytes:
    figure = Figure(figsize=(9, 1.2 + 0.35 * len(rows)), layout="constrained")
    axes = figure.add_subplot()
    axes.bxp(
        [_box(row, names) for row in rows],
        orientation="horizontal",
        shownotches=True,
        showfliers=True,
    )
    _log_x(axes)
    axes.invert_yaxis()
    axes.set_xlabel("latency per iteration (ms, log scale)")
    return figure_png(figure)


def _latency_plots(rows: Sequence[VariantRow]) -> list[Plot]:
    # Labels name only what tells the variants apart; one variant alone is named by its model.
    names = [name for name in KEY_FIELDS if len({row.key.value(name) for row in rows}) > 1]
    description = (
        "Latency per iteration: box p25 to p75, notch the median's 95% CI, "
        "whiskers min and p99 (p99?: too few iterations for it), dot max."
    )
    return [
        Plot(_latency_plot(chunk, names or ["model"]), words)
        for chunk, words in bounded(rows, BOXES_PER_PLOT, description, "variants")
    ]


def _bars(axes: Axes, comparison: Comparison) -> None:
    rows = [entry.row for entry in comparison.entries[:BARS_PER_PLOT]]
    axes.bar(
        [plot_text(row.key.label(comparison.varies)) for row in rows],
        [row.latency.p50_ms for row in rows],
        yerr=[
            [row.latency.p50_ms - row.ci_low_ms for row in rows],
            [row.ci_high_ms - row.latency.p50_ms for row in rows],
        ],
        capsize=4,
        color="#4c72b0",
    )
    title = plot_text(comparison.describe()).replace(", ", "\n")
    if len(rows) < len(comparison.entries):
        title += f"\n(the fastest {len(rows)} of {len(comparison.entries)})"
    axes.set_title(title, fontsize="small")
    axes.set_ylabel("p50 ms (95% CI)")


def _grid(comparisons: Sequence[_Item], draw: Callable[[Axes, _Item], None], size: Size) -> bytes:
    """A figure of one plot per comparison (or model), `_PLOTS_PER_LINE` to a line, each
    `size` inches."""
    columns = min(_PLOTS_PER_LINE, len(comparisons))
    lines = math.ceil(len(comparisons) / columns)
    figure = Figure(figsize=(size[0] * columns, size[1] * lines), layout="constrained")
    for number, comparison in enumerate(comparisons, start=1):
        draw(figure.add_subplot(lines, columns, number), comparison)
    return figure_png(figure)


def _target_plots(comparisons: Sequence[Comparison]) -> list[Plot]:
    description = "By target: p50 latency per iteration, error bars the 95% CI."
    return [
        Plot(_grid(chunk, _bars, (4, 3.6)), words)
        for chunk, words in bounded(
            comparisons, COMPARISONS_PER_PLOT, description, "comparisons by target"
        )
    ]


_CURVE_FIELDS: Final = tuple(name for name in KEY_FIELDS if name != "batch_size")
"""A batch-size curve holds all of these fixed."""


def _curves(rows: Sequence[VariantRow]) -> dict[tuple[str, ...], list[VariantRow]]:
    curves: dict[tuple[str, ...], list[VariantRow]] = defaultdict(list)
    for row in rows:
        curves[tuple(row.key.value(name) for name in _CURVE_FIELDS)].append(row)
    return {line: sorted(points, key=lambda row: row.key.batch_size)
            for line, points in sorted(curves.items()) if len(points) > 1}  # fmt: skip


def _batch_plot(curves: dict[tuple[str, ...], list[VariantRow]]) -> bytes:
    figure = Figure(figsize=(11, 4.2), layout="constrained")
    latency, throughput = figure.subplots(1, 2)
    # Labels name only what tells the curves apart.
    first: VariantKey = next(iter(curves.values()))[0].key
    names = [
        name
        for name in _CURVE_FIELDS
        if any(points[0].key.value(name) != first.value(name) for points in curves.values())
    ]
    for points in curves.values():
        label = plot_text(points[0].key.label(names or ["model"]))
        batches = [row.key.batch_size for row in points]
        latency.errorbar(
            batches,
            [row.latency.p50_ms for row in points],
            yerr=[
                [row.latency.p50_ms - row.ci_low_ms for row in points],
                [row.ci_high_ms - row.latency.p50_ms for row in points],
            ],
            marker="o",
            capsize=3,
            label=label,
        )
        throughput.plot(batches, [row.samples_per_s for row in points], marker="o", label=label)
    for axes, ylabel in (
        (latency, "p50 latency per batch (ms, 95% CI)"),
        (throughput, "samples/s at the p50"),
    ):
        axes.set_xscale("log", base=2)
        axes.set_xlabel("batch size (log scale)")
        axes.set_ylabel(ylabel)
        axes.xaxis.set_major_formatter(_PlainLogFormatter())
    throughput.legend(fontsize="small")
    return figure_png(figure)


def _batch_plots(rows: Sequence[VariantRow]) -> list[Plot]:
    description = (
        "Latency and throughput against batch size, a line per model, precision, "
        "quantization, runtime and target."
    )
    return [
        Plot(_batch_plot(dict(chunk)), words)
        for chunk, words in bounded(
            list(_curves(rows).items()), COMPARISONS_PER_PLOT, description, "lines"
        )
    ]


@dataclass(frozen=True)
class TradeoffPoint:
    """One configuration in the speed-accuracy plot."""

    label: str
    latency_ms: float
    """p50 per sample."""
    low_ms: float
    high_ms: float
    error: float
    """The worst output's max relative error against the fp32 reference."""
    state: AccuracyState
    on_front: bool
    """Within its gate, and no other configuration within its gate is both as fast and as
    accurate: a choice worth making."""
    doubtful: bool = False
    """Its run is flagged (contended, noisy...), its comparison with the fastest is in doubt,
    or, for the best, it is not told apart from the runner-up beyond noise: a pick the noise
    may have made."""


def tradeoff_points(comparison: Comparison) -> tuple[tuple[TradeoffPoint, ...], int]:
    """The configurations of a best-configuration comparison that have an error to draw,
    fastest first, the Pareto front of those within their gate marked; and how many have
    none (accuracy not measured). Front only among those within the gate: one outside it
    is no choice, however it trades."""
    drawn: list[tuple[VariantRow, float, bool]] = []
    entries = comparison.entries
    for entry in entries:
        accuracy = entry.row.accuracy.accuracy
        error = accuracy.max_rel_error if accuracy is not None and accuracy.measured else None
        doubtful = bool(entry.row.doubts or entry.doubts) or (
            entry is entries[0] and len(entries) > 1 and not entries[1].is_significant
        )
        if error is not None:
            drawn.append((entry.row, error, doubtful))
    drawn.sort(key=lambda drawn: (drawn[0].p50_per_sample_ms, drawn[1], drawn[0].key))
    points = []
    lowest = math.inf
    for row, error, doubtful in drawn:
        on_front = row.accuracy.state == "passed" and error < lowest
        lowest = min(lowest, error) if on_front else lowest
        points.append(
            TradeoffPoint(
                label=row.key.label(comparison.varies),
                latency_ms=row.p50_per_sample_ms,
                low_ms=row.ci_per_sample_ms[0],
                high_ms=row.ci_per_sample_ms[1],
                error=error,
                state=row.accuracy.state,
                on_front=on_front,
                doubtful=doubtful,
            )
        )
    return tuple(points), len(comparison.entries) - len(points)


LABELLED_POINTS: Final = 12
"""With more configurations than this in a plot, only the front's are named."""
_NEAR: Final = (0.2, 0.06)
"""Labels closer than this, as fractions of the plot's log span in x and y, would overprint:
a label is about a fifth of a plot wide and a sixteenth high."""
_LINE: Final = 9
"""Points a label set below another moves down: one line of x-small text."""
DOUBTFUL: Final = "?: flagged, or not told apart beyond noise"
"""The legend's entry for a doubtful pick, marked with a ? after its name."""


def _labels(points: Sequence[TradeoffPoint], floor: float) -> list[tuple[TradeoffPoint, int]]:
    """The points to name, front first (its first is the best), each with how many lines
    below its point the name goes: a front point near one named before it moves down a line
    for each; any other point near one is not named (the table names it)."""
    chosen = [point for point in points if point.on_front] + [
        point for point in points if not point.on_front and len(points) <= LABELLED_POINTS
    ]
    where = {
        id(point): (math.log10(point.latency_ms), math.log10(max(point.error, floor)))
        for point in points
    }
    spans = (
        [(max(axis) - min(axis)) or 1.0 for axis in zip(*where.values(), strict=True)]
        if where
        else [1.0, 1.0]
    )
    placed: list[tuple[TradeoffPoint, int]] = []
    for point in chosen:
        x, y = where[id(point)]
        near = sum(
            abs(x - where[id(other)][0]) < _NEAR[0] * spans[0]
            and abs(y - where[id(other)][1]) < _NEAR[1] * spans[1]
            for other, _ in placed
        )
        if near and not point.on_front:
            continue
        placed.append((point, near))
    return placed


def _front(axes: Axes, xs: Sequence[float], ys: Sequence[float], label: str) -> None:
    """A Pareto front, fastest first: ringed as well as joined, since a front of one point
    draws no line."""
    axes.plot(
        xs,
        ys,
        drawstyle="steps-post",
        color="#55a868",
        linewidth=1.5,
        marker="o",
        markersize=12,
        markerfacecolor="none",
        label=label,
    )


def _tradeoff(axes: Axes, comparison: Comparison) -> None:
    points, undrawn = tradeoff_points(comparison)
    # An exact output (error 0) has no place on a log axis: it sits on the floor, a decade
    # below the smallest error drawn.
    positive = [point.error for point in points if point.error > 0]
    floor = min(positive) / 10 if positive else 1e-9
    for state, marker, color, name in (
        ("passed", "o", "#4c72b0", "within its accuracy gate"),
        ("accuracy_failed", "X", "#c44e52", "accuracy_failed (outside its gate)"),
    ):
        chosen = [point for point in points if point.state == state]
        if not chosen:
            continue
        axes.errorbar(
            [point.latency_ms for point in chosen],
            [max(point.error, floor) for point in chosen],
            xerr=[
                [point.latency_ms - point.low_ms for point in chosen],
                [point.high_ms - point.latency_ms for point in chosen],
            ],
            fmt=marker,
            color=color,
            markersize=7,
            capsize=2,
            label=name,
        )
    front = [point for point in points if point.on_front]
    if front:
        _front(
            axes,
            [point.latency_ms for point in front],
            [max(point.error, floor) for point in front],
            "Pareto front (within the gate)",
        )
    doubtful = [point for point in points if point.doubtful]
    if doubtful:
        axes.plot(
            [point.latency_ms for point in doubtful],
            [max(point.error, floor) for point in doubtful],
            linestyle="none",
            marker="s",
            markersize=10,
            markerfacecolor="none",
            color="#dd8452",
            label=DOUBTFUL,
        )
    for point, lines in _labels(points, floor):
        # The front's first point is the fastest within its gate: the best configuration.
        best = "best" if front and point is front[0] else ""
        doubt = "?" if point.doubtful else ""
        named = f"{best}{doubt}: {point.label}" if best else f"{point.label}{doubt and ' ?'}"
        exact = " (error 0)" if point.error == 0 else ""
        axes.annotate(
            plot_text(f"{named}{exact}"),
            (point.latency_ms, max(point.error, floor)),
            xytext=(4, 4 - _LINE * lines),
            textcoords="offset points",
            fontsize="x-small",
        )
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.xaxis.set_major_formatter(_PlainLogFormatter())
    axes.xaxis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False))
    title = plot_text(comparison.describe()).replace(", ", "\n")
    if undrawn:
        title += f"\n({undrawn} not measured for accuracy, not drawn)"
    axes.set_title(title, fontsize="small")
    axes.set_xlabel("p50 ms per sample (log; 95% CI)")
    axes.set_ylabel("max relative error vs fp32 (log)")
    axes.legend(fontsize="x-small")


def _tradeoff_plots(best_configurations: Sequence[BestConfiguration]) -> list[Plot]:
    comparisons = [
        best.comparison for best in best_configurations if tradeoff_points(best.comparison)[0]
    ]
    description = (
        "Speed against accuracy, per model and target: each configuration's p50 latency "
        "per sample (95% CI) against its outputs' largest relative error from the "
        "untouched program's fp32 outputs; dots within their accuracy gate, crosses "
        "outside it (accuracy_failed). The Pareto front of those within it (none other is "
        "both faster and more accurate) is ringed and joined by a line. A pick the noise "
        "may have made (its run flagged, or not told apart from the runner-up beyond noise) "
        "is boxed and its name marked ?. Names that would overprint are set a line lower "
        "(the front's) or left out (the table names them). An error of 0 is drawn a decade "
        "below the smallest."
    )
    return [
        Plot(_grid(chunk, _tradeoff, (5, 4.4)), words)
        for chunk, words in bounded(comparisons, COMPARISONS_PER_PLOT, description, "sweeps")
    ]


def _cost_plot(axes: Axes, points: Sequence[CostPoint], currency: str) -> None:
    """One model's targets: p50 latency per sample against the cost of 1,000 inferences,
    the Pareto front ringed and joined."""
    axes.errorbar(
        [point.p50_per_sample_ms for point in points],
        [point.cost_per_1000 for point in points],
        xerr=[
            [point.p50_per_sample_ms - point.low_ms for point in points],
            [point.high_ms - point.p50_per_sample_ms for point in points],
        ],
        fmt="o",
        color="#4c72b0",
        markersize=7,
        capsize=2,
        label="a target's best configuration",
    )
    front = [point for point in points if point.on_front]
    _front(
        axes,
        [point.p50_per_sample_ms for point in front],
        [point.cost_per_1000 for point in front],
        "Pareto front",
    )
    for point in points:
        if point.on_front or len(points) <= LABELLED_POINTS:
            axes.annotate(
                plot_text(f"{point.cluster}/{point.target}: {point.configuration}"),
                (point.p50_per_sample_ms, point.cost_per_1000),
                xytext=(4, 4),
                textcoords="offset points",
                fontsize="x-small",
            )
    # Only latency is on a log axis: a free target (a price of 0) has no place on one.
    _log_x(axes)
    axes.set_title(plot_text(points[0].model), fontsize="small")
    axes.set_xlabel("p50 ms per sample (log; 95% CI)")
    axes.set_ylabel(f"{plot_text(currency)} per {INFERENCES:,} inferences")
    axes.legend(fontsize="x-small")


def _cost_plots(found: Costs) -> list[Plot]:
    """Latency against cost per 1,000 inferences, a plot per model, where prices give any."""
    if found.currency is None or not found.points:
        return []
    currency = found.currency
    by_model: dict[str, list[CostPoint]] = defaultdict(list)
    for point in found.points:
        by_model[point.model].append(point)
    description = (
        f"Speed against cost, per model: each target's best configuration (the fastest "
        f"within its accuracy gate) at its p50 latency per sample (95% CI) and what "
        f"{INFERENCES:,} inferences cost there ({currency}, the devices its pod held for "
        "that long at the price in specs/clusters.yaml). The Pareto front (no other "
        "target is both faster and cheaper) is ringed and joined by a line."
    )
    return [
        Plot(_grid(chunk, lambda axes, points: _cost_plot(axes, points, currency), (5, 4.4)), words)
        for chunk, words in bounded(
            list(by_model.values()), COMPARISONS_PER_PLOT, description, "models"
        )
    ]


_HELD_COLOURS: Final = {"held": "#4c72b0", "not held": "#c44e52", "undecided": "#8c8c8c"}


def _strip_plot(answer: ControlAnswer) -> Plot | None:
    """Each query's latency in the order it was issued, the deadline drawn across, the
    misses in red: whether misses come alone or in bursts, early or late in the run."""
    timeline = answer.row.timeline
    assert timeline is not None
    try:
        latencies = [ns / 1e6 for ns in timeline.durations_ns()]
    except ValueError:
        return None  # damaged samples: the control table still says what the run did
    queries = [index * timeline.stride for index in range(len(latencies))]
    figure = Figure(figsize=(10, 3.2), layout="constrained")
    axes = figure.add_subplot()
    axes.plot(queries, latencies, color="#4c72b0", linewidth=0.6, label="latency")
    missed = [(q, ms) for q, ms in zip(queries, latencies, strict=True) if ms > answer.deadline_ms]
    if missed:
        xs, ys = zip(*missed, strict=True)
        axes.plot(xs, ys, "o", color="#c44e52", markersize=3, label=f"missed ({len(missed):,})")
    axes.axhline(
        answer.deadline_ms,
        color="#c44e52",
        linestyle="--",
        linewidth=1,
        label=f"deadline {answer.deadline_ms:g} ms",
    )
    key = answer.row.key
    axes.set_title(
        plot_text(
            f"{key.model} on {key.cluster}/{key.target} at {answer.rate_hz:g} Hz: "
            f"{answer.held}, missed {answer.miss_rate:.2%}"
        ),
        fontsize="small",
    )
    axes.set_xlabel("query" + (f" (every {timeline.stride}th kept)" if timeline.stride > 1 else ""))
    axes.set_ylabel("latency ms, from its scheduled arrival")
    axes.legend(fontsize="x-small", loc="upper right")
    return Plot(
        figure_png(figure),
        "Latency over time, the worst fixed-rate run (the most missed): each query's latency "
        "from its scheduled arrival, in the order issued; the dashed line its deadline, the "
        "red dots its misses.",
    )


def _p99_9_cost_plot(axes: Axes, holder: CheapestHolder) -> None:
    """One model at one rate: each variant's p99.9 against an hour of its devices, coloured
    by whether it held, the deadline across, the front of those that can win ringed."""
    drawn = [c for c in (*holder.ranked, *holder.left_out) if _drawable(c)]
    for held, colour in _HELD_COLOURS.items():
        chosen = [c for c in drawn if c.held == held]
        if chosen:
            axes.plot(
                [_by_tail(c)[0] for c in chosen],
                [_by_tail(c)[1] for c in chosen],
                "o",
                color=colour,
                markersize=7,
                label=held,
            )
    front, cheapest = [], math.inf
    for candidate in sorted((c for c in drawn if c.can_win), key=_by_tail):
        assert candidate.cost_per_hour is not None
        if candidate.cost_per_hour < cheapest:
            front.append(candidate)
            cheapest = candidate.cost_per_hour
    if front:
        _front(
            axes,
            [c.p99_9_ms or 0.0 for c in front],
            [c.cost_per_hour or 0.0 for c in front],
            "Pareto front of those that can win",
        )
    axes.axvline(
        holder.deadline_ms,
        color="#c44e52",
        linestyle="--",
        linewidth=1,
        label=f"deadline {holder.deadline_ms:g} ms",
    )
    for candidate in drawn:
        cheapest_one = candidate is holder.cheapest
        if candidate in front or len(drawn) <= LABELLED_POINTS:
            axes.annotate(
                plot_text(candidate.configuration + (" (cheapest)" if cheapest_one else "")),
                (candidate.p99_9_ms or 0.0, candidate.cost_per_hour or 0.0),
                xytext=(4, 4),
                textcoords="offset points",
                fontsize="x-small",
            )
    _log_x(axes)
    axes.set_title(plot_text(f"{holder.model} at {holder.rate_hz:g} Hz"), fontsize="small")
    axes.set_xlabel("p99.9 ms (log)")
    axes.set_ylabel(f"{plot_text(holder.currency or '')} an hour")
    # From 0: how many times one costs another is read off the heights.
    axes.set_ylim(bottom=0)
    axes.legend(fontsize="x-small")


def _drawable(candidate: Candidate) -> bool:
    return candidate.p99_9_ms is not None and candidate.cost_per_hour is not None


def _by_tail(candidate: Candidate) -> tuple[float, float]:
    """Where a drawable candidate is drawn: its p99.9 and its cost an hour."""
    return candidate.p99_9_ms or 0.0, candidate.cost_per_hour or 0.0


def _control_plots(analysis: Analysis) -> list[Plot]:
    """The worst fixed-rate run over time, and p99.9 against cost per model and rate."""
    plots = []
    worst = worst_run(analysis.control)
    strip = _strip_plot(worst) if worst is not None else None
    if strip is not None:
        plots.append(strip)
    holders = [h for h in analysis.cheapest if any(map(_drawable, (*h.ranked, *h.left_out)))]
    description = (
        "Tail against cost, per model and rate: each fixed-rate variant's p99.9 against what "
        "an hour of the devices its pod held costs at the price in specs/clusters.yaml, "
        "coloured by whether it held the rate; the dashed line the deadline. The Pareto front "
        "of those that can win (held, within or not known to fail their accuracy gate: no "
        "other is both as short-tailed and as cheap) is ringed and joined."
    )
    plots.extend(
        Plot(_grid(chunk, _p99_9_cost_plot, (5, 4.4)), words)
        for chunk, words in bounded(holders, COMPARISONS_PER_PLOT, description, "models")
    )
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


def _html_plot(plot: Plot) -> str:
    description = _escape(plot.description)
    source = "data:image/png;base64," + base64.b64encode(plot.png).decode("ascii")
    return (
        f'<figure><img src="{source}" alt="{description}">'
        f"<figcaption>{description}</figcaption></figure>"
    )


def html_page(layout: Layout, plots: Sequence[Plot]) -> str:
    """A layout as a page, with `plots` after it."""
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


def to_html(report: Report) -> str:
    """The page: the tables every format shows, then the plots.

    Latency box plots are drawn from each result's percentiles: box p25 to p75, notch the
    median's CI, whiskers min and p99 (the tail an SLO cares about), a dot at max. Bars of
    p50 with CI error bars show each by-target comparison; lines of latency and throughput
    against batch size show each sweep over batch sizes; points of latency per sample
    against error show what each configuration of a sweep costs in accuracy, its Pareto front
    marked; points of latency against the cost of 1,000 inferences, one per target, what
    each target costs to serve on (with prices), its Pareto front marked. Fixed-rate runs
    come first: the worst run's latency over time against its deadline, and each variant's
    p99.9 against what an hour of its devices costs, the front of those that can win marked.
    """
    analysis = analyse(report)
    with matplotlib.style.context("default"):
        plots = [
            *_control_plots(analysis),
            *(_latency_plots(report.variants) if report.variants else []),
            *_target_plots(report.by_target),
            *_batch_plots(report.variants),
            *_tradeoff_plots(report.best_configurations),
            *_cost_plots(analysis.costs),
        ]
    return html_page(lay_out(analysis), plots)
