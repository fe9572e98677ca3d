"""How far `make plan`'s estimate of each reported Job was from what its pods took.

The plan's estimate is not recorded anywhere: it is recomputed here by the plan's own code
(contract/estimate.py) from what the plan had. The Job's shape (its variants, pods, model
loads and measurement bounds) comes from its runs and their results; the earlier runs are
those of the workflow's other Jobs in the same cluster that finished before this Job's
first pod was created (the cluster's clocks), which is what results/ could hold when the
plan was made. A result of a runner before schema 6 does not say its bounds: a Job with a
variant no earlier run estimates cannot then be recomputed, and the report says so.
"""

import statistics
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from contract.estimate import Estimate, estimate, history_of, planned_from
from contract.records import seconds_between
from store.database import StoredRun

TookBy = Literal["allocated", "pods"]


@dataclass(frozen=True)
class PlanCheck:
    """One reported Job: what the plan estimated, and what its pods took."""

    cluster: str
    target: str
    job: str
    variants: int
    estimate: Estimate | None
    """None where it cannot be recomputed (bounds unknown: results before schema 6)."""
    earlier_jobs: int
    """How many earlier Jobs' runs the estimate went by."""
    took_s: float | None
    """The Job's pod time: its variants' allocated time where gather recorded every one,
    else its pods' wall time (getting a node to the runner's end); None where neither is
    known for every pod."""
    took_by: TookBy | None

    @property
    def ratio(self) -> float | None:
        """What the pods took over the estimate: above 1, the plan under-estimated."""
        if self.estimate is None or self.took_s is None or not self.estimate.seconds:
            return None
        return self.took_s / self.estimate.seconds


JobKey = tuple[str, str, str]
"""cluster, namespace, Job name."""


def _key(run: StoredRun) -> JobKey:
    return (run.job.cluster, run.job.namespace, run.job.job)


def _created(runs: Iterable[StoredRun]) -> datetime | None:
    """When the Job's first pod was created (else got a node): when it had started."""
    starts = [
        start.created_at or start.scheduled_at
        for run in runs
        if (start := run.variant.pod_start) is not None
    ]
    return min((start for start in starts if start is not None), default=None)


def _took(runs: Sequence[StoredRun]) -> tuple[float | None, TookBy | None]:
    allocated = [run.variant.allocation.seconds if run.variant.allocation else None for run in runs]
    if all(seconds is not None for seconds in allocated):
        return sum(seconds for seconds in allocated if seconds is not None), "allocated"
    walls: dict[str, list[StoredRun]] = defaultdict(list)
    for run in runs:
        if run.variant.pod is None:
            return None, None
        walls[run.variant.pod].append(run)
    seconds = []
    for pod in walls.values():
        start = next((r.variant.pod_start for r in pod if r.variant.pod_start), None)
        ends = [r.variant.finished_at for r in pod if r.variant.finished_at]
        wall = seconds_between(start.scheduled_at if start else None, max(ends, default=None))
        if wall is None:
            return None, None
        seconds.append(wall)
    return sum(seconds), "pods"


def plan_checks(
    runs: Sequence[StoredRun],
    reported: Collection[JobKey],
    target_of: Callable[[StoredRun], str],
) -> tuple[PlanCheck, ...]:
    """The plan's estimate against what the pods took, for each Job in `reported` (by
    cluster and Job name), from `runs` (every run of the workflow, earlier Jobs' too)."""
    by_job: dict[JobKey, list[StoredRun]] = defaultdict(list)
    for run in runs:
        by_job[_key(run)].append(run)
    checks = []
    for key in sorted(set(reported) & by_job.keys()):
        own = by_job[key]
        created = _created(own)
        earlier = [
            run
            for other, other_runs in by_job.items()
            if other != key and other[0] == key[0]
            for run in other_runs
            if run.job.workflow == own[0].job.workflow
            and created is not None
            and run.variant.finished_at is not None
            and run.variant.finished_at < created
        ]
        target = statistics.mode(map(target_of, own))
        took, took_by = _took(own)
        planned = planned_from(target, (run.variant for run in own))
        checks.append(
            PlanCheck(
                cluster=key[0],
                target=target,
                job=key[2],
                variants=len(planned.variants),
                estimate=estimate(
                    planned,
                    history_of((target_of(run), run.variant) for run in earlier),
                ),
                earlier_jobs=len({_key(run) for run in earlier}),
                took_s=took,
                took_by=took_by,
            )
        )
    return tuple(checks)
