"""Where a target's pods spent their time before, around and in their measurements: each
start-up phase's median and maximum, the share of the pods' wall time that was measurement,
and the runner's peak memory against each model's file.

The pod's own status says when it got its node and started its runner (contract.records'
PodStart, whole seconds); the runner's results say the rest (contract.result's Timings).
Phases are counted where they are paid: a pod's start once per pod, a model's fetch and load
once per model and pod, the rest per variant.
"""

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from contract.records import seconds_between
from contract.result import OkResult, Timings
from store.database import StoredRun

PER_POD: Final = "pod"
PER_LOAD: Final = "model and pod"
PER_VARIANT: Final = "variant"


@dataclass(frozen=True)
class PhaseTime:
    """One phase over a target's pods or variants: how often it was paid, its median and its
    longest, in seconds."""

    phase: str
    per: str
    count: int
    median_s: float
    max_s: float


@dataclass(frozen=True)
class ModelMemory:
    """The runner's peak resident memory in the variants of one model, against its file."""

    model: str
    file_bytes: int | None
    """None where no result of the target says (results of runners before it)."""
    variants: int
    median_peak_rss_bytes: int
    max_peak_rss_bytes: int
    """Each is the pod's high-water mark when the variant ended: in a pod of several
    variants, it holds what those before it held."""
    median_added_bytes: int = 0
    max_added_bytes: int = 0
    """How much each variant raised its pod's high-water mark: its peak over the highest
    before it in its pod (the first in its pod: its whole peak)."""
    after_others: int = 0
    """Of `variants`, those whose pod ran another variant before them."""

    @property
    def max_over_file(self) -> float | None:
        """The highest peak over the file's size: what a memory limit must allow per byte of
        model (a pod running several models holds them all)."""
        return self.max_peak_rss_bytes / self.file_bytes if self.file_bytes else None


@dataclass(frozen=True)
class Startup:
    """One target's start-up in one cluster."""

    cluster: str
    target: str
    pods: int
    phases: tuple[PhaseTime, ...]
    """In the order they happen, those with at least one value."""
    measured_share: float | None
    """The timed loops' seconds over the wall time of the pods whose start and end are
    known (from getting a node to the runner's end); None where none are."""
    memory: tuple[ModelMemory, ...]
    compiled_share: float | None = None
    """The compiles' seconds over the same wall time; None where none are known or no
    variant compiled."""


def _timings(runs: Iterable[StoredRun]) -> list[tuple[OkResult, Timings]]:
    found = []
    for run in runs:
        result = run.variant.result
        if isinstance(result, OkResult) and result.timings is not None:
            found.append((result, result.timings))
    return found


@dataclass
class _Values:
    """Each phase's values as they are gathered, in the order phases happen."""

    by_phase: dict[tuple[str, str], list[float]]

    def add(self, phase: str, per: str, value: float | None) -> None:
        if value is not None:
            self.by_phase[phase, per].append(value)


_PHASES: Final = (
    ("waiting for a node", PER_POD),
    ("pod start: node to runner", PER_POD),
    ("runner start: Python, imports", PER_POD),
    ("model file: download or read", PER_LOAD),
    ("torch.export.load", PER_LOAD),
    ("module preparation", PER_VARIANT),
    ("compile", PER_VARIANT),
    ("of which the runtime's load", PER_VARIANT),
    ("first iteration", PER_VARIANT),
    ("warm-up", PER_VARIANT),
    ("accuracy pass", PER_VARIANT),
    ("measurement", PER_VARIANT),
    ("to first measurement", PER_POD),
    ("pod wall time", PER_POD),
)


def _pod(runs: Sequence[StoredRun], values: _Values) -> tuple[float, float, float] | None:
    """Add one pod's phases to `values`; its measured and compiling seconds and its wall time
    where they are known."""
    start = next((run.variant.pod_start for run in runs if run.variant.pod_start), None)
    finished = next((run.variant.finished_at for run in runs if run.variant.finished_at), None)
    measured = _timings(runs)
    to_runner = start.starting_s if start else None
    values.add("waiting for a node", PER_POD, start.waited_s if start else None)
    values.add("pod start: node to runner", PER_POD, to_runner)
    values.add(
        "runner start: Python, imports",
        PER_POD,
        next((t.process_s for _, t in measured if t.process_s is not None), None),
    )
    loops = [t.measure_start_s for _, t in measured if t.measure_start_s is not None]
    if to_runner is not None and loops:
        values.add("to first measurement", PER_POD, to_runner + min(loops))
    wall = seconds_between(start.scheduled_at if start else None, finished)
    values.add("pod wall time", PER_POD, wall)
    if wall is None or not measured:
        return None
    return (
        sum(t.measure.seconds for _, t in measured),
        sum(t.converting_s or 0.0 for _, t in measured),
        wall,
    )


def _variant(timings: Timings, values: _Values) -> None:
    if timings.model is not None:
        values.add("model file: download or read", PER_LOAD, timings.model.fetch_s)
        values.add("torch.export.load", PER_LOAD, timings.model.load_s)
    if timings.copy_s is not None:
        values.add("module preparation", PER_VARIANT, timings.copy_s + timings.prepare_s)
    values.add("compile", PER_VARIANT, timings.converting_s)
    values.add("of which the runtime's load", PER_VARIANT, timings.runtime_load_s)
    values.add("first iteration", PER_VARIANT, timings.first_iteration_ms / 1000)
    values.add("warm-up", PER_VARIANT, timings.warmup.seconds)
    values.add("accuracy pass", PER_VARIANT, timings.accuracy_s)
    values.add("measurement", PER_VARIANT, timings.measure.seconds)


def _raised(runs: Iterable[StoredRun]) -> dict[int, tuple[int, bool]]:
    """By the id of each result with a peak: how much it raised its pod's high-water mark,
    and whether another variant ran before it in the pod. A mark only grows, so a pod's
    peaks in ascending order are in the order they were read, whatever order its variants
    ran in (rounds interleave them)."""
    pods: dict[tuple[str, str] | int, list[tuple[int, OkResult]]] = defaultdict(list)
    for run in runs:
        result = run.variant.result
        if isinstance(result, OkResult) and result.memory is not None:
            pod = run.variant.pod
            key = (run.job.job, pod) if pod is not None else id(result)
            pods[key].append((result.memory.peak_rss_bytes, result))
    raised = {}
    for peaks in pods.values():
        peaks.sort(key=lambda peak: peak[0])
        before = 0
        for order, (peak, result) in enumerate(peaks):
            raised[id(result)] = (peak - before, order > 0)
            before = peak
    return raised


def _memory(
    timed: Sequence[tuple[OkResult, Timings]], raised: dict[int, tuple[int, bool]]
) -> tuple[ModelMemory, ...]:
    files: dict[str, int] = {}
    peaks: dict[str, list[tuple[int, int, bool]]] = defaultdict(list)
    sizes: dict[str, int] = {}
    for result, timings in timed:
        if result.model_sha256 and timings.model is not None:
            files[result.model_sha256] = timings.model.file_bytes
    for result, _ in timed:
        if result.variant is None or result.memory is None:
            continue
        added, after = raised[id(result)]
        peaks[result.variant.model].append((result.memory.peak_rss_bytes, added, after))
        if result.model_sha256 in files:
            sizes[result.variant.model] = files[result.model_sha256]
    return tuple(
        ModelMemory(
            model=model,
            file_bytes=sizes.get(model),
            variants=len(values),
            median_peak_rss_bytes=round(statistics.median(peak for peak, _, _ in values)),
            max_peak_rss_bytes=max(peak for peak, _, _ in values),
            median_added_bytes=round(statistics.median(added for _, added, _ in values)),
            max_added_bytes=max(added for _, added, _ in values),
            after_others=sum(after for _, _, after in values),
        )
        for model, values in sorted(peaks.items())
    )


def startup(
    runs: Iterable[StoredRun], target_of: Callable[[StoredRun], str]
) -> tuple[Startup, ...]:
    """The start-up of every target's pods among `runs` (the reported ones), by cluster and
    target."""
    by_target: dict[tuple[str, str], list[StoredRun]] = defaultdict(list)
    for run in runs:
        by_target[run.job.cluster, target_of(run)].append(run)
    return tuple(
        _target(cluster, target, by_target[cluster, target])
        for cluster, target in sorted(by_target)
    )


def _target(cluster: str, target: str, runs: Sequence[StoredRun]) -> Startup:
    values = _Values(defaultdict(list))
    pods: dict[tuple[str, str], list[StoredRun]] = defaultdict(list)
    for run in runs:
        if run.variant.pod is not None:
            pods[run.job.job, run.variant.pod].append(run)
    shares = [share for pod in pods.values() if (share := _pod(pod, values)) is not None]
    timed = _timings(runs)
    for _, timings in timed:
        _variant(timings, values)
    wall = sum(whole for _, _, whole in shares)
    compiled = sum(seconds for _, seconds, _ in shares)
    return Startup(
        cluster=cluster,
        target=target,
        pods=len(pods),
        phases=tuple(
            PhaseTime(phase, per, len(found), statistics.median(found), max(found))
            for phase, per in _PHASES
            if (found := values.by_phase[phase, per])
        ),
        measured_share=sum(measured for measured, _, _ in shares) / wall if wall else None,
        compiled_share=compiled / wall if wall and compiled else None,
        memory=_memory(timed, _raised(runs)),
    )
