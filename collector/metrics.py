"""Prometheus metrics of a gather: what it observed, and the results as gauges.

A gather is a batch job, not a long-running server that Prometheus could scrape, so the
metrics go to a Pushgateway when one is configured, or to a textfile for node-exporter's
textfile collector; both carry the same registry. Flux creates the Jobs, so "jobs created"
is what gather observed of them: `benchfleet_jobs_observed_total`.
"""

import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, push_to_gateway
from prometheus_client.exposition import generate_latest

from contract.metrics import (
    JOB_DURATION,
    JOB_LABELS,
    JOBS_OBSERVED,
    LATENCY_P50,
    OUTCOME_LABEL,
    REASON_LABEL,
    RESULT_LABELS,
    THROUGHPUT,
    VARIANT_FAILURES,
)
from contract.records import JobRecord
from contract.result import OkResult
from contract.variant import SETTING_FIELDS

PUSH_JOB: Final = "benchfleet-collector"
_DURATION_BUCKETS: Final = (60, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400)


@dataclass(frozen=True)
class ObservedJob:
    """A finished Job and how long it ran (status.startTime to completionTime or failure)."""

    record: JobRecord
    duration_s: float | None


def build_registry(observed: Iterable[ObservedJob]) -> CollectorRegistry:
    """A registry holding this gather's metrics."""
    registry = CollectorRegistry()
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
    throughput = Gauge(
        THROUGHPUT,
        "Samples per second of the timed loop.",
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


def write_textfile(registry: CollectorRegistry, path: Path) -> None:
    """Write the metrics for node-exporter's textfile collector, atomically (it reads any
    *.prom file in its folder at any moment)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(generate_latest(registry))
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def push(registry: CollectorRegistry, gateway: str, workflow: str) -> None:
    """Replace this workflow's group on the Pushgateway with the current metrics."""
    push_to_gateway(gateway, job=PUSH_JOB, grouping_key={"workflow": workflow}, registry=registry)
