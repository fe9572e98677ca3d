"""What a Job's pods will take: `make plan`'s estimate (synth/plan.py), which the report
recomputes once the Job ran to say how far off it was (report/estimates.py). Both compute it
here, the report with the runs the plan could have read (those finished before the Job's
first pod was created), so the report judges the number the plan gave, not a better one.

A variant that ran before (the same setting on the same target, succeeded) goes by what it
took then; every other part of a pod goes by its measurement bounds and a stated allowance
per kind of work outside them (below), so that a first run's estimate counts compile,
conversion and first calls too, not only the timed loops.
"""

import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, Literal

from contract.records import StoredVariant
from contract.result import OkResult, Timings
from contract.variant import Precision, Quantization, Runtime, VariantSettings

# The allowances: the most each kind of work took in the real-size sweep (tiny models to a
# BERT-base of 440 MB; fp32 and bf16, none and int8-dynamic, eager and inductor) recorded
# twice on a 2-core host under a load of 3-6 (tests/data/estimates/, docs/synth.md), rounded
# up. A larger model or a busier node takes longer: a first run's estimate is a guide, the
# second run's goes by the first.
COMPILE_ALLOWANCE_S: Final = 200.0
"""A compiled variant's `torch.compile` and compiling call (`timings.compile_s`): 70-194 s as
a pod's first compile (a cold inductor cache builds its precompiled header: tiny-mlp 70-79 s,
BERT-base 69-83 s, ResNet-50 84-194 s), 11-128 s for a later one. Not scaled by the model's
size, which those numbers do not follow."""
CONVERSION_ALLOWANCE_S: Final = 15.0
"""A variant that casts or quantizes: copying its module and applying its precision and
quantization (`copy_s`, `prepare_s`): at most 14 s (BERT-base int8-dynamic)."""
FIRST_CALLS_ALLOWANCE_S: Final = 20.0
"""Every variant's cold first iteration and accuracy pass, outside the loops: at most 16 s
(BERT-base int8-dynamic's first call)."""
STARTUP_ALLOWANCE_S: Final = 30.0
"""A pod's start-up: the kubelet's part (sandbox, image pull) and the runner process's
(Python, torch's imports: 5-10 s). A cold node pulling the runner image takes longer."""
LOAD_ALLOWANCE_S: Final = 30.0
"""A model's fetch and `torch.export.load`, once per pod and model: at most 21 s
(BERT-base, 440 MB, from an https server)."""

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


@dataclass(frozen=True)
class Estimate:
    """A Job's pod time: each variant with a recorded success of the same setting on the
    same target counts its median time, every other one its bounds' maximum and the
    allowances of its kind. A variant's allocated time holds its share of its pod's start-up
    and model loads; for the rest, each pod adds the median start-up of the target's earlier
    pods (else STARTUP_ALLOWANCE_S) and each model it loads the median load of that model
    there (else LOAD_ALLOWANCE_S), in the share of the Job's variants not estimated by
    allocations."""

    seconds: float
    from_history: int
    """How many of the Job's variants had earlier runs to go by."""
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
    """Of the variants without earlier runs, how many compile (COMPILE_ALLOWANCE_S each)."""
    allowed_s: float = 0.0
    """Of `seconds`, what the allowances give: compile, conversion and first calls of the
    variants without earlier runs, and the start-ups and loads no earlier pod recorded."""


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


def _compiled(variant: VariantSettings) -> bool:
    return variant.runtime != Runtime.EAGER


def _allowance(variant: VariantSettings) -> float:
    """What a variant without earlier runs takes outside its measurement bounds: its module
    is a copy, cast and quantized, unless it runs the program's own fp32."""
    converted = variant.precision != Precision.FP32 or variant.quantization != Quantization.NONE
    return (
        FIRST_CALLS_ALLOWANCE_S
        + CONVERSION_ALLOWANCE_S * converted
        + COMPILE_ALLOWANCE_S * _compiled(variant)
    )


def estimate(job: Planned, history: History) -> Estimate | None:
    """`job`'s pod time from `history`; None where a variant has no earlier run and the
    bounds are unknown."""
    settings = [(job.target, variant.describe()) for variant in job.variants]
    known = [history.variants[key] for key in settings if key in history.variants]
    new = [v for v, key in zip(job.variants, settings, strict=True) if key not in history.variants]
    if new and job.bound_s is None:
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
    allowed_pods = (0.0 if startup else STARTUP_ALLOWANCE_S * job.pods) + LOAD_ALLOWANCE_S * (
        len(job.loads) - len(recorded_loads)
    )
    allowed = sum(map(_allowance, new)) + allowed_pods * unallocated
    seconds = sum(past.seconds for past in known) + (job.bound_s or 0.0) * len(new) + allowed
    seconds += (sum(recorded_loads) + (startup[0] * job.pods if startup else 0.0)) * unallocated
    return Estimate(
        seconds=seconds,
        from_history=len(known),
        allocated=allocated,
        startup_s=startup[0] if startup else None,
        startup_pods=startup[1] if startup else 0,
        loads=len(job.loads),
        loads_known=len(recorded_loads),
        compiled=sum(map(_compiled, new)),
        allowed_s=allowed,
    )


def planned_from(target: str, runs: Iterable[StoredVariant]) -> Planned:
    """A Job as its runs show it, for the report: its variants (as config.json named each),
    its pods (one a run whose pod is unknown), the models each pod loaded, and its bounds
    from any result that says them."""
    variants: list[VariantSettings] = []
    pods: set[str] = set()
    podless = 0
    loads: dict[tuple[str, str], None] = {}
    bounds = set()
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
        if isinstance(result, OkResult) and result.timings and result.timings.bound_s:
            bounds.add(result.timings.bound_s)
    return Planned(
        target=target,
        variants=tuple(variants),
        pods=len(pods) + podless,
        loads=tuple(model for _, model in loads),
        # A Job's bounds are one (config.json's warmup and measure); any result says them.
        bound_s=max(bounds) if bounds else None,
    )
