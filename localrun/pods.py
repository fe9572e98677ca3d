"""A local try's pods, one at a time: each shown as it runs (localrun/display.py), stored the
moment it ends, so that a stop or a crash later loses at most the pod that was running; once
SIGINT or SIGTERM asks to stop (localrun/stop.py), the running pod is ended and no other
starts.

Of a pod that was stopped, the variants it finished are stored; the one it was measuring
(its runner's `terminated` result) and those after it did not run, and are named, not stored
as failures: the next try runs them, reusing what was stored (localrun/reuse.py).
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from collector.workload import ExpectedJob
from contract.records import JobIdentity, StoredVariant
from contract.result import ErrorResult
from contract.variant import VariantRef
from localrun.display import PodDisplay
from localrun.pod import PodPlan
from localrun.record import local_identity, stored_variants
from localrun.reuse import Reuse
from localrun.stop import Stop
from localrun.streams import Watch
from localrun.workflow import Executor, run_pod
from store.database import open_store


@dataclass
class Tried:
    """What a local try's pods left."""

    stored: set[tuple[JobIdentity, int]] = field(default_factory=set)
    """Each variant this try stored: its Job, its index."""
    not_run: list[str] = field(default_factory=list)
    """The variants a stop kept from running (or from finishing), in words."""


def _finished(variant: StoredVariant) -> bool:
    """Whether the pod handed over `variant`'s own result before it was stopped."""
    result = variant.result
    return result is not None and not (
        isinstance(result, ErrorResult) and result.error.type == "terminated"
    )


def _named(index: int, variants: Sequence[VariantRef | None]) -> list[str]:
    return [f"index {index}: {v.describe()}" if v else f"index {index}" for v in variants]


def store_reuses(database: Path, jobs: Sequence[ExpectedJob], reuse: Reuse) -> None:
    """Which earlier local Jobs' runs each Job reuses (none of them runs again)."""
    with open_store(database) as store:
        for expected in jobs:
            identity = local_identity(expected)
            reused = reuse.reused.get(identity.job, {})
            store.add_reuses(
                identity,
                {vid: run.job.job for vid, run in reused.items() if run.job.job != identity.job},
            )


def run_and_store(
    database: Path,
    plans: Sequence[PodPlan],
    jobs: Mapping[str, ExpectedJob],
    reuse: Reuse,
    *,
    executor: Executor,
    stop: Stop,
    display: PodDisplay,
) -> Tried:
    """Run `plans` in turn with `executor`, storing each pod's variants (over any earlier
    local run of them) as it ends, until `stop` is requested."""
    tried = Tried()
    for number, plan in enumerate(plans, start=1):
        expected = jobs[plan.job_name]
        skipped = reuse.reused.get(plan.job_name, {}).keys()
        group = [v for v in expected.group(plan.index) if v.id not in skipped]
        if stop.requested.is_set():
            tried.not_run += _named(plan.index, group or [None])
            continue
        heading = f"  [{number}/{len(plans)}] index {plan.index}"
        display.start(heading, {variant.index: variant.describe() for variant in group})
        watch = Watch(display.line, display.tick, stop.requested, stop.hurry)
        outcome = run_pod(plan, executor, watch)
        variants = stored_variants([outcome], expected, reused=skipped)
        if stop.requested.is_set():
            tried.not_run += [
                name
                for variant in variants
                if not _finished(variant)
                for name in _named(plan.index, [variant.variant])
            ]
            variants = [variant for variant in variants if _finished(variant)]
        if variants:
            identity = local_identity(expected)
            with open_store(database) as store:
                store.add(identity, expected.judged(variants), replace=True)
            tried.stored |= {(identity, variant.index) for variant in variants}
        status = ", ".join(r.status for r in outcome.results) or outcome.problem
        if outcome.results and outcome.run.ended_early:
            status = f"{status} (the pod was {outcome.run.ended_early})"
        display.finish(f"{heading}: {status}")
    return tried
