"""`collector check --scheduled`: missing data is an alert, not silence.

A scheduled workflow (`scheduling.every`, whose runs `benchfleet schedule` starts) must bring
a new result every period. For each workflow with a schedule (schedules/<workflow>.json,
contract.schedule), the newest result, the latest finish of a variant that succeeded (in the
store or results/), must be younger than the period in force plus a grace (by default the
last run's deadline, the time a run may take). Where it is older, or there is none a period
and a grace after the last run's period began, or the last run started has ended with no
result at all (nothing more will come this period), the workflow is overdue, and the check
says what is missing and why, from what it can see:

- the schedule: no run started for the current period, because the last run is not
  recorded (which holds the next back) or because nothing ran `benchfleet schedule`;
- results/: the last run recorded without a result, and why its variants failed;
- dist/ and the cluster: each Job of the workflow that dist/ holds and the cluster lacks is
  not applied by Flux; one whose variants wait is pending (in Kueue's queue,
  unschedulable...); one whose variants failed is failing; one that ended waits for
  `collector gather`.

A finish time is a node's clock's: the newest result counts from when the collector stored it
where that is earlier (StoredRun.result_at), and one still ahead of the check's clock is left
out, its skew said (StoredRun.result_by).
"""

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from collector.status import JobStatus
from collector.workload import ExpectedJob, clusters_with, expected_jobs
from contract.clocks import skew_text
from contract.layout import recorded_jobs, schedule_path
from contract.schedule import ScheduleState, moment_text, period_of, period_text
from store.database import StoredRun

COMMIT_HINT = "is the commit pushed, and is Flux's benchfleet-workloads Kustomization ready?"

Statuses = Callable[[str, Sequence[ExpectedJob]], Sequence[JobStatus]]
"""(cluster, its Jobs of the workflow) -> how the cluster shows them; raises Unseen where it
cannot look (no credentials, another cluster's, an unreachable server)."""


class Unseen(Exception):
    """A cluster the check could not look at, and why: a reason of its own."""


@dataclass(frozen=True)
class Checked:
    """One scheduled workflow's standing at a moment."""

    state: ScheduleState
    last_result: datetime | None
    due_by: datetime
    """When a result newer than `last_result` is due."""
    late: bool
    """The check's clock is past `due_by`."""
    reasons: tuple[str, ...]
    """Why the data is missing, in words (none when it is not)."""
    ended_empty: bool = False
    """The last run started has ended with no result: none will come before the next
    period, so the data is missing before `due_by`."""
    clocks: tuple[str, ...] = ()
    """Results left out because their finish lies ahead of the check's clock, in words."""

    @property
    def workflow(self) -> str:
        return self.state.workflow

    @property
    def overdue(self) -> bool:
        """Whether the data is missing: late, or its run ended with no result."""
        return self.late or self.ended_empty


def last_result(runs: Iterable[StoredRun], now: datetime) -> tuple[datetime | None, list[str]]:
    """The latest finish of a variant that succeeded, as of `now`, and a line for each run
    left out because its finish lies ahead of `now` (its node's clock ran ahead)."""
    found, ahead = [], []
    for run in runs:
        at, skew = run.result_by(now)
        if skew is not None:
            ahead.append(
                f"Job {run.job.job} index {run.variant.index}: its finish lies "
                f"{skew_text(skew)} ahead of this check's clock (its node's clock ran ahead): "
                "not counted as a result"
            )
        if at is not None:
            found.append(at)
    return max(found, default=None), ahead


def left_in_dist(root: Path, workflow: str) -> dict[str, list[ExpectedJob]]:
    """The Jobs of `workflow` that dist/ holds and results/ does not record, by cluster."""
    left = {}
    for cluster in clusters_with(root, workflow):
        recorded = set(recorded_jobs(root, workflow, cluster))
        jobs = [job for job in expected_jobs(root, workflow, cluster)
                if job.identity.job not in recorded]  # fmt: skip
        if jobs:
            left[cluster] = jobs
    return left


def _schedule_reasons(
    state: ScheduleState,
    now: datetime,
    left: Sequence[ExpectedJob],
    runs: Sequence[StoredRun],
) -> list[str]:
    """Why no run brings data, from the schedule, the Jobs dist/ holds unrecorded (`left`)
    and the stored runs of the last run."""
    reasons = []
    current = period_of(now, state.every_s)
    if state.period_start < current:
        held = (
            f"run {state.run} is not recorded, which holds run {state.run + 1} back"
            if left
            else "is the scheduled CI job running `benchfleet schedule`?"
        )
        reasons.append(
            f"no run started for the period from {moment_text(current)}: the last, run "
            f"{state.run}, was for the period from {moment_text(state.period_start)}; {held}"
        )
    of_run = _of_run(state, runs)
    if _ended_empty(of_run, left):
        why = Counter(run.variant.reason or run.variant.explanation for run in of_run)
        listed = ", ".join(f"{reason} ({count})" for reason, count in why.most_common(3))
        reasons.append(
            f"run {state.run} is recorded with no result: {len(of_run)} variants failed: {listed}"
        )
    if not left and not of_run:
        reasons.append(
            f"dist/ holds no Job of run {state.run} and nothing of it is stored or recorded: "
            "run `make synth` (or `benchfleet schedule`) and commit"
        )
    return reasons


def _of_run(state: ScheduleState, runs: Iterable[StoredRun]) -> list[StoredRun]:
    """The stored runs of the last run `state` started."""
    return [run for run in runs if run.job.scheduled_run == state.run]


def _ended_empty(of_run: Sequence[StoredRun], left: Sequence[ExpectedJob]) -> bool:
    """Whether the run whose stored runs are `of_run` has ended with no result: dist/ holds
    none of its Jobs unrecorded (`left`), and none of its variants succeeded."""
    return bool(of_run) and not left and not any(r.variant.state == "succeeded" for r in of_run)


def job_reason(cluster: str, status: JobStatus) -> str:
    """What one Job is doing about the missing data, in a line."""
    identity = status.expected.identity
    where = f"{cluster}: Job {identity.job} ({identity.target})"
    if status.job is None:
        return f"{where}: not applied by Flux: the cluster has no such Job ({COMMIT_HINT})"
    total = status.expected.variant_count
    failed = [variant for variant in status.ended.values() if variant.state == "failed"]
    if failed:
        return (
            f"{where}: failing: {len(failed)} of {total} variants failed, the first: "
            f"{failed[0].explanation}"
        )
    waiting = [state for state in status.states if state.phase == "pending"]
    if waiting:
        why = Counter(state.explanation for state in waiting).most_common(1)[0][0]
        return f"{where}: pending: {len(waiting)} of {total} variants wait: {why}"
    if any(state.phase == "running" for state in status.states):
        return f"{where}: running: {len(status.ended)} of {total} variants done"
    return (
        f"{where}: ended, not recorded: run `collector gather --workflow {identity.workflow}`, "
        "then commit results/"
    )


def check_schedule(
    root: Path,
    state: ScheduleState,
    runs: Sequence[StoredRun],
    *,
    now: datetime,
    grace: timedelta | None,
    statuses: Statuses,
) -> Checked:
    """Whether `state`'s workflow brought a result within its period plus `grace` (default
    its last run's deadline) before `now`, and if not why, asking `statuses` about the Jobs
    dist/ still holds."""
    last, ahead = last_result(runs, now)
    every = timedelta(seconds=state.every_s)
    allowed = grace if grace is not None else timedelta(seconds=state.deadline_s)
    due_by = (last or state.period_start) + every + allowed
    left = left_in_dist(root, state.workflow)
    unrecorded = [job for jobs in left.values() for job in jobs]
    ended_empty = _ended_empty(_of_run(state, runs), unrecorded)
    late = now > due_by
    if not late and not ended_empty:
        return Checked(state, last, due_by, late=False, reasons=(), clocks=tuple(ahead))
    reasons = _schedule_reasons(state, now, unrecorded, runs)
    for cluster, jobs in sorted(left.items()):
        try:
            reasons += [job_reason(cluster, status) for status in statuses(cluster, jobs)]
        except Unseen as error:
            reasons.append(f"{cluster}: cannot tell why: {error}")
    return Checked(
        state, last, due_by, late, tuple(reasons), ended_empty=ended_empty, clocks=tuple(ahead)
    )


def never_started(workflow: str, every_s: int, runs: Iterable[StoredRun], now: datetime) -> str:
    """The standing of a workflow whose spec is scheduled but that has no schedule file:
    unknown, never ok."""
    last, _ = last_result(runs, now)
    said = f"the last result finished {moment_text(last)}" if last else "no result yet"
    return (
        f"{workflow}: UNKNOWN: its spec runs it every {period_text(every_s)}, but "
        f"{schedule_path(Path(), workflow).as_posix()} is missing: no run of it was ever "
        "started (is the "
        "scheduled CI job running `benchfleet schedule`?), or the file was deleted; "
        f"{said}"
    )


def standing(checked: Checked) -> str:
    """A workflow's standing in a line."""
    state = checked.state
    last = (
        f"the last result finished {moment_text(checked.last_result)}"
        if checked.last_result
        else "no result yet"
    )
    if not checked.overdue:
        return f"{checked.workflow}: ok: {last}; the next is due by {moment_text(checked.due_by)}"
    if not checked.late:
        return (
            f"{checked.workflow}: MISSING DATA: run {state.run}, for the period from "
            f"{moment_text(state.period_start)}, ended with no result, so none will come "
            f"before the next period; {last}"
        )
    return (
        f"{checked.workflow}: MISSING DATA: {last}, and one was due by "
        f"{moment_text(checked.due_by)} (every {period_text(state.every_s)} plus the grace); "
        f"the last run started is run {state.run}, for the period from "
        f"{moment_text(state.period_start)}"
    )


def checked_json(checked: Checked) -> dict[str, Any]:
    """A workflow's standing for CI to read."""
    return {
        "workflow": checked.workflow,
        "overdue": checked.overdue,
        "ended_empty": checked.ended_empty,
        "last_result": checked.last_result.isoformat() if checked.last_result else None,
        "due_by": checked.due_by.isoformat(),
        "run": checked.state.run,
        "period_start": checked.state.period_start.isoformat(),
        "every_s": checked.state.every_s,
        "reasons": list(checked.reasons),
        "clocks": list(checked.clocks),
    }
