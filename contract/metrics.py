"""The Prometheus metrics the collector exports, by name and label: the exporter
(`collector.metrics`), the Grafana dashboard and the alert rules (`synth.monitoring`) all
import them from here, so none of the three can drift from the others.

Names are as Prometheus stores them: a counter's `_total` and a histogram's `_bucket`, `_sum`
and `_count` series are derived with the helpers below.
"""

from typing import Final

from contract.variant import SETTING_LABELS

# What gather observed of the Jobs (labels: JOB_LABELS, plus outcome or reason).
JOBS_OBSERVED: Final = "benchfleet_jobs_observed"
"""A counter: Jobs gather saw finish, by outcome."""
JOB_DURATION: Final = "benchfleet_job_duration_seconds"
"""A histogram: a Job's wall time from its start to its end."""
VARIANT_FAILURES: Final = "benchfleet_variant_failures"
"""A counter: variants that ended without a result, by reason."""

# Per variant (labels: RESULT_LABELS, plus DEVICE_LABEL or CURRENCY_LABEL where said).
LATENCY_P50: Final = "benchfleet_latency_p50_seconds"
LATENCY_P99_9: Final = "benchfleet_latency_p99_9_seconds"
"""Exported only where the run had the 10,000 iterations that make its p99.9 reliable."""
MISS_RATE: Final = "benchfleet_deadline_miss_ratio"
"""A fixed-rate run's share of queries that missed their deadline (0-1)."""
THROUGHPUT: Final = "benchfleet_throughput_samples_per_second"
LAST_RESULT_TIMESTAMP: Final = "benchfleet_last_result_timestamp_seconds"
"""When the variant last brought a result, Unix seconds: what the missing-data alert reads."""
ALLOCATED_DEVICE_SECONDS: Final = "benchfleet_allocated_device_seconds"
"""Device-seconds the variant's pods held (device: gpu or cpu)."""
COST_PER_1K_INFERENCES: Final = "benchfleet_cost_per_1k_inferences"
ENERGY_JOULES_PER_INFERENCE: Final = "benchfleet_energy_joules_per_inference"
AVERAGE_POWER_WATTS: Final = "benchfleet_average_power_watts"

WORKFLOW_LABEL: Final = "workflow"
CLUSTER_LABEL: Final = "cluster"
TARGET_LABEL: Final = "target"
GPU_TYPE_LABEL: Final = "gpu_type"
"""On the per-variant metrics: the target's key (its GPU type unless the workflow names it)."""
OUTCOME_LABEL: Final = "outcome"
REASON_LABEL: Final = "reason"
DEVICE_LABEL: Final = "device"
CURRENCY_LABEL: Final = "currency"

JOB_LABELS: Final = (WORKFLOW_LABEL, CLUSTER_LABEL, TARGET_LABEL)
RESULT_LABELS: Final = (WORKFLOW_LABEL, CLUSTER_LABEL, GPU_TYPE_LABEL, *SETTING_LABELS)

PER_VARIANT: Final = (
    LATENCY_P50,
    LATENCY_P99_9,
    MISS_RATE,
    THROUGHPUT,
    LAST_RESULT_TIMESTAMP,
    ALLOCATED_DEVICE_SECONDS,
    COST_PER_1K_INFERENCES,
    ENERGY_JOULES_PER_INFERENCE,
    AVERAGE_POWER_WATTS,
)


def total(counter: str) -> str:
    """The series Prometheus stores for a counter."""
    return f"{counter}_total"


def histogram_series(histogram: str, part: str) -> str:
    """One of a histogram's series: part is bucket, sum or count."""
    return f"{histogram}_{part}"


SERIES: Final = frozenset(
    {
        *PER_VARIANT,
        total(JOBS_OBSERVED),
        total(VARIANT_FAILURES),
        *(histogram_series(JOB_DURATION, part) for part in ("bucket", "sum", "count")),
    }
)
"""Every series name the collector may export: a query naming anything else reads nothing."""
