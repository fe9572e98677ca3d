"""The result a run hands to the collector: one JSON object, validated on both sides, and the
one writer and reader of the line and the termination message that carry it.

`contract/result.schema.json` is generated from these models (`make schema`); the collector
validates what it harvests against it. Only pydantic is imported, so the collector can share
this module without torch.
"""

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Final, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from contract.accuracy import Accuracy
from contract.config import ModelSource, PhaseConfig
from contract.errors import ErrorType
from contract.fingerprint import Fingerprint
from contract.lake import StoredObject
from contract.numbers import (
    Location,
    is_bad_number,
    not_an_amount,
    number_words,
    without_bad_numbers,
)
from contract.params import Params
from contract.samples import Samples
from contract.variant import RUNTIME_KEY_CONTEXT, VariantRef

SchemaVersion = Literal[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]
"""The result schemas this contract reads: 2 added `accuracy` (and `timings.accuracy_s`), 3
`energy` (and the energy counter's fields of `gpu`), 4 a compiled variant's
`variant.compile`, `timings.compile_s` and `applied.compiled`, 5 the start-up timings
(`timings.model`, `copy_s`, `process_s`, `measure_start_s`), 6 the CPU's instruction-set
flags and the GPU's compute capability (`environment.cpu_flags`, `gpu_capability`) and the
measurement bounds (`timings.bound_s`), 7 `latency.p99_9_ms` and a fixed-rate run's
`scenario`, 8 a pipeline's per-stage latencies (`stages`), 9 `recorded_inputs`, and the
model's `family` and `params` (written only where set, so that every other result stays as
it was), 10 the runtime axis (`variant.runtime`, written for every runtime but eager, where
earlier results say `variant.compile: inductor`; `applied.runtime_proof`,
`timings.conversion_s`), 11 the stack's `fingerprint`, 12 where the runner stored the
result whole in the lake (`stored`, and an omitted result's `sha256` and `bytes`) or why
it could not (`store_error`), 13 the runtime's load apart within its conversion
(`timings.runtime_load_s`), the rules the loops stopped by (`timings.loops`) and a
fixed-rate run's busy spans and their waits (`scenario.busy_s`, `busy_run_queue_wait_s`); a
collector that reads only older ones keeps a newer result unread, as a newer runner's,
rather than refusing it."""
READ_SCHEMA_VERSIONS: Final = get_args(SchemaVersion)
RESULT_SCHEMA_VERSION: Final = 13
RESULT_PREFIX: Final = "BENCH_RESULT "
"""Starts the one stdout line that carries the result."""
TERMINATION_LOG_LIMIT: Final = 4096
"""Bytes of /dev/termination-log that Kubernetes keeps in the pod status."""
SCHEMA_FILE: Final = Path(__file__).with_name("result.schema.json")
STORE_ERROR_LIMIT: Final = 300
"""Characters of a result's `store_error`: a reason, which every compaction keeps."""

StoppedBy = Literal["minimums", "max_iterations", "max_time"]


class _Result(BaseModel):
    # Every number finite (contract/numbers.py decides what a reader does with one that is
    # not), and each within the bounds its field gives.
    model_config = ConfigDict(
        extra="forbid", frozen=True, use_attribute_docstrings=True, allow_inf_nan=False
    )


class MedianInterval(_Result):
    """How sure the p50 is, from every timed iteration (contract/order_stats.py): what the
    report needs of the samples, so that it needs no samples."""

    low_ms: float = Field(ge=0)
    high_ms: float = Field(ge=0)
    """The sign test's 95 % interval of the median: two order statistics, no assumption about
    the shape of the noise."""
    log_se: float | None = Field(default=None, ge=0)
    """Price and Bonett's standard error of ln(median), which ratios of medians combine; None
    where nothing bounds it (a single iteration)."""


class LatencyStats(_Result):
    """Per-iteration latency of the timed loop, in milliseconds (one iteration = one batch)."""

    count: int = Field(ge=1)
    mean_ms: float = Field(gt=0)
    std_ms: float = Field(ge=0)
    """Sample standard deviation (0 for a single iteration)."""
    cv: float = Field(ge=0)
    """Coefficient of variation, std / mean."""
    # A batch takes time: a percentile of 0 would make its throughput infinite and its cost 0.
    min_ms: float = Field(gt=0)
    p25_ms: float = Field(gt=0)
    p50_ms: float = Field(gt=0)
    p75_ms: float = Field(gt=0)
    p90_ms: float = Field(gt=0)
    p95_ms: float = Field(gt=0)
    p99_ms: float = Field(gt=0)
    p99_9_ms: float | None = Field(default=None, gt=0)
    """None in results of runners before it (schema_version 7); read it only where
    `validity.reliable_percentiles` lists p99.9 (10,000 iterations)."""
    max_ms: float = Field(gt=0)
    iqr_ms: float = Field(ge=0)
    """p75 - p25."""
    p50_interval: MedianInterval | None = None
    """None in results of runners before it: the report then computes it from `samples`."""


ScenarioKind = Literal["single_stream", "fixed_rate"]


class Scenario(_Result):
    """A fixed-rate run (runner/fixed_rate.py): queries issued on a clock, open loop. Its
    `latency` is then each query's, measured from its scheduled arrival (queueing counts),
    and its `samples` those latencies."""

    kind: ScenarioKind
    rate_hz: float = Field(gt=0)
    deadline_ms: float = Field(gt=0)
    queries: int = Field(ge=1)
    misses: int = Field(ge=0)
    """Queries that completed after their scheduled arrival plus the deadline."""
    miss_rate: float = Field(ge=0, le=1)
    """misses / queries."""
    miss_rate_low: float = Field(ge=0, le=1)
    miss_rate_high: float = Field(ge=0, le=1)
    """Wilson's 95 % interval of the miss rate (contract/proportions.py)."""
    longest_miss_run: int = Field(ge=0)
    """The most consecutive queries that missed: a controller survives one late tick more
    easily than ten."""
    jitter_ms: float = Field(ge=0)
    """The p99 of |completion_k - completion_(k-1) - period|: how far the outputs' spacing
    strays from the period."""
    issue_error_p99_ms: float = Field(ge=0)
    """The issue clock's own error: p99 of actual issue time less scheduled arrival, over the
    queries that found the model idle (the others waited in the queue, which is latency)."""
    issue_error_max_ms: float = Field(ge=0)
    issue_error_queries: int = Field(default=1, ge=1)
    """The queries that found the model idle, which the two above are taken over (the
    first always does): few where the model falls behind the rate."""
    busy_s: float | None = Field(default=None, ge=0)
    """The busy spans' time: each from the loop's wake before an arrival (or, queued, the
    completion before) through the final spin and the query. None before schema 13."""
    busy_run_queue_wait_s: float | None = Field(default=None, ge=0)
    """The threads' run-queue wait inside the busy spans (schedstat), which the run's
    contended rule holds against `busy_s`; None where the kernel does not keep it, and
    before schema 13."""


class StageLatency(_Result):
    """One stage's share of a pipeline's queries, in milliseconds (contract.config.Stage, or
    `model`): its time in every timed query of the chain."""

    p50_ms: float = Field(ge=0)
    p90_ms: float = Field(ge=0)
    p99_ms: float = Field(ge=0)
    mean_ms: float = Field(ge=0)
    max_ms: float = Field(ge=0)
    share: float = Field(ge=0, le=1)
    """Its part of the chain's time: its total over the chain's total, in all the queries."""


StageName = Literal["preprocess", "model", "postprocess"]
"""A pipeline's stages, by the order they run: the keys of a result's `stages`."""


class Validity(_Result):
    """Whether the numbers can be trusted as they stand.

    The four flags after `output_finite` are None in results written before they were measured.
    """

    noisy: bool
    """IQR / median above 10 %: the environment disturbed the measurement."""
    noise: float = Field(ge=0)
    """IQR / median."""
    reliable_percentiles: list[str]
    """Percentiles with at least 10 samples beyond them (p99 needs 1000 iterations, p99.9
    10,000)."""
    output_finite: bool
    """The model's outputs held no NaN or infinity on the last iteration."""
    contended: bool | None = None
    """Something else had the CPUs during the timed loop (see `contention` for what)."""
    cpu_throttled: bool | None = None
    """The cgroup's CPU quota stopped the process during the timed loop."""
    gpu_throttled: bool | None = None
    """The GPU slowed its clocks for power or heat during the timed loop (see `gpu`)."""
    stopped_early: bool | None = None
    """A loop hit its maximum before both minimums: fewer iterations or seconds than asked."""
    reasons: list[str] = Field(default_factory=list)
    """Why each flag above is set, in words with the numbers."""


class Contention(_Result):
    """What the timed loop got of the CPUs, read from the kernel before and after it."""

    wall_s: float = Field(ge=0)
    cpu_time_s: float = Field(ge=0)
    """User and system time of the whole process (all its threads)."""
    threads: int = Field(ge=1)
    """torch's intra-op threads during the loop."""
    cpus_allowed: float = Field(gt=0)
    """CPUs the pod may use: its affinity mask, lowered to the cgroup quota."""
    run_queue_wait_s: float | None = Field(default=None, ge=0)
    """Time the process's threads were runnable but waited for a CPU (schedstat); None where
    the kernel does not keep it."""
    steal_fraction: float | None = Field(default=None, ge=0, le=1)
    """Share of all CPUs' time the hypervisor gave to other guests (/proc/stat)."""
    throttled_periods: int | None = Field(default=None, ge=0)
    """cgroup CPU periods in which the quota ran out (cpu.stat nr_throttled); None: no cgroup
    CPU controller visible."""
    throttled_s: float | None = Field(default=None, ge=0)
    """Time the quota held the process back (cpu.stat throttled_usec)."""


class GpuTelemetry(_Result):
    """The GPU as NVML saw it during the timed loop, sampled every `interval_s`."""

    readings: int = Field(ge=0)
    interval_s: float = Field(gt=0)
    device_s: float = Field(ge=0)
    """Sum of the iterations' CUDA-event times: what the GPU spent."""
    wall_s: float = Field(ge=0)
    """The loop's host wall time: launch and synchronisation included."""
    sm_clock_mhz_min: int | None = Field(default=None, ge=0)
    sm_clock_mhz_max: int | None = Field(default=None, ge=0)
    sm_clock_mhz_limit: int | None = Field(default=None, ge=0)
    """The device's maximum SM clock."""
    temperature_c_max: int | None = None
    power_w_max: float | None = Field(default=None, ge=0)
    power_limit_w: float | None = Field(default=None, ge=0)
    throttle_reasons: list[str] = Field(default_factory=list)
    """NVML clock-event reasons seen in any reading that slow a busy GPU (power cap, thermal,
    hardware slowdown), by NVML's names."""
    unavailable: str | None = None
    """Why NVML could not be read (no readings then)."""
    energy_j: float | None = Field(default=None, gt=0)
    """What the whole GPU used from the loop's start to its end: NVML's total-energy counter
    read at both, the difference. None where it cannot be read, or did not move
    (`energy_unavailable`)."""
    energy_s: float | None = Field(default=None, gt=0)
    """Seconds between the two readings of the energy counter."""
    energy_unavailable: str | None = None
    """Why there is no energy, where NVML was read (a GPU without the counter says
    NVML_ERROR_NOT_SUPPORTED; a counter that did not move says so)."""

    @model_validator(mode="before")
    @classmethod
    def _energy_unknown_unless_measured(cls, data: Any) -> Any:
        return _unknown_unless_measured(data, ("energy_j", "energy_s"), "energy_unavailable")


ENERGY_ON_CPU: Final = (
    "not measured on a CPU target: the energy counter the runner reads is NVIDIA's, through "
    "NVML, for GPUs only"
)
"""Why a CPU target's result has no energy (runner/gpu_telemetry.py writes it, the report
tells CPU targets by it)."""


class Energy(_Result):
    """What the GPU used during this variant's timed loop, from NVML's total-energy counter
    (runner/gpu_telemetry.py): joules per inference (one sample of a batch) and average
    watts, or why there are none."""

    joules: float | None = Field(default=None, gt=0)
    """This variant's share of the loop's energy: all of it, or in an interleaved loop the
    share of the loop's time its own blocks took."""
    joules_per_inference: float | None = Field(default=None, gt=0)
    """`joules` over the samples its timed iterations computed (batch size x iterations)."""
    average_w: float | None = Field(default=None, gt=0)
    """The loop's energy over the seconds between the counter's two readings."""
    share: float = Field(default=1, ge=0, le=1)
    """Of the loop's energy: 1, or this variant's share of an interleaved loop's time."""
    unavailable: str | None = None
    """Why there is no energy: a CPU target, a GPU without the counter, NVML not readable, a
    counter that did not move during the loop."""

    @model_validator(mode="before")
    @classmethod
    def _unknown_unless_measured(cls, data: Any) -> Any:
        return _unknown_unless_measured(
            data, ("joules", "joules_per_inference", "average_w"), "unavailable"
        )


def _unknown_unless_measured(data: Any, amounts: tuple[str, ...], why: str) -> Any:
    """`data` as it is, or where one of its `amounts` is no amount of energy (0 from a
    counter that did not move, which runners reported before they said why; below 0; not
    finite) without them, `why` saying so: the energy is unknown, never 0 J. Every energy
    figure comes from the same two readings of one counter, so one that is wrong makes them
    all unknown."""
    if not isinstance(data, Mapping):
        return data
    wrong = next((name for name in amounts if not_an_amount(data.get(name))), None)
    if wrong is None:
        return data
    value = data[wrong]
    reason = (
        "the energy counter did not move during the loop, so its energy is unknown"
        if value == 0
        else "no amount of energy"
    )
    kept = {key: data[key] for key in data if key not in amounts}
    return {**kept, why: f"the runner reported {wrong} = {value!r}: {reason}"}


class PhaseTiming(_Result):
    """How one loop (warmup or timed) ran and why it stopped."""

    iterations: int = Field(ge=0)
    seconds: float = Field(ge=0)
    stopped_by: StoppedBy


class ModelLoad(_Result):
    """Getting one model's program in a pod: paid once per model and pod, by the first of its
    variants there that was measured."""

    source: ModelSource
    file_bytes: int = Field(ge=0)
    """The size of the model's `.pt2`: what peak memory is compared with."""
    fetch_s: float = Field(ge=0)
    """Getting the file and checking its sha256: a `url` model's download (the digest
    computed as it streams), or reading the file where the pod has it (a ConfigMap, the
    image, an `oci` artifact's image volume) to check it. The pull of an image volume is the
    kubelet's, before the runner starts: the pod's start-up holds it."""
    load_s: float = Field(ge=0)
    """contract.archive's check of the file and `torch.export.load`."""


class LoopRules(_Result):
    """A variant's loop rules as config.json gave them: its warm-up's and its timed loop's
    minimums and maximums (and the tail it ran for)."""

    warmup: PhaseConfig
    measure: PhaseConfig


class Timings(_Result):
    """Where the time of a run went, apart from the timed loop's statistics."""

    load_s: float = Field(ge=0)
    """This variant's wait for its program: the model's fetch and load where it was the first
    of its model in the pod (`model`), and the copy of the module it casts and quantizes
    (`copy_s`)."""
    prepare_s: float = Field(ge=0)
    """Applying precision and quantization."""
    model: ModelLoad | None = None
    """Where this variant loaded its model for the pod (part of `load_s`); None where an earlier
    variant of the pod had, and in results of runners before schema 5."""
    copy_s: float | None = Field(default=None, ge=0)
    """Copying the program's module for this variant (part of `load_s`): with `prepare_s`,
    the module's preparation."""
    process_s: float | None = Field(default=None, ge=0)
    """From the runner process's start (the kernel's record of it) to its first line of code:
    the interpreter and the imports (torch's take seconds). The same in every result of a
    pod; None where the kernel does not say."""
    measure_start_s: float | None = Field(default=None, ge=0)
    """When this variant's timed loop began, in seconds since the runner process started: the
    time to its first measurement, from the container's start."""
    first_iteration_ms: float = Field(ge=0)
    """The cold first call, excluded from warmup and measurement; of a compiled variant, the
    first call after the one that compiled it."""
    warmup: PhaseTiming
    measure: PhaseTiming
    accuracy_s: float | None = Field(default=None, ge=0)
    """The accuracy pass, outside warmup and the timed loop: the reference's outputs where
    this variant computed them (the first of its model, batch and inputs in the pod) and the
    comparison. None in results of runners before it."""
    compile_s: float | None = Field(default=None, ge=0)
    """A compiled variant's `torch.compile` and the call that compiled it (tracing, lowering,
    the C++ or Triton compiler, one run), outside warmup and the timed loop; None for eager.
    Only inductor's; kept for readers before `conversion_s`, which holds the same number."""
    conversion_s: float | None = Field(default=None, ge=0)
    """Turning the prepared module into what the variant's runtime runs, and that run's first
    call: inductor's compile, aotinductor's export, build and load of its package,
    onnxruntime's ONNX export and session, tensorrt's engines. Outside warm-up and the timed
    loop, inside the variant's time to its first measurement; None for eager, and in results
    before schema 10."""
    runtime_load_s: float | None = Field(default=None, ge=0)
    """Of `conversion_s`, loading what the conversion built into the process: aotinductor's
    `aoti_load_package`, onnxruntime's session (its graph optimisation included) and its
    binding. None where nothing built is loaded apart (eager, inductor, tensorrt, whose
    engines are built into the module), and in results before schema 13."""
    loops: LoopRules | None = None
    """What the warm-up and the timed loop stopped by (config.json's, the Job's): with
    `bound_s`, what the report needs to recompute `make plan`'s likely figure for a variant
    no earlier run estimated. None in results before schema 13."""
    bound_s: float | None = Field(default=None, gt=0)
    """The most its warm-up and timed loop may take: config.json's `warmup.max_time_s` plus
    `measure.max_time_s`, the Job's. What `make plan` counts for a variant no earlier run
    estimates, so the report can recompute the plan's estimate (contract/estimate.py); None
    in results before schema 6."""

    @property
    def own_s(self) -> float:
        """The variant's own time in its pod, load to the end of its accuracy pass: what
        tells its share of a pod that ran several (the pod's start is everyone's)."""
        return (
            self.load_s
            + self.prepare_s
            + self.first_iteration_ms / 1000
            + self.warmup.seconds
            + self.measure.seconds
            + (self.accuracy_s or 0)
            + (self.converting_s or 0)
        )

    @property
    def converting_s(self) -> float | None:
        """The runtime's compile or conversion, from results of any schema; None eager."""
        return self.conversion_s if self.conversion_s is not None else self.compile_s


class Memory(_Result):
    """Peak memory of the runner process."""

    peak_rss_bytes: int = Field(ge=0)
    gpu_peak_allocated_bytes: int | None = Field(default=None, ge=0)
    gpu_peak_reserved_bytes: int | None = Field(default=None, ge=0)


class Compiled(_Result):
    """How a compiled variant's module was compiled, in the pod, from the verified graph."""

    backend: str
    """torch.compile's backend (`inductor`)."""
    mode: str
    """The backend's mode (`default`)."""
    graphs: int = Field(ge=1)
    """The graphs compiled for this variant's module: 1 for an exported program, which is
    compiled whole (a graph break fails the variant rather than measuring it half eager)."""
    cache_hits: int = Field(ge=0)
    """Of those, the graphs inductor found in its cache, compiled by an earlier variant of the
    same graph in this pod (so `compile_s` is not a cold compile's)."""
    toolchain: str
    """What compiled the kernels: the C++ compiler's version line on a CPU, Triton's on a GPU."""


class Applied(_Result):
    """Proof that the variant's precision and quantization took effect."""

    compute_dtype: str
    """The dtype floating inputs and weights were cast to."""
    parameter_dtypes: dict[str, NonNegativeInt]
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
    unquantized_weighted_layers: dict[str, NonNegativeInt] = Field(default_factory=dict)
    """Other layers with weights (e.g. convolutions) that stay in the compute dtype."""
    weight_bytes: int = Field(ge=0)
    """Bytes of parameters and buffers after preparation, as stored."""
    kernel: str | None = None
    """What a quantized layer calls."""
    quantizer: str | None = None
    """What the quantization ran, in words (`contract.variant.QUANTIZERS`, part of the variant
    id); None without quantization, and in results of runners before torchao."""
    quantized_weight_share: float | None = Field(default=None, ge=0, le=1)
    """The quantized weights' elements over all parameters'."""
    kernel_calls: dict[str, NonNegativeInt] | None = None
    """The matrix ops (aten.mm, aten._int_mm, aten._weight_int4pack_mm_for_cpu, ...) one
    call of the prepared model dispatched, with their counts: what really ran. For a compiled
    variant, an eager call of the module it compiled (its quantization's proof; a dispatch
    mode cannot see into compiled code)."""
    compiled: Compiled | None = None
    """How the module was compiled; None for eager."""
    runtime_proof: list[str] | None = None
    """What ran the timed calls, as the runtime itself reports it: eager the torch that
    dispatched them, inductor its compiled graphs and toolchain, aotinductor the package's
    compiled libraries and kernels, onnxruntime the execution providers its session uses
    (`CPUExecutionProvider`), tensorrt its engines. None in results before schema 10."""


class Environment(_Result):
    """Where the numbers come from."""

    python: str
    torch: str
    cuda: str | None = None
    device: str
    device_name: str
    cpu_model: str
    threads: int = Field(ge=1)
    """torch's intra-op threads, set from the container's CPU quota."""
    cpu_quota: float | None = Field(default=None, gt=0)
    """CPUs the cgroup allows (None: unlimited)."""
    cpu_flags: tuple[str, ...] | None = None
    """The CPU's instruction-set extensions, as /proc/cpuinfo lists them (`flags` on x86,
    `Features` on arm), those of the families contract/instructions.py reads (AVX, AMX, SSE,
    FMA, NEON, SVE...): what tells whether bf16 or int8 run natively. None where /proc does
    not say, and in results before schema 6."""
    gpu_capability: tuple[int, int] | None = None
    """The GPU's CUDA compute capability (major, minor): its tensor cores' generation. None on
    a CPU, and in results before schema 6."""
    node_name: str | None = None
    pod_name: str | None = None
    image: str | None = None
    hostname: str


class Paired(_Result):
    """This variant against another of its pod, measured in alternating rounds
    (`interleave`): the ratio of their medians, each round compared within itself, so drift
    that both saw cancels out."""

    against: str
    """The variant id this one is compared with: the group's first variant of the model."""
    rounds: int = Field(ge=1)
    """Rounds, each holding a block of iterations of every variant."""
    ratio: float = Field(gt=0)
    """The median over rounds of this variant's block median / the other's, same round."""
    low: float = Field(gt=0)
    """The sign test's 95 % interval of that median, from the round ratios."""
    high: float = Field(gt=0)


class Rounds(_Result):
    """This variant's share of the alternating rounds it was measured in (`interleave`): its
    block median in each round. Any two variants whose results name the same `id` ran in the
    same rounds, so the report compares every such pair round by round, not only each
    variant with the first (`paired`), and keeps that pairing across repeated runs."""

    id: str = Field(min_length=1, max_length=64)
    """Names the rounds: the same in every variant's result of one interleaved loop, drawn
    afresh for each loop, so another model's rounds or a retried pod's never match it."""
    medians_ns: list[NonNegativeFloat] = Field(min_length=1)
    """The block median of each round, in round order, in nanoseconds (exact: an iteration's
    duration or the mean of the middle two)."""


class RecordedInputs(_Result):
    """The recorded inputs a variant replayed instead of drawn ones."""

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """The recording's file's digest: two results compare like for like only with the same."""
    samples: int = Field(ge=1)
    """The samples it holds, replayed in order, wrapping."""


class ErrorInfo(_Result):
    """What went wrong."""

    type: ErrorType
    message: str


class _ResultBase(_Result):
    """What every result says about itself; `status` tells which kind it is."""

    schema_version: SchemaVersion = RESULT_SCHEMA_VERSION
    status: str
    workflow: str | None = None
    target: str | None = None
    variant: VariantRef | None = None
    model_sha256: str | None = None
    fingerprint: Fingerprint | None = None
    """The stack it was measured on (contract/fingerprint.py); None in results before
    schema 11: an unknown stack."""
    stored: StoredObject | None = None
    """Where the runner wrote this result whole (every sample, every field) in the pod's
    result lake, and what those bytes hash to (result schema 12). Set on the copies that
    travel beside the object (the log line, the termination message), never in the object:
    the object is this result without `stored` and `store_error`, so it cannot carry its
    own digest. None where no store was named, or writing failed (`store_error`)."""
    store_error: str | None = Field(default=None, max_length=STORE_ERROR_LIMIT)
    """Why a runner whose pod names a result lake could not write this result there (the
    store's classified reason, never a credential); the result then travels as before, in
    the log line and the termination message (result schema 12)."""
    _dropped: tuple[str, ...] = PrivateAttr(default=())

    @property
    def dropped(self) -> tuple[str, ...]:
        """What its reader left out of the result as it arrived, each a field, its value and
        why that is none (`read_result`); empty where nothing was."""
        return self._dropped


class OkResult(_ResultBase):
    """A variant measured: its statistics, and the proof of what ran."""

    status: Literal["ok"] = "ok"
    latency: LatencyStats
    throughput_samples_per_s: float | None = Field(default=None, gt=0)
    timings: Timings | None = None
    memory: Memory | None = None
    applied: Applied | None = None
    validity: Validity | None = None
    contention: Contention | None = None
    gpu: GpuTelemetry | None = None
    energy: Energy | None = None
    """None in results of runners before it (schema_version 3)."""
    environment: Environment | None = None
    samples: Samples | None = None
    """Every iteration's duration: on the log line only, never in the termination log (see
    `samples_in_log`)."""
    accuracy: Accuracy | None = None
    """The outputs against the untouched program's fp32 outputs on the same inputs. None in
    results of runners before it: not measured, which no report takes for passing."""
    samples_in_log: bool = False
    """Set in the termination log's copy of a result with samples: the log line has them. The
    collector stores the copy so marked until it reads them, and needs them for nothing it
    reports (`latency.p50_interval`)."""
    paired: Paired | None = None
    """Set where this variant was measured in rounds alternating with an earlier one."""
    rounds: Rounds | None = None
    """Set in every variant's result of an interleaved loop of several variants, the first
    one's too: what pairs any two of them. Results of runners before it have `paired` only."""
    recorded_inputs: RecordedInputs | None = None
    """Set where the variant replayed recorded inputs (result schema 9); None: it drew them,
    seeded, as `accuracy.inputs` says."""
    family: str | None = Field(default=None, min_length=1, max_length=30)
    """The model's family, where its spec names one (result schema 9)."""
    params: Params | None = None
    """The model's parameters within its family (result schema 9): what the report compares
    the family's members along."""
    compacted: bool = False
    """Details other than the samples were left out to fit the termination log; the log line
    has them all."""
    scenario: Scenario | None = None
    """Set by a fixed-rate run; None for today's closed loop (single_stream)."""

    @property
    def reliable_p99_9_ms(self) -> float | None:
        """`latency.p99_9_ms` where the run had the iterations it needs, else None: a short
        run's p99.9 is never read as if it held."""
        validity = self.validity
        if validity is None or "p99.9" not in validity.reliable_percentiles:
            return None
        return self.latency.p99_9_ms

    stages: dict[StageName, StageLatency] | None = None
    """Where the model runs between a preprocess and a postprocess: each stage's time per
    query (the model's with the casts between it and the stages), measured in the same
    queries as `latency`, which is the whole chain's. None for a model run alone, and in
    results of runners before it (schema_version 8)."""


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


_KINDS: Final[Mapping[str | int, type[_ResultBase]]] = {"ok": OkResult, "error": ErrorResult}


def _kind(location: Location) -> tuple[type[BaseModel], int] | None:
    """The kind of result an error location is in, by the union's tag that starts it."""
    kind = _KINDS.get(location[0]) if location else None
    return (kind, 1) if kind is not None else None


def parse_result(text: str | bytes, *, strict: bool = False) -> OkResult | ErrorResult:
    """A result from its JSON, as every reader takes one (`read_result`); raises
    pydantic.ValidationError when it is not one."""
    try:
        return RESULT_ADAPTER.validate_json(text, strict=strict)
    except ValidationError as error:
        if not all(is_bad_number(detail) for detail in error.errors()):
            raise
        return _read_again(json.loads(text), error, strict=strict)


def read_result(data: object) -> OkResult | ErrorResult:
    """A result from what JSON parses to (a record's, a stored row's), read as `parse_result`
    reads its text."""
    try:
        return RESULT_ADAPTER.validate_python(data)
    except ValidationError as error:
        return _read_again(data, error, strict=False)


def _read_again(data: object, error: ValidationError, *, strict: bool) -> OkResult | ErrorResult:
    """The result `data` holds without the fields that may be left out whose numbers `error`
    found bad, each named in its `dropped`. Raises `error` where it found anything else, or
    a bad number where none may be left out (`latency`): the result then measured nothing a
    reader can use (`unreadable_measurement` says so)."""
    repaired = without_bad_numbers(data, error, _kind)
    if repaired is None:
        raise error
    changed, notes = repaired
    # Through JSON again, so that strict mode reads what it read the first time (an enum's
    # value, which strict Python would refuse for not being the enum's member).
    result = RESULT_ADAPTER.validate_json(json.dumps(changed), strict=strict)
    result._dropped = notes
    return result


def unreadable_measurement(error: ValidationError) -> str | None:
    """Where `parse_result` or `read_result` refused a result for its numbers alone (one a
    runner or an earlier collector let through), which ones, in words; None where anything
    else is wrong with it."""
    details = error.errors()
    if not details or not all(is_bad_number(d) and _kind(d["loc"]) for d in details):
        return None
    return "; ".join(number_words(detail, 1) for detail in details)


def result_line(result: BenchResult) -> str:
    """The one stdout line that hands `result` over, newline included."""
    return RESULT_PREFIX + result_json(result) + "\n"


def result_json(result: BaseModel) -> str:
    """`result` as runners and the store write it: every runtime as `variant.runtime`."""
    return result.model_dump_json(exclude_none=True, context=RUNTIME_KEY_CONTEXT)


def find_result_text(output: str) -> str | None:
    """The JSON of the last BENCH_RESULT line in `output`, or None if there is none."""
    texts = find_result_texts(output)
    return texts[-1] if texts else None


def find_result_texts(output: str) -> list[str]:
    """The JSON of every BENCH_RESULT line in `output`, in order (a pod running a group of
    variants prints one per variant)."""
    return [
        line.removeprefix(RESULT_PREFIX).strip()
        for line in output.splitlines()
        if line.startswith(RESULT_PREFIX)
    ]


_ERROR_MESSAGE_BUDGET: Final = 1500


def _short_error(result: BenchResult) -> BenchResult:
    if not isinstance(result, ErrorResult) or len(result.error.message) <= _ERROR_MESSAGE_BUDGET:
        return result
    message = result.error.message[: _ERROR_MESSAGE_BUDGET - 3] + "..."
    return result.model_copy(update={"error": ErrorInfo(type=result.error.type, message=message)})


def without_samples(result: BenchResult) -> BenchResult:
    """`result` as the termination log holds it where it has room: all of it but the samples,
    which the log line alone carries (`samples_in_log`)."""
    if not isinstance(result, OkResult) or result.samples is None:
        return result
    return result.model_copy(update={"samples": None, "samples_in_log": True})


def _without_details(result: BenchResult) -> BenchResult:
    """`result` without what only a reader of one run wants: the proof of what ran, timings,
    memory, contention, GPU telemetry and energy, and the accuracy's per-output numbers and
    inputs. Its accuracy's summary stays, beside the statistics and the validity flags: a variant's
    accuracy decides whether it may win, whatever happens to its log."""
    if not isinstance(result, OkResult):
        return result
    accuracy = result.accuracy
    return result.model_copy(
        update={
            "applied": None,
            "timings": None,
            "memory": None,
            "contention": None,
            "gpu": None,
            "energy": None,
            "accuracy": accuracy.model_copy(update={"outputs": None, "inputs": None})
            if accuracy
            else None,
        }
    )


def _without_reasons(result: BenchResult) -> BenchResult:
    if not isinstance(result, OkResult) or result.validity is None:
        return result
    return result.model_copy(
        update={"validity": result.validity.model_copy(update={"reasons": []})}
    )


_COMPACTIONS: Final[tuple[Callable[[BenchResult], BenchResult], ...]] = (
    # Not a compaction: the samples (about 3.3 bytes an iteration) never travel here, so what
    # a termination log holds, and whether the collector reads a log, does not depend on how
    # many iterations the loop's time allowed (on a loaded node, more or fewer).
    without_samples,
    # Round medians (about 12 bytes a round) go on their own, right after the samples: a
    # result that fits without them has exactly what it had before they existed, and one
    # with room keeps them. `paired` stays to the end, the pairing against the first variant
    # whatever the log's fate; the log line has the rounds for every other pair.
    lambda r: r.model_copy(update={"rounds": None}) if isinstance(r, OkResult) else r,
    _short_error,
    lambda r: r.model_copy(update={"environment": None, "fingerprint": None}),
    _without_details,
    # Last before stubs: the validity flags stay, their words (longer the more a loaded node
    # disturbed the run) go, so that load does not turn a group's results into stubs.
    _without_reasons,
)


def compact(result: BenchResult, limit: int = TERMINATION_LOG_LIMIT) -> str:
    """The termination log's copy of `result`: compact JSON without its samples, compacted
    further where it is still over `limit` bytes."""
    current = result
    for index, step in enumerate(_COMPACTIONS):
        current = step(current)
        if index:
            current = current.model_copy(update={"compacted": True})
        text = result_json(current)
        if len(text.encode()) <= limit:
            return text
    raise ValueError(f"a result cannot be compacted below {limit} bytes: {text[:200]}")


class OmittedResult(_Result):
    """A result of a group that its termination message has no room for: the pod's log has
    it whole, on its BENCH_RESULT line."""

    status: Literal["omitted"] = "omitted"
    index: int | None = None
    """The variant's index, as its result names it (None: a result naming no variant, which
    the message leaves out like every None)."""
    id: str | None = None
    """The variant's id: the variant's identity is whole in the log, this finds it there."""
    outcome: Literal["ok", "error"]
    """The omitted result's own status."""
    sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    bytes: int | None = Field(default=None, ge=0)
    """The omitted result's `stored` but its key (result schema 12), which a stub has no
    room for: it is `contract.lake.raw_key` of the pod's workflow, cluster, Job, this `id`
    and the pod's name. None where the result was not stored, or the message had no room
    even for these (the log line then has the result)."""


GroupEntry = Annotated[OkResult | ErrorResult | OmittedResult, Field(discriminator="status")]
"""One entry of a group's termination message: a result, whole or compacted, or its stub."""
GROUP_ADAPTER: Final = TypeAdapter[list[GroupEntry]](list[GroupEntry])


def _group_text(texts: list[str]) -> str:
    """The JSON array of entries already dumped, as GROUP_ADAPTER.dump_json writes it."""
    return "[" + ",".join(texts) + "]"


def _group_size(sizes: list[int]) -> int:
    """Bytes of the array whose entries take `sizes` bytes: brackets and commas added."""
    return sum(sizes) + len(sizes) + 1


def _omitted(result: BenchResult, *, digest: bool = True) -> OmittedResult:
    variant = result.variant
    stored = result.stored if digest else None
    return OmittedResult(
        index=variant.index if variant else None,
        id=variant.id if variant else None,
        outcome=result.status,
        sha256=stored.sha256 if stored else None,
        bytes=stored.bytes if stored else None,
    )


def termination_message(results: list[BenchResult], limit: int = TERMINATION_LOG_LIMIT) -> str:
    """What the termination log holds for a pod's results so far, at most `limit` bytes.

    One result is compacted alone (`compact`): a pod of one variant writes one object.
    Several become a JSON array: every result, without its samples, goes through the same
    compaction steps in step, and if even the most compacted array is too long, results turn
    into stubs (`OmittedResult`) from the last successful one back, failures last, since a failure's
    words matter most when the log is gone.
    """
    if len(results) == 1:
        return compact(results[0], limit)
    # Each entry is dumped once per step and each stub once, and the array is sized from
    # those: dumping the whole array at every try cost a group of 24 a quarter second over its
    # variants, and grew with the cube of the group's size (docs/decisions/runner.md).
    current: list[BenchResult] = list(results)
    texts: list[str] = []
    sizes: list[int] = []
    for index, step in enumerate(_COMPACTIONS):
        # Each step on top of the ones before, as `compact` does: a step applied to the
        # originals alone would bring back what the earlier ones left out.
        current = [step(r) for r in current]
        marked = [r.model_copy(update={"compacted": True}) for r in current] if index else current
        texts = [result_json(entry) for entry in marked]
        sizes = [len(text.encode()) for text in texts]
        if _group_size(sizes) <= limit:
            return _group_text(texts)
    order = sorted(range(len(texts)), key=lambda i: (results[i].status == "error", -i))
    # Stubs keep the digest of what the lake holds, so a collector reads those results whole
    # from the store rather than from the log; only where even that is too long do they lose
    # it, in the same order (about 24 stubs fit with their digests, 32 without).
    for digest in (True, False):
        for position in order:
            texts[position] = result_json(_omitted(results[position], digest=digest))
            sizes[position] = len(texts[position].encode())
            if _group_size(sizes) <= limit:
                return _group_text(texts)
    raise ValueError(f"{len(results)} results do not fit {limit} bytes even as stubs")


def is_group_message(text: str) -> bool:
    """Whether a termination message is a group's (a JSON array, `termination_message` with
    several results) rather than one result's (an object) or a log's tail."""
    return text.lstrip().startswith("[")


def parse_group_message(text: str | bytes) -> list[OkResult | ErrorResult | OmittedResult]:
    """The entries of a group's termination message, each result read as `parse_result`
    reads one; raises pydantic.ValidationError."""
    try:
        return GROUP_ADAPTER.validate_json(text, strict=True)
    except ValidationError as error:
        if not all(is_bad_number(detail) for detail in error.errors()):
            raise
        entries = json.loads(text)
        try:
            return [_group_entry(entry) for entry in entries]
        except ValidationError:
            raise error from None


_ENTRY_ADAPTER: Final = TypeAdapter[GroupEntry](GroupEntry)


def _group_entry(entry: object) -> OkResult | ErrorResult | OmittedResult:
    try:
        return _ENTRY_ADAPTER.validate_json(json.dumps(entry), strict=True)
    except ValidationError as error:
        return _read_again(entry, error, strict=True)


def parse_result_line(output: str) -> BenchResult | None:
    """The result in a runner's stdout (the last BENCH_RESULT line), or None if there is none.

    Raises pydantic.ValidationError or ValueError when the line is there but malformed.
    """
    text = find_result_text(output)
    return None if text is None else parse_result(text)
