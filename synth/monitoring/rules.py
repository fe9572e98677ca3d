"""Prometheus alert rules over the collector's metrics: a variant's latency regressed beyond
its own noise, a fixed-rate variant started missing its deadline, and a scheduled workflow
brought no result in time.

The same groups go into a PrometheusRule (where a cluster has the Prometheus Operator) and
into a plain rules file for a Prometheus configured by hand, carried in a ConfigMap: Flux
applies dist/ whole, and a rules file on its own is no Kubernetes object.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from contract.metrics import (
    CLUSTER_LABEL,
    LAST_RESULT_TIMESTAMP,
    LATENCY_P50,
    MISS_RATE,
    WORKFLOW_LABEL,
)
from contract.proportions import MISS_TOLERANCE
from synth.dump import dump_documents

GROUP_REGRESSION: Final = "benchfleet-regressions"
GROUP_MISSING: Final = "benchfleet-missing-data"
REGRESSION_ALERT: Final = "BenchfleetLatencyRegression"
DEADLINE_ALERT: Final = "BenchfleetStartedMissingDeadline"
STALE_ALERT: Final = "BenchfleetNoNewResult"
ABSENT_ALERT: Final = "BenchfleetNoResultEver"

HISTORY: Final = "14d"
"""The history a p50 is judged against."""
RECENT: Final = "1d"
"""Left out of that history, so that a change is judged against what came before it: about
one nightly run. A changed level alerts for this long, then becomes the history."""
NOISE_SIGMAS: Final = 3
"""A regression is further above the history's median than this many of its standard
deviations..."""
MARGIN: Final = 0.05
"""...and than this share of it: a history too steady to show noise (identical runs) still
needs a change a user would care about."""
MIN_CHANGES: Final = 2
"""At least three distinct runs in the history (two changes of the gauge's value) before
there is a noise to judge by."""


@dataclass(frozen=True)
class Schedule:
    """A workflow that runs on a schedule, and the clusters it runs in."""

    workflow: str
    clusters: tuple[str, ...]
    period_s: int
    grace_s: int


def _history(function: str, *arguments: str) -> str:
    window = f"{LATENCY_P50}[{HISTORY}] offset {RECENT}"
    return f"{function}({', '.join([*arguments, window])})"


def regression_rule() -> dict[str, Any]:
    """Fires per variant whose p50 is above its history's median by more than both the
    history's noise and the margin."""
    median = _history("quantile_over_time", "0.5")
    expr = (
        f"({LATENCY_P50} - {median})\n"
        f"  > {NOISE_SIGMAS} * {_history('stddev_over_time')}\n"
        f"and {LATENCY_P50} > {1 + MARGIN:g} * {median}\n"
        f"and {_history('changes')} >= {MIN_CHANGES}\n"
    )
    return {
        "alert": REGRESSION_ALERT,
        "expr": expr,
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": "p50 latency of {{ $labels.model }} regressed on {{ $labels.gpu_type }}",
            "description": (
                "{{ $labels.workflow }} in {{ $labels.cluster }}: {{ $labels.model }} "
                "{{ $labels.precision }} {{ $labels.quantization }} batch "
                "{{ $labels.batch_size }} is {{ $value | humanizeDuration }} slower than the "
                f"median of its runs over the {HISTORY} before the last {RECENT}, beyond "
                f"{NOISE_SIGMAS} standard deviations of them and {MARGIN:.0%}."
            ),
        },
    }


def deadline_rule() -> dict[str, Any]:
    """Fires per fixed-rate variant whose newest run missed more than MISS_TOLERANCE of its
    deadlines where some run of its history held: it started missing (one that never held
    never met its deadline, which the report says, not an alert)."""
    history = f"{MISS_RATE}[{HISTORY}] offset {RECENT}"
    expr = f"{MISS_RATE} > {MISS_TOLERANCE:g}\nand min_over_time({history}) <= {MISS_TOLERANCE:g}\n"
    return {
        "alert": DEADLINE_ALERT,
        "expr": expr,
        "labels": {"severity": "warning"},
        "annotations": {
            "summary": "{{ $labels.model }} started missing its deadline on {{ $labels.gpu_type }}",
            "description": (
                "{{ $labels.workflow }} in {{ $labels.cluster }}: {{ $labels.model }} "
                "{{ $labels.precision }} {{ $labels.quantization }} batch "
                "{{ $labels.batch_size }} missed {{ $value | humanizePercentage }} of its "
                f"deadlines, over the {MISS_TOLERANCE:.1%} a p99.9 deadline allows, where a "
                f"run over the {HISTORY} before the last {RECENT} held it."
            ),
        },
    }


_UNITS: Final = (("d", 86400), ("h", 3600), ("m", 60), ("s", 1))


def duration(seconds: int) -> str:
    """Seconds as Prometheus writes a duration, in the largest unit that divides them: 30h."""
    unit, size = next((unit, size) for unit, size in _UNITS if seconds % size == 0)
    return f"{seconds // size}{unit}"


def missing_data_rules(schedule: Schedule) -> list[dict[str, Any]]:
    """A scheduled workflow's alerts: a cluster whose newest result is older than the period
    plus the grace, and one that never brought a result for as long."""
    late = schedule.period_s + schedule.grace_s
    series = f'{LAST_RESULT_TIMESTAMP}{{{WORKFLOW_LABEL}="{schedule.workflow}"}}'
    where = f"{{{{ $labels.{WORKFLOW_LABEL} }}}} in {{{{ $labels.{CLUSTER_LABEL} }}}}"
    # The workflow as a rule label too: alerts of the same name must differ in their labels.
    labels = {"severity": "warning", WORKFLOW_LABEL: schedule.workflow}
    stale = {
        "alert": STALE_ALERT,
        "expr": f"time() - max by ({WORKFLOW_LABEL}, {CLUSTER_LABEL}) ({series}) > {late}\n",
        "labels": labels,
        "annotations": {
            "summary": f"No new result of {where}",
            "description": (
                f"The newest result is {{{{ $value | humanizeDuration }}}} old; the workflow "
                f"runs every {duration(schedule.period_s)} with a grace of "
                f"{duration(schedule.grace_s)}. `collector check --scheduled` says why."
            ),
        },
    }
    absent = " or ".join(
        f'absent({LAST_RESULT_TIMESTAMP}{{{WORKFLOW_LABEL}="{schedule.workflow}",'
        f'{CLUSTER_LABEL}="{cluster}"}})'
        for cluster in schedule.clusters
    )
    never = {
        "alert": ABSENT_ALERT,
        "expr": f"{absent}\n",
        "for": duration(late),
        "labels": labels,
        "annotations": {
            "summary": f"No result of {where} at all",
            "description": (
                f"Prometheus has had no result of the scheduled workflow for "
                f"{duration(late)} (its period plus the grace)."
            ),
        },
    }
    return [stale, never]


def rule_groups(schedules: Sequence[Schedule]) -> list[dict[str, Any]]:
    """The groups of a rules file, or of a PrometheusRule's spec."""
    groups: list[dict[str, Any]] = [
        {"name": GROUP_REGRESSION, "rules": [regression_rule(), deadline_rule()]}
    ]
    missing = [rule for schedule in schedules for rule in missing_data_rules(schedule)]
    if missing:
        groups.append({"name": GROUP_MISSING, "rules": missing})
    return groups


def rules_file(schedules: Sequence[Schedule]) -> str:
    """A Prometheus rules file (`rule_files:` in prometheus.yml) holding the groups."""
    return dump_documents([{"groups": rule_groups(schedules)}])
