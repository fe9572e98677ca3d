"""The result a run hands to the collector: one JSON object, validated on both sides, and the
one writer and reader of the line and the termination message that carry it.

`contract/result.schema.json` is generated from these models (`make schema`); the collector
validates what it harvests against it. Only pydantic is imported, so the collector can share
this module without torch.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from contract.errors import ErrorType
from contract.variant import VariantRef

RESULT_SCHEMA_VERSION: Final = 1
RESULT_PREFIX: Final = "BENCH_RESULT "
"""Starts the one stdout line that carries the result."""
TERMINATION_LOG_LIMIT: Final = 4096
"""Bytes of /dev/termination-log that Kubernetes keeps in the pod status."""
SCHEMA_FILE: Final = Path(__file__).with_name("result.schema.json")

StoppedBy = Literal["minimums", "max_iterations", "max_time"]


class _Result(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


class LatencyStats(_Result):
    """Per-iteration latency of the timed loop, in milliseconds (one iteration = one batch)."""

    count: int = Field(ge=1)
    mean_ms: float
    std_ms: float
    """Sample standard deviation (0 for a single iteration)."""
    cv: float
    """Coefficient of variation, std / mean."""
    min_ms: float
    p25_ms: float
    p50_ms: float
    p75_ms: float
    p90_ms: float
    p95_ms: float
    p99_ms: float
    max_ms: float
    iqr_ms: float
    """p75 - p25."""


class Validity(_Result):
    """Whether the numbers can be trusted as they stand."""

    noisy: bool
    """IQR / median above 10 %: the environment disturbed the measurement."""
    noise: float
    """IQR / median."""
    reliable_percentiles: list[str]
    """Percentiles with at least 10 samples beyond them (p99 needs 1000 iterations)."""
    output_finite: bool
    """The model's outputs held no NaN or infinity on the last iteration."""


class PhaseTiming(_Result):
    """How one loop (warmup or timed) ran and why it stopped."""

    iterations: int = Field(ge=0)
    seconds: float = Field(ge=0)
    stopped_by: StoppedBy


class Timings(_Result):
    """Where the time of a run went, apart from the timed loop's statistics."""

    load_s: float
    """Verifying the sha256 and loading the program."""
    prepare_s: float
    """Applying precision and quantization."""
    first_iteration_ms: float
    """The cold first call, excluded from warmup and measurement."""
    warmup: PhaseTiming
    measure: PhaseTiming


class Memory(_Result):
    """Peak memory of the runner process."""

    peak_rss_bytes: int
    gpu_peak_allocated_bytes: int | None = None
    gpu_peak_reserved_bytes: int | None = None


class Applied(_Result):
    """Proof that the variant's precision and quantization took effect."""

    compute_dtype: str
    """The dtype floating inputs and weights were cast to."""
    parameter_dtypes: dict[str, int]
    """Number of parameter and buffer tensors per dtype, after preparation."""
    input_dtypes: list[str]
    output_dtype: str
    matmul_fp32_precision: str | None = None
    """CUDA's fp32 matmul and convolution mode ("tf32" or "ieee"); None on CPU."""
    quantization: str
    linear_layers: int = Field(ge=0)
    """aten.linear calls in the program."""
    quantized_layers: int = Field(ge=0)
    """Of those, how many now run quantized."""
    unquantized_weighted_layers: dict[str, int] = Field(default_factory=dict)
    """Other layers with weights (e.g. convolutions) that stay in the compute dtype."""
    weight_bytes: int = Field(ge=0)
    """Bytes of parameters and buffers after preparation."""
    kernel: str | None = None
    """What a quantized layer calls."""


class Environment(_Result):
    """Where the numbers come from."""

    python: str
    torch: str
    cuda: str | None = None
    device: str
    device_name: str
    cpu_model: str
    threads: int
    """torch's intra-op threads, set from the container's CPU quota."""
    cpu_quota: float | None = None
    """CPUs the cgroup allows (None: unlimited)."""
    node_name: str | None = None
    pod_name: str | None = None
    image: str | None = None
    hostname: str


class ErrorInfo(_Result):
    """What went wrong."""

    type: ErrorType
    message: str


class _ResultBase(_Result):
    """What every result says about itself; `status` tells which kind it is."""

    schema_version: Literal[1] = RESULT_SCHEMA_VERSION
    status: str
    workflow: str | None = None
    target: str | None = None
    variant: VariantRef | None = None
    model_sha256: str | None = None


class OkResult(_ResultBase):
    """A variant measured: its statistics, and the proof of what ran."""

    status: Literal["ok"] = "ok"
    latency: LatencyStats
    throughput_samples_per_s: float | None = None
    timings: Timings | None = None
    memory: Memory | None = None
    applied: Applied | None = None
    validity: Validity | None = None
    environment: Environment | None = None
    compacted: bool = False
    """Details were left out to fit the termination log; the log line has them all."""


class ErrorResult(_ResultBase):
    """A variant that could not be measured, and why."""

    status: Literal["error"] = "error"
    environment: Environment | None = None
    error: ErrorInfo
    compacted: bool = False
    """Details were left out to fit the termination log; the log line has them all."""


BenchResult = Annotated[OkResult | ErrorResult, Field(discriminator="status")]
"""One variant's run: a union discriminated on `status`."""
RESULT_ADAPTER: Final = TypeAdapter[BenchResult](BenchResult)


def parse_result(text: str | bytes, *, strict: bool = False) -> OkResult | ErrorResult:
    """A result from its JSON; raises pydantic.ValidationError when it is not one."""
    return RESULT_ADAPTER.validate_json(text, strict=strict)


def result_line(result: BenchResult) -> str:
    """The one stdout line that hands `result` over, newline included."""
    return RESULT_PREFIX + result.model_dump_json(exclude_none=True) + "\n"


def find_result_text(output: str) -> str | None:
    """The JSON of the last BENCH_RESULT line in `output`, or None if there is none."""
    for line in reversed(output.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return line.removeprefix(RESULT_PREFIX).strip()
    return None


_ERROR_MESSAGE_BUDGET: Final = 1500


def _short_error(result: BenchResult) -> BenchResult:
    if not isinstance(result, ErrorResult) or len(result.error.message) <= _ERROR_MESSAGE_BUDGET:
        return result
    message = result.error.message[: _ERROR_MESSAGE_BUDGET - 3] + "..."
    return result.model_copy(update={"error": ErrorInfo(type=result.error.type, message=message)})


_COMPACTIONS: Final[tuple[Callable[[BenchResult], BenchResult], ...]] = (
    lambda r: r,
    _short_error,
    lambda r: r.model_copy(update={"environment": None}),
    lambda r: (
        r.model_copy(update={"applied": None, "timings": None, "memory": None})
        if isinstance(r, OkResult)
        else r
    ),
)


def compact(result: BenchResult, limit: int = TERMINATION_LOG_LIMIT) -> str:
    """The result as compact JSON of at most `limit` bytes."""
    current = result
    for index, step in enumerate(_COMPACTIONS):
        current = step(current)
        if index:
            current = current.model_copy(update={"compacted": True})
        text = current.model_dump_json(exclude_none=True)
        if len(text.encode()) <= limit:
            return text
    raise ValueError(f"a result cannot be compacted below {limit} bytes: {text[:200]}")


def parse_result_line(output: str) -> BenchResult | None:
    """The result in a runner's stdout (the last BENCH_RESULT line), or None if there is none.

    Raises pydantic.ValidationError or ValueError when the line is there but malformed.
    """
    text = find_result_text(output)
    return None if text is None else parse_result(text)
