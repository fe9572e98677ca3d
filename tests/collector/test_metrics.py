"""Metrics go where Prometheus reads them: a node-exporter textfile or a Pushgateway."""

import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from collector.metrics import ObservedJob, build_registry, last_results, push, write_textfile
from collector.store import StoredRun
from contract.records import JobRecord, StoredVariant
from contract.result import OkResult
from tests.collector.stored import JOB, failed, succeeded


def oom_killed(index: int) -> StoredVariant:
    return StoredVariant(
        index=index,
        state="failed",
        explanation="OOMKilled: the container exceeded its memory limit of 8Gi (exit 137)",
        reason="OOMKilled",
        attempts=3,
    )


@pytest.fixture
def registry() -> CollectorRegistry:
    record = JobRecord(
        **JOB.model_dump(),
        outcome="failed",
        variants=(succeeded(0, p50_ms=2.0), failed(1), oom_killed(2)),
    )
    return build_registry([ObservedJob(record, duration_s=420.0)])


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_the_textfile_holds_results_failures_and_job_duration(
    registry: CollectorRegistry, tmp_path: Path
) -> None:
    path = tmp_path / "textfile" / "benchfleet.prom"
    write_textfile(registry, path)
    found = samples(path.read_text())
    result_labels = {
        "workflow": "cpu-smoke",
        "cluster": "us-east",
        "gpu_type": "cpu",
        "model": "tiny-mlp",
        "precision": "fp32",
        "quantization": "none",
        "batch_size": "4",
        "compile": "eager",
    }
    assert found[("benchfleet_latency_p50_seconds", frozenset(result_labels.items()))] == 0.002
    failure = {"workflow": "cpu-smoke", "cluster": "us-east", "target": "cpu"}
    for reason in ("model_load", "OOMKilled"):
        key = frozenset({**failure, "reason": reason}.items())
        assert found[("benchfleet_variant_failures_total", key)] == 1
    assert found[("benchfleet_job_duration_seconds_sum", frozenset(failure.items()))] == 420.0
    observed = frozenset({**failure, "outcome": "failed"}.items())
    assert found[("benchfleet_jobs_observed_total", observed)] == 1
    assert [p.name for p in path.parent.iterdir()] == ["benchfleet.prom"]


class _Gateway(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, str, bytes]]] = []

    def do_PUT(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append(("PUT", self.path, body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads what arrived instead."""


@pytest.fixture
def gateway() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Gateway)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Gateway.received.clear()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_push_replaces_the_workflows_group_on_the_gateway(
    registry: CollectorRegistry, gateway: str
) -> None:
    push(registry, gateway, "cpu-smoke")
    ((method, path, body),) = _Gateway.received
    assert (method, path) == ("PUT", "/metrics/job/benchfleet-collector/workflow/cpu-smoke")
    assert b"benchfleet_latency_p50_seconds" in body


def _run_at(variant_id: str, finished_at: str, state: str = "succeeded") -> StoredRun:
    """One run of tiny-mlp fp32 batch 4: a scheduled workflow renames its variant each run."""
    base = succeeded(0) if state == "succeeded" else failed(0)
    ref = succeeded(0).variant
    assert ref is not None
    result = base.result
    if isinstance(result, OkResult):
        result = result.model_copy(update={"variant": ref.model_copy(update={"id": variant_id})})
    variant = base.model_copy(update={"finished_at": finished_at, "result": result})
    return StoredRun(JOB, variant, finished_at)


def test_the_last_result_goes_on_across_scheduled_runs_and_ignores_failures() -> None:
    runs = [
        _run_at("run1-id", "2026-12-03T05:59:00Z"),
        _run_at("run2-id", "2026-12-04T06:10:00Z"),
        _run_at("run3-id", "2026-12-05T06:00:00Z", state="failed"),
    ]
    registry = build_registry([], last_results(runs))
    found = samples(generate_latest(registry).decode())
    labels = {
        "workflow": "cpu-smoke",
        "cluster": "us-east",
        "target": "cpu",
        "model": "tiny-mlp",
        "precision": "fp32",
        "quantization": "none",
        "batch_size": "4",
        "compile": "eager",
    }
    series = [k for k in found if k[0] == "benchfleet_last_result_timestamp_seconds"]
    assert series == [("benchfleet_last_result_timestamp_seconds", frozenset(labels.items()))]
    assert found[series[0]] == datetime(2026, 12, 4, 6, 10, tzinfo=UTC).timestamp()
