"""The results table `make demo` prints: one row per pod, numbers as the runner measured them."""

from collections.abc import Sequence
from typing import Final

from localrun.workflow import PodOutcome
from runner.result import BenchResult

HEADER: Final = (
    "target",
    "index",
    "model",
    "precision",
    "quantization",
    "batch",
    "status",
    "p50 ms",
    "p90 ms",
    "p99 ms",
    "cv",
    "samples/s",
    "iters",
    "threads",
    "notes",
)
_RIGHT_ALIGNED: Final = frozenset(
    {"index", "batch", "p50 ms", "p90 ms", "p99 ms", "cv", "samples/s", "iters", "threads"}
)


def _notes(result: BenchResult) -> str:
    notes = []
    if result.validity is not None:
        if result.validity.noisy:
            notes.append(f"noisy (IQR {result.validity.noise:.0%} of median)")
        if "p99" not in result.validity.reliable_percentiles:
            notes.append("p99 from < 1000 iterations")
        if not result.validity.output_finite:
            notes.append("output has NaN/inf")
    if result.applied is not None and result.applied.quantized_layers:
        notes.append(f"{result.applied.quantized_layers} layers quantized")
    return "; ".join(notes)


def _row(outcome: PodOutcome) -> tuple[str, ...]:
    index = str(outcome.plan.index)
    result = outcome.result
    if result is None:
        return (
            outcome.plan.job_name,
            index,
            *[""] * 4,
            "no result",
            *[""] * 7,
            outcome.problem or "",
        )
    variant = result.variant
    names = (
        (variant.model, variant.precision, variant.quantization, str(variant.batch_size))
        if variant
        else ("", "", "", "")
    )
    latency = result.latency
    if result.status != "ok" or latency is None:
        message = f"{result.error.type}: {result.error.message}" if result.error else ""
        return (result.target or "", index, *names, result.status, *[""] * 7, message)
    throughput = result.throughput_samples_per_s
    threads = result.environment.threads if result.environment else None
    return (
        result.target or "",
        index,
        *names,
        result.status,
        f"{latency.p50_ms:.3f}",
        f"{latency.p90_ms:.3f}",
        f"{latency.p99_ms:.3f}",
        f"{latency.cv:.2f}",
        f"{throughput:,.0f}" if throughput is not None else "",
        str(latency.count),
        str(threads) if threads is not None else "",
        _notes(result),
    )


def format_table(outcomes: Sequence[PodOutcome]) -> str:
    """Fixed-width columns, one row per pod, in the order they ran."""
    rows = [HEADER, *(_row(outcome) for outcome in outcomes)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = []
    for row in rows:
        cells = [
            cell.rjust(width) if name in _RIGHT_ALIGNED else cell.ljust(width)
            for cell, width, name in zip(row, widths, HEADER, strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)
