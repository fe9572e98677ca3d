"""`benchfleet schedule`: start the runs of scheduled workflows that are due, as a commit.

This is the one place a clock enters. Synth never reads one: a run is the number in
schedules/<workflow>.json (contract.schedule), hashed into its variants' ids, and this
command starts a run by bumping that number and re-synthesizing, so that the commit holding
the file and the new dist/ is what starts it, and says what will run.

A scheduled workflow's next run starts when both hold:

- a new period has begun since its last run's (periods are aligned to the epoch in UTC);
- its last run is done: synth leaves none of its Jobs in dist/ (each is recorded). A run
  still going is never renamed from under it: bumping the number would rename its Jobs, and
  Flux would prune them with whatever they had measured but not yet handed over (the rule of
  synth.reuse.may_stay, kept). The next run waits, and the command says so.

A scheduled workflow that has never run starts run 1 at once.
"""

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Final

from contract.layout import CLUSTERS, DIST, RESULTS, SCHEDULES
from contract.schedule import (
    ScheduleState,
    moment_text,
    period_of,
    period_text,
    write_schedule,
)
from synth.cache import CACHE_DIR, RenderCache
from synth.checks import target_clusters
from synth.committed import git
from synth.hints import did_you_mean
from synth.identity import identify
from synth.job_assembly import BenchmarkRun
from synth.jobs import cluster_runs
from synth.load import LoadedWorkflow, Specs
from synth.render import render
from synth.write import write_trees

COMMITTED_FOLDERS: Final = (SCHEDULES, DIST, CLUSTERS, RESULTS)
"""What the command's commit holds: the runs started, what synth wrote for them, and the
records gathered since the last commit, which decide what is done."""


class ScheduleChoiceError(ValueError):
    """A workflow named on the command line that is unknown or not scheduled."""


@dataclass(frozen=True)
class Started:
    """A run the command starts, and the Jobs that run it in each cluster."""

    state: ScheduleState
    jobs: tuple[tuple[str, BenchmarkRun], ...]
    """(cluster, Job), in fleet and target order."""


@dataclass(frozen=True)
class Held:
    """A scheduled workflow whose next run does not start now, and why, in words."""

    workflow: str
    why: str


@dataclass(frozen=True)
class Schedule:
    """What the command does: the runs it starts, those it holds back, and the specs with
    the started runs' states (what synth renders)."""

    started: tuple[Started, ...]
    held: tuple[Held, ...]
    specs: Specs


def _jobs(specs: Specs, loaded: LoadedWorkflow) -> list[tuple[str, BenchmarkRun]]:
    """The Jobs synth writes for `loaded` in each of its clusters, as `make synth` would."""
    return [
        (cluster.name, run)
        for cluster in target_clusters(loaded.workflow, specs.fleet)
        for run in cluster_runs(specs, identify(loaded, specs.fleet, cluster, specs.model_files))
    ]


def _chosen(specs: Specs, only: Collection[str]) -> list[LoadedWorkflow]:
    scheduled = [w for w in specs.workflows if w.workflow.scheduling.every is not None]
    known = {w.workflow.id for w in specs.workflows}
    for name in sorted(set(only)):
        if name not in known:
            hint = did_you_mean(name, sorted(known), what="workflows")
            raise ScheduleChoiceError(f"unknown workflow {name!r}; {hint}")
        if name not in {w.workflow.id for w in scheduled}:
            raise ScheduleChoiceError(
                f"workflow {name!r} is not scheduled: its spec has no scheduling.every"
            )
    return [w for w in scheduled if not only or w.workflow.id in only]


def _held_by(loaded: LoadedWorkflow, left: Sequence[tuple[str, BenchmarkRun]]) -> str:
    state = loaded.schedule
    assert state is not None  # a workflow that never ran has nothing left
    listed = ", ".join(f"{cluster}: {run.name}" for cluster, run in left)
    return (
        f"run {state.run} is not recorded yet, {len(left)} of its Jobs are left ({listed}): "
        f"run {state.run + 1} waits for them (`collector gather --workflow "
        f"{loaded.workflow.id}`, then this again)"
    )


def plan_schedule(specs: Specs, now: datetime, only: Collection[str] = ()) -> Schedule:
    """Which scheduled workflows (of `only`, else all) start a run at `now`, and why the
    others do not; raises ScheduleChoiceError for a name in `only` that is not scheduled."""
    started: list[LoadedWorkflow] = []
    held = []
    for loaded in _chosen(specs, only):
        every = loaded.workflow.scheduling.every
        assert every is not None  # _chosen keeps scheduled workflows only
        period = period_of(now, int(every))
        state = loaded.schedule
        if state is not None and state.period_start >= period:
            due = max(state.next_period, period + timedelta(seconds=int(every)))
            held.append(
                Held(
                    loaded.workflow.id,
                    f"not due: run {state.run} started for the period from "
                    f"{moment_text(state.period_start)}; the next is due from {moment_text(due)}",
                )
            )
            continue
        left = _jobs(specs, loaded)
        if left:
            held.append(Held(loaded.workflow.id, _held_by(loaded, left)))
            continue
        new = ScheduleState(
            workflow=loaded.workflow.id,
            run=state.run + 1 if state is not None else 1,
            period_start=period,
            every_s=int(every),
            deadline_s=int(loaded.workflow.scheduling.deadline),
        )
        started.append(replace(loaded, schedule=new))
    names = {w.workflow.id: w for w in started}
    workflows = tuple(names.get(w.workflow.id, w) for w in specs.workflows)
    updated = replace(specs, workflows=workflows)
    return Schedule(
        started=tuple(Started(w.schedule, tuple(_jobs(updated, w))) for w in started if w.schedule),
        held=tuple(held),
        specs=updated,
    )


def start(root: Path, schedule: Schedule) -> list[PurePosixPath]:
    """Write dist/ and clusters/ for the started runs, then their schedule files: a failure
    in between leaves a dist/ that the next synth puts back, never a run number whose Jobs
    were not written. The files that changed."""
    changed = list(write_trees(root, render(schedule.specs, RenderCache(root / CACHE_DIR))))
    for started in schedule.started:
        path = write_schedule(root, started.state)
        changed.append(PurePosixPath(path.relative_to(root).as_posix()))
    return changed


def _variants(run: BenchmarkRun) -> int:
    return len(run.config.variants)


def message(schedule: Schedule, recorded: Sequence[str]) -> str:
    """The commit message: what starts (each run's Jobs and variants per cluster), the
    records it commits, and why each other scheduled workflow starts nothing."""
    runs = [f"{s.state.workflow} run {s.state.run}" for s in schedule.started]
    subject = f"schedule: start {', '.join(runs)}" if runs else "schedule: nothing due"
    if not runs and recorded:
        subject = f"schedule: record {len(recorded)} Job{'s' * (len(recorded) != 1)}; nothing due"
    lines = [subject, ""]
    for started in schedule.started:
        state = started.state
        variants = sum(_variants(run) for _, run in started.jobs)
        lines.append(
            f"{state.workflow} run {state.run}, for the period from "
            f"{moment_text(state.period_start)} (every {period_text(state.every_s)}): "
            f"{variants} variants in "
            f"{len(started.jobs)} Jobs"
        )
        lines += [
            f"  {cluster}: {run.name}: {_variants(run)} variants on {run.config.target}"
            for cluster, run in started.jobs
        ]
    if recorded:
        lines.append(f"Records {len(recorded)} finished Jobs:")
        lines += [f"  {path}" for path in recorded]
    if schedule.held:
        lines.append("Not started:")
        lines += [f"  {held.workflow}: {held.why}" for held in schedule.held]
    return "\n".join(lines) + "\n"


def new_records(root: Path) -> list[str]:
    """The records under results/ that git's HEAD does not hold yet (gathered since the last
    commit), sorted; none without git."""
    listing = git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", RESULTS)
    entries = [entry for entry in listing.decode().split("\0") if entry]
    return sorted(entry[3:] for entry in entries if entry[:2] in ("??", "A "))


def commit(root: Path, text: str) -> str | None:
    """Commit what the command wrote, and the records it read, with `text`; the commit's id,
    or None where nothing changed. Raises synth.committed.GitError."""
    # A folder that neither exists nor is tracked would fail git's pathspec.
    folders = [
        folder
        for folder in COMMITTED_FOLDERS
        if (root / folder).exists() or git(root, "ls-files", "--", folder).strip()
    ]
    git(root, "add", "--all", "--", *folders)
    if not git(root, "diff", "--cached", "--name-only", "--", *folders).strip():
        return None
    git(root, "commit", "--quiet", "--file=-", "--", *folders, stdin=text.encode())
    return git(root, "rev-parse", "HEAD").decode().strip()
