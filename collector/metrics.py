"""Prometheus metrics of a gather: what it observed, and the results as gauges.

A gather is a batch job, not a long-running server that Prometheus could scrape, so the
metrics go to a Pushgateway when one is configured, or to a textfile for node-exporter's
textfile collector; both carry the same registry. Flux creates the Jobs, so "jobs created"
is what gather observed of them: `benchfleet_jobs_observed_total`.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, push_to_gateway
from prometheus_client.exposition import generate_latest

from collector.store import StoredRun
from contract.atomic import write_atomically
from contract.records import JobRecord
from contract.result import OkResult
from contract.variant import SETTING_FIELDS

PUSH_JOB: Final = "benchfleet-collector"
_DURATION_BUCKETS: Final = (60, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400)
_RESULT_LABELS: Final = ("workflow", "cluster", "gpu_type", *SETTING_FIELDS)
LAST_RESULT_LABELS: Final = ("workflow", "cluster", "target", *SETTING_FIELDS)


LastResults = dict[tuple[str, ...], float]
"""Labels (LAST_RESULT_LABELS' values) -> Unix seconds."""


@dataclass(frozen=True)
class ObservedJob:
    """A finished Job and how long it ran (status.startTime to completionTime or failure)."""

    record: JobRecord
    duration_s: float | None


def build_registry(
    observed: Iterable[ObservedJob], last: LastResults | None = None
) -> CollectorRegistry:
    """A registry holding this gather's metrics, and when each variant of the workflow last
    brought a result (`last`: of every stored and recorded run, not only this gather's)."""
    registry = CollectorRegistry()
    last_result = Gauge(
        "benchfleet_last_result_timestamp_seconds",
        "When the variant last brought a result: its runner's end, Unix time. A scheduled "
        "workflow's alert fires when this is older than its period plus a grace.",
        LAST_RESULT_LABELS,
        registry=registry,
    )
    for labels, seconds in (last or {}).items():
        last_result.labels(*labels).set(seconds)
    jobs = Counter(
        "benchfleet_jobs_observed",
        "Benchmark Jobs gather saw finish.",
        ["workflow", "cluster", "target", "outcome"],
        registry=registry,
    )
    duration = Histogram(
        "benchfleet_job_duration_seconds",
        "Wall time of a benchmark Job, from its start to its end.",
        ["workflow", "cluster", "target"],
        buckets=_DURATION_BUCKETS,
        registry=registry,
    )
    failures = Counter(
        "benchfleet_variant_failures",
        "Variants that ended without a result, by reason.",
        ["workflow", "cluster", "target", "reason"],
        registry=registry,
    )
    p50 = Gauge(
        "benchfleet_latency_p50_seconds",
        "Median latency of one batch, as the runner measured it.",
        _RESULT_LABELS,
        registry=registry,
    )
    throughput = Gauge(
        "benchfleet_throughput_samples_per_second",
        "Samples per second of the timed loop.",
        _RESULT_LABELS,
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
            labels = (
                record.workflow,
                record.cluster,
                target,
                *(str(getattr(ref, field)) for field in SETTING_FIELDS),
            )
            p50.labels(*labels).set(result.latency.p50_ms / 1000)
            if result.throughput_samples_per_s is not None:
                throughput.labels(*labels).set(result.throughput_samples_per_s)
    return registry


def last_results(runs: Iterable[StoredRun]) -> LastResults:
    """When each variant last brought a result: the latest finish of its runs that succeeded,
    by workflow, cluster, target and settings. Not by variant id, which a scheduled workflow
    renews every run: the series must go on across runs for its age to mean anything."""
    last: LastResults = {}
    for run in runs:
        at, result = run.result_at, run.variant.result
        if at is None or not isinstance(result, OkResult) or result.variant is None:
            continue
        ref = result.variant
        labels = (
            run.job.workflow,
            run.job.cluster,
            run.job.target or result.target or "",
            *(str(getattr(ref, field)) for field in SETTING_FIELDS),
        )
        last[labels] = max(last.get(labels, 0.0), at.timestamp())
    return last


def write_textfile(registry: CollectorRegistry, path: Path) -> None:
    """Write the metrics for node-exporter's textfile collector, atomically (it reads any
    *.prom file in its folder at any moment)."""
    write_atomically(path, generate_latest(registry))


def push(registry: CollectorRegistry, gateway: str, workflow: str) -> None:
    """Replace this workflow's group on the Pushgateway with the current metrics."""
    push_to_gateway(gateway, job=PUSH_JOB, grouping_key={"workflow": workflow}, registry=registry)
