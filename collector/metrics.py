"""Prometheus metrics of a gather: what it observed, and the results as gauges.

A gather is a batch job, not a long-running server that Prometheus could scrape, so the
metrics go to a Pushgateway when one is configured, or to a textfile for node-exporter's
textfile collector; both carry the same registry. Flux creates the Jobs, so "jobs created"
is what gather observed of them: `benchfleet_jobs_observed_total`.
"""

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import generate_latest

from contract.atomic import write_atomically
from contract.clocks import skew_text
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
    RESULT_LABELS,
    TARGET_LABEL,
    THROUGHPUT,
    VARIANT_FAILURES,
    WORKFLOW_LABEL,
)
from contract.pricing import PriceList, device_seconds_per_1000, priced
from contract.records import JobRecord
from contract.result import OkResult
from contract.variant import SETTING_FIELDS, SETTING_LABELS, VariantRef
from store.database import StoredRun

log = logging.getLogger(__name__)

_DURATION_BUCKETS: Final = (60, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400)
LAST_RESULT_LABELS: Final = (WORKFLOW_LABEL, CLUSTER_LABEL, TARGET_LABEL, *SETTING_LABELS)


LastResults = dict[tuple[str, ...], float]
"""Labels (LAST_RESULT_LABELS' values) -> Unix seconds."""


@dataclass(frozen=True)
class ObservedJob:
    """A finished Job and how long it ran (status.startTime to completionTime or failure)."""

    record: JobRecord
    duration_s: float | None


def build_registry(
    observed: Iterable[ObservedJob],
    last: LastResults | None = None,
    prices: PriceList | None = None,
) -> CollectorRegistry:
    """A registry holding this gather's metrics, and when each variant of the workflow last
    brought a result (`last`: of every stored and recorded run, not only this gather's);
    with `prices` (specs/clusters.yaml's), what 1,000 inferences of each variant cost."""
    registry = CollectorRegistry()
    last_result = Gauge(
        LAST_RESULT_TIMESTAMP,
        "When the variant last brought a result: its runner's end, Unix time. A scheduled "
        "workflow's alert fires when this is older than its period plus a grace.",
        LAST_RESULT_LABELS,
        registry=registry,
    )
    for labels, seconds in (last or {}).items():
        last_result.labels(*labels).set(seconds)
    jobs = Counter(
        JOBS_OBSERVED,
        "Benchmark Jobs gather saw finish.",
        [*JOB_LABELS, OUTCOME_LABEL],
        registry=registry,
    )
    duration = Histogram(
        JOB_DURATION,
        "Wall time of a benchmark Job, from its start to its end.",
        JOB_LABELS,
        buckets=_DURATION_BUCKETS,
        registry=registry,
    )
    failures = Counter(
        VARIANT_FAILURES,
        "Variants that ended without a result, by reason.",
        [*JOB_LABELS, REASON_LABEL],
        registry=registry,
    )
    p50 = Gauge(
        LATENCY_P50,
        "Median latency of one batch, as the runner measured it.",
        RESULT_LABELS,
        registry=registry,
    )
    p99_9 = Gauge(
        LATENCY_P99_9,
        "99.9th percentile latency of one batch (of a query, measured from its scheduled "
        "arrival, in a fixed-rate run), where the run had enough iterations for it.",
        RESULT_LABELS,
        registry=registry,
    )
    misses = Gauge(
        MISS_RATE,
        "A fixed-rate run's share of queries that missed their deadline.",
        RESULT_LABELS,
        registry=registry,
    )
    throughput = Gauge(
        THROUGHPUT,
        "Samples per second of the timed loop.",
        RESULT_LABELS,
        registry=registry,
    )
    allocated = Gauge(
        ALLOCATED_DEVICE_SECONDS,
        "GPU-seconds (CPU-seconds for a pod without GPUs) the variant's pods held their "
        "devices, scheduled to ended, every attempt; a grouped pod's split by the variants' "
        "own times.",
        [*RESULT_LABELS, DEVICE_LABEL],
        registry=registry,
    )
    cost = Gauge(
        COST_PER_1K_INFERENCES,
        "What 1,000 inferences cost at the variant's p50 latency per sample and the price "
        "specs/clusters.yaml gives its device.",
        [*RESULT_LABELS, CURRENCY_LABEL],
        registry=registry,
    )
    joules = Gauge(
        ENERGY_JOULES_PER_INFERENCE,
        "The GPU's energy over the timed loop (NVML's counter) per sample computed.",
        RESULT_LABELS,
        registry=registry,
    )
    watts = Gauge(
        AVERAGE_POWER_WATTS,
        "The GPU's average power over the timed loop.",
        RESULT_LABELS,
        registry=registry,
    )
    for job in observed:
        record = job.record
        target = record.target or ""
        jobs.labels(record.workflow, record.cluster, target, record.outcome).inc()
        if job.duration_s is not None:
            duration.labels(record.workflow, record.cluster, target).observe(job.duration_s)
        for variant in record.variants:
            result = variant.result
            if variant.state == "failed" or not isinstance(result, OkResult):
                failures.labels(
                    record.workflow, record.cluster, target, variant.reason or "unknown"
                ).inc()
                continue
            ref = result.variant
            if ref is None:
                continue
            labels = _labels(record.workflow, record.cluster, target, ref)
            _latency(result, labels, p50, p99_9, misses)
            if result.throughput_samples_per_s is not None:
                throughput.labels(*labels).set(result.throughput_samples_per_s)
            allocation = variant.allocation
            # An unknown time exports no series, as a variant without an allocation does;
            # what its pod holds still prices 1,000 inferences.
            if allocation is not None and allocation.device_seconds is not None:
                allocated.labels(*labels, allocation.unit).set(allocation.device_seconds)
            if allocation is not None and prices is not None:
                per_sample_ms = result.latency.p50_ms / ref.batch_size
                per_1000 = device_seconds_per_1000(allocation.devices, per_sample_ms)
                price = prices.price(record.cluster, allocation)
                if (spent := priced(per_1000, price)) is not None:
                    cost.labels(*labels, prices.currency).set(spent)
            energy = result.energy
            if energy is not None and energy.joules_per_inference is not None:
                joules.labels(*labels).set(energy.joules_per_inference)
            if energy is not None and energy.average_w is not None:
                watts.labels(*labels).set(energy.average_w)
    return registry


def _latency(
    result: OkResult, labels: tuple[str, ...], p50: Gauge, p99_9: Gauge, misses: Gauge
) -> None:
    """A result's latency series: its p50, its p99.9 where the run was long enough for it,
    and a fixed-rate run's miss rate."""
    p50.labels(*labels).set(result.latency.p50_ms / 1000)
    if (tail := result.reliable_p99_9_ms) is not None:
        p99_9.labels(*labels).set(tail / 1000)
    if result.scenario is not None:
        misses.labels(*labels).set(result.scenario.miss_rate)


def _labels(workflow: str, cluster: str, target: str, ref: VariantRef) -> tuple[str, ...]:
    """A result's series labels (RESULT_LABELS, LAST_RESULT_LABELS): where it ran, and the
    variant's settings."""
    return (workflow, cluster, target, *(str(getattr(ref, field)) for field in SETTING_FIELDS))


def last_results(runs: Iterable[StoredRun], now: datetime) -> LastResults:
    """When each variant last brought a result: the latest finish of its runs that succeeded,
    by workflow, cluster, target and settings, as of `now` (StoredRun.result_by: never in
    the future; a finish ahead of `now` is left out, saying so). Not by variant id, which a
    scheduled workflow renews every run: the series must go on across runs for its age to
    mean anything."""
    last: LastResults = {}
    for run in runs:
        (at, skew), result = run.result_by(now), run.variant.result
        if skew is not None:
            log.warning(
                "Job %s index %d: its finish lies %s ahead of this clock (its node's clock ran "
                "ahead, and the run keeps no time of storage): not exported as a last result",
                run.job.job,
                run.variant.index,
                skew_text(skew),
            )
        if at is None or not isinstance(result, OkResult) or result.variant is None:
            continue
        target = run.job.target or result.target or ""
        labels = _labels(run.job.workflow, run.job.cluster, target, result.variant)
        last[labels] = max(last.get(labels, 0.0), at.timestamp())
    return last


def write_textfile(registry: CollectorRegistry, path: Path) -> None:
    """Write the metrics for node-exporter's textfile collector, atomically (it reads any
    *.prom file in its folder at any moment)."""
    write_atomically(path, generate_latest(registry))
