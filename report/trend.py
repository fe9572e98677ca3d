"""History and regressions: each variant's p50 over a workflow's runs, the noise the history
itself shows, and where a change beyond that noise began.

A run is one scheduled run (`scheduling.every`, `run N`), or for a workflow that is not
scheduled one spec revision with its image (each Job made from them; repeats are one run,
their median its number, as in the report). Runs are ordered by their number, and
revisions before any scheduled run by git's history (report.model.job_age): never by
a node's clock.

The rule, TorchBench's made noise-aware. TorchBench runs a model 15 times and calls it
stable when the spread of those runs' medians, max/min - 1 (its "max delta"), is under 7 %;
its nightly detector then calls a change beyond 7 % a regression, and the unstable models
are left out. Here the history of each variant is its own stableness run:

- the reference of run k is the up to WINDOW usable runs before it (measured, unflagged);
  its median m and its spread s = max/min - 1;
- run k is a regression when its p50 > m x (1 + t), an improvement when its p50 < m / (1 + t),
  with t = max(floor, s): a flat floor (the report's threshold, 5 %) for a quiet variant,
  and the spread the variant showed on its own for a noisy one, rather than leaving it out;
- with fewer than MIN_HISTORY usable runs before it, nothing is decided;
- a flagged run (noisy, contended, throttled, stopped early) decides nothing and joins no
  reference.

A change stands where some run k among the newest WINDOW usable runs has every usable run
from it to the newest beyond, in one direction, the reference of the runs before k; the
earliest such k is where it began. So a regression that lasts is judged against the runs
before it, not absorbed into a reference its own runs widen, until it is WINDOW runs old:
then it is the new normal. The report names the run it began at and what changed between
it and the run before it: the spec, the image, torch, the device, the stack. `bench/trend_noise.py`
measures the rule's false-alarm rate on recorded runs (docs/decisions/report.md).

A run on another stack than the run before it (contract/fingerprint.py: a new driver, CUDA
or library build, MIG profile, power limit, CPU) starts the history afresh: it is marked with
the fields that changed, judged against nothing before it, so a driver update is never
called a regression (`across_stacks` keeps one history through it, as before the
fingerprint). A run without a fingerprint (a runner before it) continues whatever stack was
before it.
A fixed-rate variant also "started missing its deadline" where its newest usable runs are
not held (report/control.py) and the usable run before them held: the change is named at
the first of them, whatever its p50 did (a model can get no slower at its median and still
lose its tail).
"""

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal

from contract.fingerprint import Fingerprint, stack_differences
from contract.instant import instant_text
from contract.result import OkResult
from report.control import Held, judge
from report.model import (
    DEFAULT_REGRESSION_THRESHOLD,
    FLAGS,
    JobAge,
    JobId,
    Notes,
    VariantKey,
    job_age,
    job_id,
    key_of,
    measurement_of,
)
from store.database import StoredRun

WINDOW: Final = 10
"""Runs in a reference: enough for a spread to mean something (the expected range of 10
draws is 3.1 standard deviations of normal noise), few enough to follow a slow drift."""
MIN_HISTORY: Final = 5
"""Usable runs a decision needs before it: with fewer, the spread of the history says
little about its noise (bench/trend_noise.py measures the false alarms of fewer)."""

Verdict = Literal["regression", "improvement", "within noise", "not enough history", "flagged"]


_NO_AGE: Final[JobAge] = (False, 0, 0, "", "", "")


@dataclass(frozen=True)
class RunId:
    """One run of the workflow: its place on the trend's axis."""

    order: tuple[int, int, JobAge]
    """Scheduled runs by number, after every unscheduled revision (those ordered by git)."""
    label: str
    """`run 3 (2026-12-08)`, or `revision 1a2b3c4d` (with its image where revisions share
    a spec)."""
    scheduled_run: int | None
    scheduled_at: str | None


@dataclass(frozen=True)
class RunPoint:
    """One variant's number in one run: the median of its repeats in that run."""

    run: RunId
    p50_ms: float
    """Per iteration (per batch), as the report's."""
    repeats: tuple[float, ...]
    """Each repeat's p50, in repeat order."""
    flags: tuple[str, ...]
    """The runner's validity flags of any repeat, as the report words them."""
    jobs: tuple[str, ...]
    spec_file: str | None
    spec_sha256: str | None
    image: str | None
    torch: str | None
    device_name: str | None
    fingerprint: Fingerprint | None = None
    """The stack of its first repeat; None where its result has none."""
    held: Held | None = None
    """A fixed-rate run's answer (the worst of its repeats'); None for the closed loop."""

    @property
    def usable(self) -> bool:
        return not self.flags


@dataclass(frozen=True)
class Reference:
    """The usable runs a point is judged against, and the noise they show."""

    runs: tuple[RunId, ...]
    median_ms: float
    low_ms: float
    high_ms: float

    @property
    def spread(self) -> float:
        """max/min - 1 of the runs' p50s: TorchBench's max delta."""
        return self.high_ms / self.low_ms - 1

    def threshold(self, floor: float) -> float:
        """How far from the median a run must lie to be a change."""
        return max(floor, self.spread)


@dataclass(frozen=True)
class Point:
    """A run of a variant, the reference before it, and what the rule says of it."""

    run: RunPoint
    reference: Reference | None
    """None before the variant's second usable run: no spread to show yet."""
    verdict: Verdict
    stack: tuple[str, ...] = ()
    """Where this run is the first on another stack: how it differs from the run before,
    field by field (its history starts here, unless across stacks)."""


@dataclass(frozen=True)
class Change:
    """A regression or improvement standing at the newest usable run, and where it began."""

    verdict: Literal["regression", "improvement"]
    first: RunPoint
    """The first run where it appeared."""
    before: RunPoint
    """The last usable run before it."""
    reference: Reference
    """What every usable run from `first` on lies beyond."""
    ratio: float
    """The median p50 of the usable runs from `first` on over the reference's median."""
    threshold: float
    differences: tuple[str, ...]
    """What changed between `before` and `first` (spec, image, torch, device), in words."""


@dataclass(frozen=True)
class DeadlineChange:
    """A fixed-rate variant that started missing its deadline: not held since `first`."""

    first: RunPoint
    """The first of the newest usable runs that were not held."""
    before: RunPoint
    """The last usable run that held."""


@dataclass(frozen=True)
class VariantTrend:
    """One variant (cluster, target and settings) over the workflow's runs."""

    key: VariantKey
    points: tuple[Point, ...]
    """In run order."""
    verdict: Verdict
    """The newest usable run's ("flagged" where no run is usable): where a change stands,
    its verdict, each of its runs judged against the runs before it began."""
    change: Change | None
    deadline: DeadlineChange | None = None
    """Where it started missing its deadline, where it did."""


@dataclass(frozen=True)
class Trend:
    """Everything the trend's renderers show; built by `build_trend`."""

    workflow: str
    runs: tuple[RunId, ...]
    """Every run of the workflow, in order."""
    variants: tuple[VariantTrend, ...]
    """Sorted by key."""
    window: int
    min_history: int
    floor: float

    def with_verdict(self, verdict: Verdict) -> tuple[VariantTrend, ...]:
        return tuple(variant for variant in self.variants if variant.verdict == verdict)

    @property
    def missing_deadlines(self) -> tuple[VariantTrend, ...]:
        """The variants that started missing their deadline."""
        return tuple(variant for variant in self.variants if variant.deadline is not None)


def _run_ids(
    by_job: dict[JobId, list[StoredRun]], job_ages: dict[JobId, JobAge]
) -> dict[JobId, RunId]:
    """Each Job's run: its scheduled run, else its spec revision and image."""
    ages: dict[tuple[str, str], list[JobAge]] = defaultdict(list)
    for where, job_runs in by_job.items():
        job = job_runs[0].job
        if job.scheduled_run is None:
            ages[job.spec_sha256 or "", job.image or ""].append(job_ages[where])
    images: dict[str, set[str]] = defaultdict(set)
    for sha, image in ages:
        images[sha].add(image)
    ids = {}
    for where, job_runs in by_job.items():
        job = job_runs[0].job
        if job.scheduled_run is not None:
            at = instant_text(job.scheduled_at) if job.scheduled_at else None
            label = f"run {job.scheduled_run}" + (f" ({at[:10]})" if at else "")
            order = (1, job.scheduled_run, _NO_AGE)
            ids[where] = RunId(order, label, job.scheduled_run, at)
            continue
        sha, image = job.spec_sha256 or "", job.image or ""
        label = f"revision {sha[:8] or 'unknown'}"
        if len(images[sha]) > 1:
            label += f", image {image}"
        ids[where] = RunId((0, 0, max(ages[sha, image])), label, None, None)
    return ids


def _flags(result: OkResult) -> tuple[str, ...]:
    validity = result.validity
    return tuple(words for flag, words in FLAGS.items() if validity and getattr(validity, flag))


_WORST_FIRST: Final[tuple[Held, ...]] = ("not held", "undecided", "held")


def _held(results: Sequence[OkResult]) -> Held | None:
    """The worst answer of a run's fixed-rate repeats; None for the closed loop."""
    answers = set()
    for result in results:
        if result.scenario is None:
            return None
        validity = result.validity
        flags = [flag for flag in FLAGS if validity and getattr(validity, flag)]
        answers.add(judge(result.scenario, result.reliable_p99_9_ms, flags)[0])
    return next((held for held in _WORST_FIRST if held in answers), None)


def _point(run_id: RunId, runs: Sequence[tuple[int, StoredRun, OkResult]]) -> RunPoint:
    """One run's repeats of a variant as one point (by repeat)."""
    ordered = sorted(runs, key=lambda item: item[0])
    p50s = tuple(result.latency.p50_ms for _, _, result in ordered)
    _, first, result = ordered[0]
    environment = result.environment
    return RunPoint(
        run=run_id,
        p50_ms=statistics.median(p50s),
        repeats=p50s,
        flags=tuple(dict.fromkeys(flag for _, _, r in ordered for flag in _flags(r))),
        jobs=tuple(dict.fromkeys(run.job.job for _, run, _ in ordered)),
        spec_file=first.job.spec_file,
        spec_sha256=first.job.spec_sha256,
        image=first.job.image or (environment.image if environment else None),
        torch=environment.torch if environment else None,
        device_name=environment.device_name if environment else None,
        fingerprint=result.fingerprint,
        held=_held([result for _, _, result in ordered]),
    )


def _points(runs: Iterable[StoredRun], notes: Notes) -> dict[VariantKey, list[RunPoint]]:
    """Every measured variant's points, in run order. Within a run and repeat, the newest
    Job's measurement counts (a spec edited mid-run is a new Job of the same run)."""
    by_job: dict[JobId, list[StoredRun]] = defaultdict(list)
    for run in runs:
        by_job[job_id(run)].append(run)
    ages = {where: job_age(job_runs, notes) for where, job_runs in by_job.items()}
    ids = _run_ids(by_job, ages)
    newest: dict[tuple[VariantKey, RunId, int], tuple[StoredRun, OkResult]] = {}
    for where, job_runs in by_job.items():
        for run in job_runs:
            measured = measurement_of(run)
            if measured is None:
                continue
            result, ref = measured
            slot = (key_of(run, ref), ids[where], run.job.run)
            held = newest.get(slot)
            if held is None or ages[job_id(held[0])] < ages[where]:
                newest[slot] = (run, result)
    grouped: dict[tuple[VariantKey, RunId], list[tuple[int, StoredRun, OkResult]]] = defaultdict(
        list
    )
    for (key, run_id, repeat), (run, result) in newest.items():
        grouped[key, run_id].append((repeat, run, result))
    points: dict[VariantKey, list[RunPoint]] = defaultdict(list)
    for (key, run_id), repeats in grouped.items():
        points[key].append(_point(run_id, repeats))
    for series in points.values():
        series.sort(key=lambda point: point.run.order)
    return points


def _reference(usable: Sequence[RunPoint], window: int) -> Reference | None:
    """The reference made of the last `window` of `usable` (None with fewer than two)."""
    chosen = usable[-window:]
    if len(chosen) < 2:
        return None
    p50s = [point.p50_ms for point in chosen]
    return Reference(
        runs=tuple(point.run for point in chosen),
        median_ms=statistics.median(p50s),
        low_ms=min(p50s),
        high_ms=max(p50s),
    )


def _beyond(point: RunPoint, reference: Reference, floor: float) -> Verdict:
    threshold = reference.threshold(floor)
    if point.p50_ms > reference.median_ms * (1 + threshold):
        return "regression"
    if point.p50_ms < reference.median_ms / (1 + threshold):
        return "improvement"
    return "within noise"


@dataclass(frozen=True)
class Rule:
    """The rule's settings: see the module's docstring."""

    window: int = WINDOW
    min_history: int = MIN_HISTORY
    floor: float = DEFAULT_REGRESSION_THRESHOLD

    def judge(self, history: Sequence[RunPoint], point: RunPoint) -> Point:
        """`point` against the usable runs of `history` (the runs before it)."""
        usable = [earlier for earlier in history if earlier.usable]
        reference = _reference(usable, self.window)
        if not point.usable:
            verdict: Verdict = "flagged"
        elif reference is None or len(usable) < self.min_history:
            verdict = "not enough history"
        else:
            verdict = _beyond(point, reference, self.floor)
        return Point(point, reference, verdict)

    def change(self, series: Sequence[RunPoint]) -> Change | None:
        """The change standing at the newest usable run of `series`: from the earliest of the
        last `window` usable runs from which every usable run lies beyond, in one direction,
        the reference of the runs before it. Older than that, it is the new normal."""
        usable = [point for point in series if point.usable]
        for k in range(max(self.min_history, len(usable) - self.window), len(usable)):
            reference = _reference(usable[:k], self.window)
            assert reference is not None  # k >= min_history >= 2
            verdicts = {_beyond(point, reference, self.floor) for point in usable[k:]}
            if verdicts not in ({"regression"}, {"improvement"}):
                continue
            since = [point.p50_ms for point in usable[k:]]
            return Change(
                verdict="regression" if verdicts == {"regression"} else "improvement",
                first=usable[k],
                before=usable[k - 1],
                reference=reference,
                ratio=statistics.median(since) / reference.median_ms,
                threshold=reference.threshold(self.floor),
                differences=(),
            )
        return None


def deadline_change(series: Sequence[RunPoint]) -> DeadlineChange | None:
    """Where the newest usable runs of `series` stopped holding the deadline: the first of
    them not held, after a usable run that held. None where the newest held (or could not
    be decided), or where none ever held: that variant never met it."""
    usable = [point for point in series if point.usable and point.held is not None]
    first = len(usable)
    while first and usable[first - 1].held == "not held":
        first -= 1
    if first == len(usable) or first == 0 or usable[first - 1].held != "held":
        return None
    return DeadlineChange(first=usable[first], before=usable[first - 1])


def differences(before: RunPoint, after: RunPoint, notes: Notes) -> tuple[str, ...]:
    """What changed between two runs, in words: the spec (with the commits holding each
    version, where git has them), the image, torch and the device."""
    found = []
    if before.spec_sha256 != after.spec_sha256:
        found.append(f"spec {_spec(before, notes)} -> {_spec(after, notes)}")
    for name, old, new in (
        ("image", before.image, after.image),
        ("torch", before.torch, after.torch),
        ("device", before.device_name, after.device_name),
    ):
        if old != new:
            found.append(f"{name} {old or 'unknown'} -> {new or 'unknown'}")
    found.extend(stack_differences(before.fingerprint, after.fingerprint))
    return tuple(found)


def _stack_starts(series: Sequence[RunPoint]) -> list[tuple[int, tuple[str, ...]]]:
    """For each point of `series`, where its stack's history starts, and how its stack
    differs from the one before where it is that start."""
    starts: list[tuple[int, tuple[str, ...]]] = []
    start, known = 0, None
    for k, point in enumerate(series):
        changed = stack_differences(known, point.fingerprint)
        if changed:
            start = k
        known = point.fingerprint or known
        starts.append((start, changed))
    return starts


def _spec(point: RunPoint, notes: Notes) -> str:
    sha = (point.spec_sha256 or "unknown")[:12]
    revision = notes.spec_revisions.get((point.spec_file or "", point.spec_sha256 or ""))
    if revision is None:
        return f"sha256 {sha}"
    where = f"commit {revision.commit[:12]}" if revision.commit else "the checkout, not committed"
    return f"sha256 {sha} ({where})"


def build_trend(
    workflow: str,
    runs: Iterable[StoredRun],
    notes: Notes,
    rule: Rule | None = None,
    *,
    across_stacks: bool = False,
) -> Trend:
    """Every measured variant of `runs` over the workflow's runs, judged by `rule`: each run
    against the runs of its own stack before it, unless `across_stacks`."""
    rule = rule or Rule()
    points = _points(runs, notes)
    variants = []
    for key in sorted(points):
        series = points[key]
        starts = _stack_starts(series)
        judged = []
        for k, point in enumerate(series):
            start, changed = starts[k]
            judgement = rule.judge(series[0 if across_stacks else start : k], point)
            judged.append(replace(judgement, stack=changed))
        change = rule.change(series if across_stacks else series[starts[-1][0] :])
        if change is not None:
            change = replace(change, differences=differences(change.before, change.first, notes))
            # A change that lasts is judged against the runs before it began: each of its
            # runs shows the same reference, not one its own earlier runs have widened.
            judged = [
                replace(point, reference=change.reference, verdict=change.verdict)
                if point.run.usable and point.run.run.order >= change.first.run.order
                else point
                for point in judged
            ]
        usable = [point for point in judged if point.run.usable]
        variants.append(
            VariantTrend(
                key=key,
                points=tuple(judged),
                verdict=usable[-1].verdict if usable else "flagged",
                change=change,
                deadline=deadline_change(series),
            )
        )
    every_run = {point.run.run for variant in variants for point in variant.points}
    return Trend(
        workflow=workflow,
        runs=tuple(sorted(every_run, key=lambda run: run.order)),
        variants=tuple(variants),
        window=rule.window,
        min_history=rule.min_history,
        floor=rule.floor,
    )
