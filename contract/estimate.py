"""What a Job's pods will take: `make plan`'s estimate (synth/plan.py), which the report
recomputes once the Job ran to say how far off it was (report/estimates.py). Both compute it
here, the report with the runs the plan could have read (those finished before the Job's
first pod was created), so the report judges the number the plan gave, not a better one.

A variant that ran before (the same setting on the same target, succeeded) goes by what it
took then. Every other part of a pod is not known before it runs, so it is a Span: the least
it can take, the most likely, and the most (an upper bound that holds on the hosts the
allowances were measured on). Its timed loops stop once both minimums are met, or at a
maximum; the minimums decide in practice, so their likely length is the longer of
`min_time` and `min_iterations` at a per-iteration time guessed from the model's size, and
their most is `max_time`. Outside them, each kind of work has an allowance, scaled by the
model's size where the plan knows it (docs/decisions/estimates.md has the numbers).
"""

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from contract.config import PhaseConfig, ScenarioConfig
from contract.records import StoredVariant
from contract.result import OkResult, Timings
from contract.variant import Precision, Quantization, Runtime, VariantSettings

GB: Final = 1e9


@dataclass(frozen=True)
class Span:
    """A time not known before the run: the least, the most likely and the most seconds."""

    low_s: float
    likely_s: float
    high_s: float

    @classmethod
    def exactly(cls, seconds: float) -> "Span":
        return cls(seconds, seconds, seconds)

    def __add__(self, other: "Span") -> "Span":
        return Span(
            self.low_s + other.low_s, self.likely_s + other.likely_s, self.high_s + other.high_s
        )

    def times(self, factor: float) -> "Span":
        return Span(self.low_s * factor, self.likely_s * factor, self.high_s * factor)


NONE: Final = Span(0.0, 0.0, 0.0)

REFERENCE_BYTES: Final = 440_000_000
"""The size a model of unknown size (an `oci` or `image_path` model whose entry records no
`layers:`) is taken to have: BERT-base's, the largest the allowances were measured on."""


@dataclass(frozen=True)
class Allowance:
    """What one kind of work outside the timed loops takes: a part every model pays and a
    part per GB of model (the likely and the most; the least pays no size)."""

    low_s: float
    likely_s: float
    high_s: float
    likely_per_gb_s: float = 0.0
    high_per_gb_s: float = 0.0

    def span(self, size_bytes: int | None) -> Span:
        """For a model of `size_bytes` (None: unknown, REFERENCE_BYTES)."""
        gb = (REFERENCE_BYTES if size_bytes is None else size_bytes) / GB
        return Span(
            self.low_s,
            self.likely_s + self.likely_per_gb_s * gb,
            self.high_s + self.high_per_gb_s * gb,
        )


# The allowances, from the real-size sweep (tiny models to a BERT-base of 440 MB; fp32 and
# bf16, none and int8-dynamic, eager and inductor, batch 1) recorded twice on a 2-core host
# under a load of 3-6 (tests/data/estimates/) and cpu-smoke run through localrun: the least
# each kind took, about its median (likely), and the most, rounded up (high), scaled by size
# where the numbers follow it (docs/decisions/estimates.md). A busier node takes longer: the
# second run's estimate goes by the first.
FIRST_COMPILE: Final = Allowance(60.0, 80.0, 200.0)
"""A pod's first compiled variant's `torch.compile` and compiling call (`compile_s`): 61-194 s
(a cold inductor cache builds its precompiled header; median 81 s). Not scaled by size,
which they do not follow: tiny-transformer took 172 s, BERT-base 69-83 s."""
LATER_COMPILE: Final = Allowance(10.0, 35.0, 130.0)
"""Every later compiled variant of the same pod: 11-128 s (median 33 s), the cache warm."""
CONVERSION: Final = Allowance(0.0, 1.0, 4.0, likely_per_gb_s=15.0, high_per_gb_s=30.0)
"""A variant that casts or quantizes: copying its module and applying its precision and
quantization (`copy_s` + `prepare_s`): tiny models at most 2.8 s, ResNet-50 (104 MB)
1.2-6.0 s (median 2.6), BERT-base (440 MB) 2.1-14.5 s (median 7)."""
FIRST_CALLS: Final = Allowance(0.0, 0.5, 5.0, likely_per_gb_s=15.0, high_per_gb_s=45.0)
"""Every variant's cold first iteration and accuracy pass, outside the loops: tiny models at
most 1.3 s, ResNet-50 0.9-9.4 s (median 3.5), BERT-base 1.5-16.4 s (median 4)."""
STARTUP: Final = Allowance(2.0, 8.0, 30.0)
"""A pod's start-up: the kubelet's part (sandbox, image pull) and the runner process's
(Python, torch's imports: 2-5 s in cpu-smoke's local run, 5-11 s in the sweep's). A cold
node pulling the runner image takes longer."""
LOAD: Final = Allowance(1.0, 5.0, 20.0, likely_per_gb_s=10.0, high_per_gb_s=20.0)
"""A model's fetch and `torch.export.load`, once per pod and model: tiny models 2.5-14 s
(torch.export.load's own cost on a loaded host), ResNet-50 7-18 s, BERT-base 10-21 s (from
an https server)."""
ITERATION_S: Final = 0.005
ITERATION_PER_GB_S: Final = 15.0
"""The likely time of one timed iteration per sample on a CPU, a part every model pays and a
part per GB of model: tiny models 0.04-75 ms at batch 4, ResNet-50 1.9-3.7 s and BERT-base
1-10 s at batch 1. Only a likely value: how long an iteration takes is what the run
measures, so the loops' most is their `max_time`. On a GPU it is not guessed (none was
measured): the loops are taken to end at `min_time`."""


def likely_iteration_s(size_bytes: int | None) -> float:
    """One sample's likely iteration on a CPU for a model of `size_bytes` (None: unknown,
    REFERENCE_BYTES)."""
    return (
        ITERATION_S
        + ITERATION_PER_GB_S * (REFERENCE_BYTES if size_bytes is None else size_bytes) / GB
    )


PastSource = Literal["allocated", "measured"]


@dataclass(frozen=True)
class Past:
    """What earlier successful runs of one setting on one target took: the median of their
    allocated time (collector/allocation.py: scheduled to the runner's end, every attempt,
    its share of a grouped pod) where gather recorded it, else of the runner's own time
    (its module's preparation to the end of its timed loop, compile included: no start-up,
    no model load, no retries)."""

    seconds: float
    source: PastSource


@dataclass(frozen=True)
class History:
    """What earlier runs of a workflow in one cluster say each part of a pod took, by target."""

    variants: dict[tuple[str, str], Past] = field(default_factory=dict)
    """(target, variant as described) -> what its earlier runs took."""
    startup: dict[str, tuple[float, int]] = field(default_factory=dict)
    """Target -> the median start-up of its earlier pods, and how many pods."""
    loads: dict[tuple[str, str], float] = field(default_factory=dict)
    """(target, model sha256) -> the median time its earlier loads took (fetch and
    torch.export.load)."""


@dataclass(frozen=True)
class Planned:
    """What a Job runs, as the estimate needs it."""

    target: str
    variants: tuple[VariantSettings, ...]
    pods: int
    loads: tuple[str, ...]
    """The sha256 of the model each pod loads, once per pod and model."""
    bound_s: float | None
    """A variant's measurement bounds: its warm-up's and timed loop's maxima; None where
    unknown (results of runners before schema 6, which the report reads)."""
    loops: "Loops | None" = None
    """The rules its loops stop by, where known (config.json: the plan; results of schema 13
    on: the report); without them a loop is likely as long as its bounds."""
    sizes: Mapping[str, int] = field(default_factory=dict)
    """Model sha256 -> its bytes as known before the run; a model missing is of unknown
    size (REFERENCE_BYTES)."""
    models: Mapping[str, str] = field(default_factory=dict)
    """Model name -> its sha256, to find a variant's model's size."""


@dataclass(frozen=True)
class Loops:
    """What a Job's timed loops stop by (config.json)."""

    warmup: PhaseConfig
    measure: PhaseConfig
    scenario: ScenarioConfig | None = None
    """A fixed-rate run's measurement issues queries on a clock: its length is known."""
    on_cpu: bool = True
    """Whether an iteration's time is guessed (likely_iteration_s: measured on CPUs only)."""


@dataclass(frozen=True)
class Estimate:
    """A Job's pod time: each variant with a recorded success of the same setting on the
    same target counts its median time, every other one the Span of its loops and of the
    allowances of its kind. A variant's allocated time holds its share of its pod's start-up
    and model loads; for the rest, each pod adds the median start-up of the target's earlier
    pods (else STARTUP) and each model it loads the median load of that model there (else
    LOAD), in the share of the Job's variants not estimated by allocations."""

    seconds: float
    """The most likely pod time."""
    from_history: int
    """How many of the Job's variants had earlier runs to go by."""
    low_s: float = 0.0
    """The least it can take (earlier runs at what they took, the rest at their least)."""
    high_s: float = 0.0
    """The most it takes: every loop to its `max_time`, every allowance at its most."""
    allocated: int = 0
    """Of those, how many by the time the cluster allocated them (every attempt, start-up
    included); the rest by the runner's own time, recorded before allocations were."""
    startup_s: float | None = None
    """A pod's start-up (from getting a node to the runner's code: sandbox, image pulls,
    Python and imports), the median of the target's earlier pods; None where none say."""
    startup_pods: int = 0
    """How many earlier pods that median is of."""
    loads: int = 0
    """Model loads of the Job: once per pod and model."""
    loads_known: int = 0
    """Of those, how many an earlier load of the same model on the target estimates."""
    compiled: int = 0
    """Of the variants without earlier runs, how many compile (FIRST_COMPILE for the first
    in each pod, LATER_COMPILE for the rest)."""
    allowed_s: float = 0.0
    """Of `seconds`, what the allowances give: compile, conversion and first calls of the
    variants without earlier runs, and the start-ups and loads no earlier pod recorded."""
    unsized: int = 0
    """Of the variants without earlier runs, how many have a model of unknown size (taken
    as REFERENCE_BYTES)."""


def variant_seconds(timings: Timings) -> float:
    """A variant's own time: from its module's preparation to the end of its timed loop,
    compile and first call included (its model's load, once per pod, is counted apart;
    results before schema 5 did not tell it apart, so their `load_s` counts whole)."""
    own_load = timings.copy_s if timings.copy_s is not None else timings.load_s
    return (
        own_load
        + timings.prepare_s
        + timings.first_iteration_ms / 1000
        + timings.warmup.seconds
        + (timings.accuracy_s or 0.0)
        + (timings.converting_s or 0.0)
        + timings.measure.seconds
    )


def history_of(runs: Iterable[tuple[str, StoredVariant]]) -> History:
    """What the successful runs among `runs` (each with its Job's target) took, by target.
    A pod's start-up is the kubelet's part (its pod's status) and the runner process's own
    (its results), where both are known."""
    found: dict[tuple[str, str], dict[PastSource, list[float]]] = {}
    startups: dict[str, dict[str, float]] = {}
    loads: dict[tuple[str, str], list[float]] = {}
    for target, stored in runs:
        result = stored.result
        if not isinstance(result, OkResult):
            continue
        timings = result.timings
        start = stored.pod_start
        if stored.pod is not None and start is not None and timings is not None:
            kubelet, process = start.starting_s, timings.process_s
            if kubelet is not None and process is not None:
                startups.setdefault(target, {})[stored.pod] = kubelet + process
        if stored.variant is not None:
            past = found.setdefault((target, stored.variant.describe()), {})
            # Unknown where the pod's clocks could not be trusted (collector/allocation.py).
            allocated = stored.allocation.seconds if stored.allocation is not None else None
            if allocated is not None:
                past.setdefault("allocated", []).append(allocated)
            elif timings is not None:
                past.setdefault("measured", []).append(variant_seconds(timings))
        if timings is not None and timings.model is not None and result.model_sha256:
            model = timings.model
            loads.setdefault((target, result.model_sha256), []).append(model.fetch_s + model.load_s)
    variants = {}
    for key, past in found.items():
        source: PastSource = "allocated" if "allocated" in past else "measured"
        variants[key] = Past(statistics.median(past[source]), source)
    return History(
        variants=variants,
        startup={
            target: (statistics.median(pods.values()), len(pods))
            for target, pods in startups.items()
        },
        loads={key: statistics.median(values) for key, values in loads.items()},
    )


def loop_span(rule: PhaseConfig, iteration_s: float | None, rate_hz: float | None = None) -> Span:
    """One timed loop's length (runner/measure.py, runner/fixed_rate.py): it stops once both
    minimums are met, or at either maximum. A fixed-rate loop's minimums are counted in
    queries on its clock, so its length is known unless the model falls behind (then its
    `max_time`). A closed loop's iteration time is what the run measures: its least is none
    (`max_iterations` may stop it at once), its likely length the longer of `min_time` and
    `min_iterations` at `iteration_s` (unknown: `min_time`), its most `max_time`."""
    if rate_hz is not None:
        queries = max(rule.least_iterations, 1, math.ceil(rule.min_time_s * rate_hz))
        queries = min(queries, rule.max_iterations)
        on_time = min(rule.max_time_s, queries / rate_hz)
        return Span(min(on_time, (queries - 1) / rate_hz), on_time, rule.max_time_s)
    if iteration_s is None:
        likely = min(rule.min_time_s, rule.max_time_s)
    else:
        likely = min(
            rule.max_time_s,
            max(rule.min_time_s, rule.least_iterations * iteration_s),
            rule.max_iterations * iteration_s,
        )
    return Span(0.0, likely, rule.max_time_s)


def _compiled(variant: VariantSettings) -> bool:
    return variant.runtime != Runtime.EAGER


def _converted(variant: VariantSettings) -> bool:
    """Its module is a copy, cast and quantized, unless it runs the program's own fp32."""
    return variant.precision != Precision.FP32 or variant.quantization != Quantization.NONE


def _size(job: Planned, variant: VariantSettings) -> int | None:
    sha256 = job.models.get(variant.model)
    return job.sizes.get(sha256) if sha256 is not None else None


def _loops(job: Planned, variant: VariantSettings) -> Span:
    """The variant's warm-up and timed loop."""
    if job.loops is None:
        # Results before schema 13 say the bounds but not the minimums.
        bound = job.bound_s or 0.0
        return Span(0.0, bound, bound)
    loops = job.loops
    iteration_s = None
    if loops.on_cpu:
        iteration_s = likely_iteration_s(_size(job, variant)) * variant.batch_size
    rate_hz = loops.scenario.rate_hz if loops.scenario is not None else None
    return loop_span(loops.warmup, iteration_s) + loop_span(loops.measure, iteration_s, rate_hz)


def _allowances(job: Planned, variant: VariantSettings) -> Span:
    """What a variant without earlier runs takes outside its loops, compile apart."""
    size = _size(job, variant)
    conversion = CONVERSION.span(size) if _converted(variant) else NONE
    return FIRST_CALLS.span(size) + conversion


def _compiles(job: Planned, compiled: int) -> Span:
    """`compiled` variants' compiles: the first in each pod with a cold cache (at most one a
    pod, so the most is held wherever the compiled variants are), the others warm."""
    first = min(compiled, job.pods)
    return FIRST_COMPILE.span(None).times(first) + LATER_COMPILE.span(None).times(compiled - first)


def estimate(job: Planned, history: History) -> Estimate | None:
    """`job`'s pod time from `history`; None where a variant has no earlier run and the
    bounds are unknown."""
    settings = [(job.target, variant.describe()) for variant in job.variants]
    known = [history.variants[key] for key in settings if key in history.variants]
    new = [v for v, key in zip(job.variants, settings, strict=True) if key not in history.variants]
    if new and job.bound_s is None and job.loops is None:
        return None
    allocated = sum(past.source == "allocated" for past in known)
    # An allocation holds its share of its pod's start-up and loads; the other variants'
    # share of them is added.
    unallocated = (len(job.variants) - allocated) / len(job.variants) if job.variants else 1.0
    startup = history.startup.get(job.target)
    recorded_loads = [
        history.loads[job.target, model]
        for model in job.loads
        if (job.target, model) in history.loads
    ]
    compiled = sum(map(_compiled, new))
    allowed = sum((_allowances(job, variant) for variant in new), NONE) + _compiles(job, compiled)
    pods = NONE if startup else STARTUP.span(None).times(job.pods)
    for model in job.loads:
        if (job.target, model) not in history.loads:
            pods += LOAD.span(job.sizes.get(model))
    allowed += pods.times(unallocated)
    recorded = sum(recorded_loads) + (startup[0] * job.pods if startup else 0.0)
    total = (
        Span.exactly(sum(past.seconds for past in known) + recorded * unallocated)
        + sum((_loops(job, variant) for variant in new), NONE)
        + allowed
    )
    return Estimate(
        seconds=total.likely_s,
        from_history=len(known),
        low_s=total.low_s,
        high_s=total.high_s,
        allocated=allocated,
        startup_s=startup[0] if startup else None,
        startup_pods=startup[1] if startup else 0,
        loads=len(job.loads),
        loads_known=len(recorded_loads),
        compiled=compiled,
        allowed_s=allowed.likely_s,
        unsized=sum(_size(job, variant) is None for variant in new),
    )


def planned_from(target: str, runs: Iterable[StoredVariant]) -> Planned:
    """A Job as its runs show it, for the report: its variants (as config.json named each),
        its pods (one a run whose pod is unknown), the models each pod loaded, and its bounds
        from any result that says them; its models' sizes from the files the pods loaded (what
    the plan knew of a `file` model within its ConfigMap's limit, of a `url` one within its
    `size`)."""
    variants: list[VariantSettings] = []
    pods: set[str] = set()
    podless = 0
    loads: dict[tuple[str, str], None] = {}
    bounds = set()
    loops: Loops | None = None
    sizes: dict[str, int] = {}
    models: dict[str, str] = {}
    for stored in runs:
        result = stored.result
        ref = stored.variant or (result.variant if result else None)
        if ref is not None:
            variants.append(ref)
        if stored.pod is None:
            podless += 1
        else:
            pods.add(stored.pod)
        if isinstance(result, OkResult) and result.model_sha256:
            loads[stored.pod or str(stored.index), result.model_sha256] = None
            if ref is not None:
                models[ref.model] = result.model_sha256
            if result.timings is not None and result.timings.model is not None:
                sizes[result.model_sha256] = result.timings.model.file_bytes
        if isinstance(result, OkResult) and result.timings and result.timings.bound_s:
            bounds.add(result.timings.bound_s)
        if isinstance(result, OkResult) and loops is None:
            loops = _loops_of(result)
    return Planned(
        target=target,
        variants=tuple(variants),
        pods=len(pods) + podless,
        loads=tuple(model for _, model in loads),
        # A Job's bounds are one (config.json's warmup and measure); any result says them.
        bound_s=max(bounds) if bounds else None,
        loops=loops,
        sizes=sizes,
        models=models,
    )


def _loops_of(result: OkResult) -> Loops | None:
    """The Job's loop rules as a result of it says them (schema 13 on): a Job's are one."""
    if result.timings is None or result.timings.loops is None or result.environment is None:
        return None
    scenario = result.scenario
    return Loops(
        warmup=result.timings.loops.warmup,
        measure=result.timings.loops.measure,
        scenario=(
            ScenarioConfig(rate_hz=scenario.rate_hz, deadline_s=scenario.deadline_ms / 1000)
            if scenario is not None and scenario.kind == "fixed_rate"
            else None
        ),
        on_cpu=result.environment.device == "cpu",
    )
