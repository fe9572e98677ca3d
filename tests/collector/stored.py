"""Stored variant runs, as gather makes them, for the collector's tests."""

from datetime import UTC, datetime

from contract.records import JobIdentity, StoredVariant
from contract.result import ErrorInfo, ErrorResult, LatencyStats, OkResult
from contract.variant import VariantRef

NOW = datetime(2026, 12, 3, 6, 0, tzinfo=UTC)
JOB = JobIdentity(
    workflow="cpu-smoke",
    cluster="us-east",
    namespace="benchfleet-dev",
    job="cpu-smoke-cpu-7f51413bea",
    target="cpu",
    spec_file="specs/workflows/cpu-smoke.yaml",
    spec_sha256="a" * 64,
    image="registry.example.com/benchfleet/runner@sha256:" + "b" * 64,
)

SUCCEEDED_LABELS = {
    "workflow": "cpu-smoke",
    "cluster": "us-east",
    "gpu_type": "cpu",
    "model": "tiny-mlp",
    "precision": "fp32",
    "quantization": "none",
    "batch_size": "4",
    "compile": "eager",
}
"""The labels the per-variant metrics of JOB's `succeeded` variants carry."""


def latency(p50_ms: float) -> LatencyStats:
    values = dict.fromkeys(
        ["mean_ms", "min_ms", "p25_ms", "p50_ms", "p75_ms", "p90_ms", "p95_ms", "p99_ms"], p50_ms
    )
    return LatencyStats(count=50, std_ms=0.0, cv=0.0, max_ms=p50_ms, iqr_ms=0.0, **values)


def succeeded(index: int, p50_ms: float = 1.5) -> StoredVariant:
    ref = VariantRef(
        index=index,
        id=f"v{index}",
        model="tiny-mlp",
        precision="fp32",
        quantization="none",
        batch_size=4,
    )
    result = OkResult(workflow="cpu-smoke", variant=ref, latency=latency(p50_ms))
    return StoredVariant(
        index=index,
        state="succeeded",
        variant=ref,
        explanation="ok",
        pod=f"pod-{index}",
        node="node-a",
        attempts=1,
        finished_at="2026-12-03T05:59:00Z",
        result_source="termination-message",
        result=result,
    )


def failed(index: int) -> StoredVariant:
    error = ErrorResult(error=ErrorInfo(type="model_load", message="bad sha"))
    return StoredVariant(
        index=index,
        state="failed",
        explanation="runner error model_load (exit 3): bad sha",
        reason="model_load",
        pod=f"pod-{index}",
        attempts=3,
        result=error,
    )
