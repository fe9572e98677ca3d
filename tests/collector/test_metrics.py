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

from collector.metrics import ObservedJob, build_registry, last_results, write_textfile
from collector.pushgateway import push, pushgateway
from contract.instant import instant
from contract.pricing import PriceList
from contract.records import JobRecord, StoredVariant
from contract.result import Energy, OkResult, Scenario, Validity
from store.database import StoredRun
from tests.collector.stored import JOB, SUCCEEDED_LABELS, failed, succeeded
from tests.report.test_cost import allocation


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
    result_labels = SUCCEEDED_LABELS
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
    push(registry, pushgateway(gateway), "cpu-smoke")
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
    variant = base.model_copy(update={"finished_at": instant(finished_at), "result": result})
    return StoredRun(JOB, variant, finished_at)


def test_the_last_result_goes_on_across_scheduled_runs_and_ignores_failures() -> None:
    runs = [
        _run_at("run1-id", "2026-12-03T05:59:00Z"),
        _run_at("run2-id", "2026-12-04T06:10:00Z"),
        _run_at("run3-id", "2026-12-05T06:00:00Z", state="failed"),
    ]
    registry = build_registry([], last_results(runs, datetime(2026, 12, 6, tzinfo=UTC)))
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


def test_the_last_result_is_never_later_than_when_the_collector_stored_it() -> None:
    """Issue #31: a node three days ahead put the gauge three days in the future, and the
    missing-data alert stayed silent for them."""
    ahead = _run_at("run1-id", "2026-12-06T06:00:00Z")
    stored = StoredRun(ahead.job, ahead.variant, "2026-12-03T06:00:05+00:00")
    (seconds,) = last_results([stored], datetime(2026, 12, 4, tzinfo=UTC)).values()
    assert seconds == datetime(2026, 12, 3, 6, 0, 5, tzinfo=UTC).timestamp()


def test_a_recorded_finish_in_the_future_is_no_last_result_and_is_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A record keeps no time of storage: a finish ahead of the clock is left out (counted
    as now, it would look fresh at every gather), never exported in the future."""
    recorded = StoredRun(JOB, _run_at("run1-id", "2026-12-06T06:00:00Z").variant, "")
    assert last_results([recorded], datetime(2026, 12, 4, tzinfo=UTC)) == {}
    assert "its finish lies 2 d 6 h ahead of this clock" in caplog.text


def test_device_seconds_cost_and_energy_are_exported_per_variant() -> None:
    """A GPU variant of p50 2 ms at batch 4 (0.5 ms a sample) held one A100 for 90 s: 90
    GPU-seconds; 1,000 inferences hold it 0.5 s, at 3.6 USD an hour 0.0005 USD; its energy
    as the runner measured it. Without prices there is no cost, and a variant without an
    allocation or energy exports none of the four."""
    plain = succeeded(0, p50_ms=2.0)
    assert isinstance(plain.result, OkResult)
    energy = Energy(joules=12.0, joules_per_inference=0.05, average_w=240.0)
    held = plain.model_copy(
        update={
            "allocation": allocation(90.0),
            "result": plain.result.model_copy(update={"energy": energy}),
        }
    )
    prices = PriceList("USD", {"us-east": {"nvidia-a100": {"on-demand": 3.6}}})

    def exported(variant: StoredVariant, with_prices: PriceList | None) -> set[str]:
        record = JobRecord(**JOB.model_dump(), outcome="complete", variants=(variant,))
        registry = build_registry([ObservedJob(record, None)], prices=with_prices)
        found.update(samples(generate_latest(registry).decode()))
        return {name for name, _ in samples(generate_latest(registry).decode())}

    found: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    assert exported(held, prices) >= set(COST_AND_ENERGY)
    labels = frozenset(SUCCEEDED_LABELS.items())
    assert found[("benchfleet_allocated_device_seconds", labels | {("device", "gpu")})] == 90.0
    cost = found[("benchfleet_cost_per_1k_inferences", labels | {("currency", "USD")})]
    assert cost == pytest.approx(0.0005)
    assert found[("benchfleet_energy_joules_per_inference", labels)] == 0.05
    assert found[("benchfleet_average_power_watts", labels)] == 240.0
    assert "benchfleet_cost_per_1k_inferences" not in exported(held, None)
    assert not exported(succeeded(1), prices) & set(COST_AND_ENERGY)


COST_AND_ENERGY = (
    "benchfleet_allocated_device_seconds",
    "benchfleet_cost_per_1k_inferences",
    "benchfleet_energy_joules_per_inference",
    "benchfleet_average_power_watts",
)


def _tailed(count: int) -> StoredVariant:
    """A fixed-rate result of `count` queries with a p99.9 of 9 ms and 2 % missed."""
    variant = succeeded(0)
    result = variant.result
    assert isinstance(result, OkResult)
    reliable = ["p50", "p90", "p95", "p99", "p99.9"] if count >= 10_000 else ["p50", "p99"]
    tailed = result.model_copy(
        update={
            "latency": result.latency.model_copy(update={"count": count, "p99_9_ms": 9.0}),
            "validity": Validity(
                noisy=False, noise=0.0, reliable_percentiles=reliable, output_finite=True
            ),
            "scenario": Scenario(
                kind="fixed_rate",
                rate_hz=100.0,
                deadline_ms=10.0,
                queries=count,
                misses=count // 50,
                miss_rate=0.02,
                miss_rate_low=0.01,
                miss_rate_high=0.03,
                longest_miss_run=1,
                jitter_ms=0.5,
                issue_error_p99_ms=0.05,
                issue_error_max_ms=0.1,
            ),
        }
    )
    return variant.model_copy(update={"result": tailed})


@pytest.mark.parametrize(("count", "p99_9_exported"), [(10_000, True), (9_999, False)])
def test_p99_9_is_exported_only_from_a_run_long_enough_for_it_and_the_miss_rate_always(
    count: int, p99_9_exported: bool
) -> None:
    record = JobRecord(**JOB.model_dump(), outcome="complete", variants=(_tailed(count),))
    registry = build_registry([ObservedJob(record, duration_s=None)])
    found = samples(generate_latest(registry).decode())
    labels = frozenset(SUCCEEDED_LABELS.items())
    assert found[("benchfleet_deadline_miss_ratio", labels)] == 0.02
    assert (("benchfleet_latency_p99_9_seconds", labels) in found) is p99_9_exported
    if p99_9_exported:
        assert found[("benchfleet_latency_p99_9_seconds", labels)] == 0.009
