"""The Grafana dashboard of the collector's metrics, built with grafana-foundation-sdk.

One dashboard for the whole fleet: gather pushes every cluster's results with a `cluster`
label, so a variable narrows it to some. Each panel reads one family of `contract.metrics`;
a variant without device-seconds, a price or energy has no series in those panels.

Pushed gauges hold their last value until the next gather replaces it, so a series over time
is a staircase with one step per run, and the counters hold what the latest gather saw (a
Pushgateway group is replaced whole on each push), not a running total.
"""

from typing import Final

from grafana_foundation_sdk.builders import stat, timeseries
from grafana_foundation_sdk.builders.common import StackingConfig, VizLegendOptions
from grafana_foundation_sdk.builders.dashboard import Dashboard as DashboardBuilder
from grafana_foundation_sdk.builders.dashboard import DatasourceVariable, QueryVariable, Row
from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.common import (
    DataSourceRef,
    GraphDrawStyle,
    LegendDisplayMode,
    LegendPlacement,
    StackingMode,
)
from grafana_foundation_sdk.models.dashboard import Panel, VariableRefresh, VariableSort

from contract.metrics import (
    ALLOCATED_DEVICE_SECONDS,
    AVERAGE_POWER_WATTS,
    CLUSTER_LABEL,
    COST_PER_1K_INFERENCES,
    CURRENCY_LABEL,
    DEVICE_LABEL,
    ENERGY_JOULES_PER_INFERENCE,
    JOB_DURATION,
    JOB_LABELS,
    JOBS_OBSERVED,
    LAST_RESULT_TIMESTAMP,
    LATENCY_P50,
    LATENCY_P99_9,
    MISS_RATE,
    OUTCOME_LABEL,
    REASON_LABEL,
    THROUGHPUT,
    VARIANT_FAILURES,
    WORKFLOW_LABEL,
    histogram_series,
    total,
)
from synth.monitoring.queries import FILTERED_LABELS, VARIANT_LEGEND, legend, selector

UID: Final = "benchfleet"
"""Stable across regenerations, so Grafana replaces the dashboard instead of adding one."""
TITLE: Final = "benchfleet: model benchmarks"
DATASOURCE_VARIABLE: Final = "datasource"
_DATASOURCE: Final = DataSourceRef(type_val="prometheus", uid=f"${{{DATASOURCE_VARIABLE}}}")
_GRID_WIDTH: Final = 24
_HEIGHT: Final = 8


_JOB_LEGEND: Final = legend(*JOB_LABELS)
_BY_JOB: Final = ", ".join(JOB_LABELS)


def _query(expr: str, legend: str) -> Dataquery:
    return Dataquery().expr(expr).legend_format(legend).datasource(_DATASOURCE)


def _series(title: str, description: str, unit: str, *queries: Dataquery) -> timeseries.Panel:
    panel = (
        timeseries.Panel()
        .title(title)
        .description(description)
        .unit(unit)
        .datasource(_DATASOURCE)
        .legend(
            VizLegendOptions()
            .show_legend(True)
            .display_mode(LegendDisplayMode.LIST)
            .placement(LegendPlacement.BOTTOM)
        )
    )
    for query in queries:
        panel = panel.with_target(query)
    return panel


def _bars(title: str, description: str, expr: str, legend: str) -> timeseries.Panel:
    """Counts stacked per gather: each bar is what one gather saw."""
    return (
        _series(title, description, "short", _query(expr, legend))
        .draw_style(GraphDrawStyle.BARS)
        .stacking(StackingConfig().mode(StackingMode.NORMAL))
        .fill_opacity(80)
    )


def _per_variant(
    series: str, title: str, description: str, unit: str, *extra_labels: str
) -> timeseries.Panel:
    shown = " ".join([VARIANT_LEGEND, legend(*extra_labels)]).strip()
    return _series(title, description, unit, _query(selector(series), shown))


def _last_result_age() -> stat.Panel:
    by = (WORKFLOW_LABEL, CLUSTER_LABEL)
    return (
        stat.Panel()
        .title("Age of the last result")
        .description(
            "Time since each workflow last brought a result in each cluster. A scheduled "
            "workflow alerts when this passes its period plus a grace."
        )
        .unit("s")
        .datasource(_DATASOURCE)
        .with_target(
            _query(
                f"time() - max by ({', '.join(by)}) ({selector(LAST_RESULT_TIMESTAMP)})",
                legend(*by),
            )
        )
    )


def _job_durations() -> timeseries.Panel:
    def part(name: str) -> str:
        return selector(histogram_series(JOB_DURATION, name))

    return _series(
        "Job durations",
        "Wall time of the benchmark Jobs each gather saw finish, start to end: the mean, and "
        "the 95th percentile from the histogram's buckets.",
        "s",
        _query(
            f"sum by ({_BY_JOB}) ({part('sum')}) / sum by ({_BY_JOB}) ({part('count')})",
            f"mean {_JOB_LEGEND}",
        ),
        _query(
            f"histogram_quantile(0.95, sum by ({_BY_JOB}, le) ({part('bucket')}))",
            f"p95 {_JOB_LEGEND}",
        ),
    )


def _rows() -> list[tuple[str, list[timeseries.Panel | stat.Panel]]]:
    """Each row's title and panels, left to right; a row's panels share its width."""
    return [
        (
            "Results",
            [
                _per_variant(
                    LATENCY_P50,
                    "Latency p50 per variant",
                    "Median latency of one batch, per variant, as each run measured it.",
                    "s",
                ),
                _per_variant(
                    THROUGHPUT,
                    "Throughput per variant",
                    "Samples per second of each variant's timed loop.",
                    "suffix: samples/s",
                ),
            ],
        ),
        (
            "Tails and deadlines",
            [
                _per_variant(
                    LATENCY_P99_9,
                    "Latency p99.9 per variant",
                    "The 99.9th percentile of one batch, where a run had the 10,000 iterations "
                    "it needs; a fixed-rate run's counts queueing from the scheduled arrival.",
                    "s",
                ),
                _per_variant(
                    MISS_RATE,
                    "Deadline miss rate per variant",
                    "Fixed-rate runs: the share of queries that finished after their deadline.",
                    "percentunit",
                ),
            ],
        ),
        (
            "Runs",
            [
                _last_result_age(),
                _bars(
                    "Jobs observed, by outcome",
                    "Benchmark Jobs each gather saw finish, by outcome.",
                    f"sum by ({_BY_JOB}, {OUTCOME_LABEL}) ({selector(total(JOBS_OBSERVED))})",
                    f"{_JOB_LEGEND} {legend(OUTCOME_LABEL)}",
                ),
                _bars(
                    "Failures, by reason",
                    "Variants that ended without a result, by the reason gather found "
                    "(unschedulable, OOMKilled, preempted, the runner's own error...).",
                    f"sum by ({_BY_JOB}, {REASON_LABEL}) ({selector(total(VARIANT_FAILURES))})",
                    f"{_JOB_LEGEND} {legend(REASON_LABEL)}",
                ),
                _job_durations(),
            ],
        ),
        (
            "Cost and energy",
            [
                _per_variant(
                    ALLOCATED_DEVICE_SECONDS,
                    "GPU-seconds per variant",
                    "Device-seconds each variant's pods held, from scheduled to ended, every "
                    "attempt included; CPU targets count CPU-seconds.",
                    "s",
                    DEVICE_LABEL,
                ),
                _per_variant(
                    COST_PER_1K_INFERENCES,
                    "Cost per 1,000 inferences",
                    "From the allocated time and the price table in specs/clusters.yaml.",
                    "short",
                    CURRENCY_LABEL,
                ),
                _per_variant(
                    ENERGY_JOULES_PER_INFERENCE,
                    "Energy per inference",
                    "NVML's energy counter over the timed loop, per sample (NVIDIA GPUs only).",
                    "joule",
                ),
                _per_variant(
                    AVERAGE_POWER_WATTS,
                    "Average power",
                    "The GPU's average draw over the timed loop (NVIDIA GPUs only).",
                    "watt",
                ),
            ],
        ),
    ]


def _variable(label: str, series: str) -> QueryVariable:
    """A multi-valued variable of `label`'s values, narrowed by the variables before it."""
    before = FILTERED_LABELS[: FILTERED_LABELS.index(label)]
    matchers = ",".join(f'{name}=~"${name}"' for name in before)
    narrowed = f"{series}{{{matchers}}}" if matchers else series
    return (
        QueryVariable(label)
        .label(label)
        .datasource(_DATASOURCE)
        .query(f"label_values({narrowed}, {label})")
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(VariableSort.ALPHABETICAL_ASC)
        .multi(True)
        .include_all(True)
        .all_value(".*")
    )


def build() -> DashboardBuilder:
    """The dashboard, as the SDK's builder."""
    dashboard = (
        DashboardBuilder(TITLE)
        .uid(UID)
        .tags(["benchfleet", "generated"])
        .editable()
        .time("now-30d", "now")
        .refresh("5m")
        .with_variable(
            DatasourceVariable(DATASOURCE_VARIABLE).label("Prometheus").type("prometheus")
        )
    )
    for label in FILTERED_LABELS:
        dashboard = dashboard.with_variable(_variable(label, total(JOBS_OBSERVED)))
    # Grafana links a panel by its id, so each gets its own, in reading order.
    ids = iter(range(1, 1000))
    for title, panels in _rows():
        dashboard = dashboard.with_row(Row(title).id(next(ids)))
        width = _GRID_WIDTH // len(panels)
        for panel in panels:
            placed: Builder[Panel] = panel.id(next(ids)).height(_HEIGHT).span(width)
            dashboard = dashboard.with_panel(placed)
    return dashboard


def dashboard_json() -> str:
    """The dashboard as Grafana's JSON model, byte-stable: keys sorted, two-space indents."""
    return JSONEncoder(sort_keys=True, indent=2).encode(build().build()) + "\n"
