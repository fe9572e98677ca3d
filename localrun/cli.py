"""`localrun [--root R] [--db D] run WORKFLOW`: run a synthesized workflow's pods here and
report them.

Reads dist/<cluster>/workloads/WORKFLOW.yaml, the file Flux would apply, and runs each Job
index as a process through the runner, with the ConfigMaps' files and the pod's env as the
kubelet would give them. The results go into the collector's database as cluster `local`
and are reported as `collector report` reports a cluster's. Try a spec this way before
opening a pull request. `python -m localrun WORKFLOW` does the same. Variants an earlier
local try measured are reused (localrun/reuse.py) unless `--again` says otherwise.
"""

import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import click

from collector.workload import ExpectedJob, WorkloadError, read_expected
from contract.layout import LOCAL_CLUSTER, cluster_of, workload_files
from contract.options import database_option, root_option, version_option
from contract.text import plural
from localrun.display import PodDisplay
from localrun.estimate import estimate_lines
from localrun.image_files import ImageFileError, image_files, parse_image_files
from localrun.images import ImagePullError, ImageStore
from localrun.pod import PodPlan, PodRun, PodSpecError
from localrun.pods import Tried, run_and_store, store_reuses
from localrun.process import run_process
from localrun.record import local_identity
from localrun.reuse import Reuse, earlier_runs, plan_reuse
from localrun.stop import Stop, Stopped
from localrun.streams import Watch
from localrun.workflow import Executor, pod_plans, workload_file
from report.model import Notes, build_report
from report.table import format_finished
from report.text import to_text
from store.database import StoredRun, open_store

POD_TIMEOUT_S = 1800.0

CLUSTER_OPTION = click.option(
    "--cluster", help="Which cluster's manifests to run [default: the first]"
)
INDEX_OPTION = click.option(
    "--index",
    "indexes",
    type=click.IntRange(min=0),
    multiple=True,
    help="Run only this Job completion index (repeatable) [default: all]",
)


@dataclass(frozen=True)
class Local:
    """Where the command works: the repository and the database in it."""

    root: Path
    database: Path


pass_local = click.make_pass_decorator(Local)


AGAIN_OPTION = click.option(
    "--again",
    "--rerun",
    "again",
    is_flag=True,
    help="Run every variant, also those an earlier local try measured (after changing the "
    "runner, say) [default: reuse them]",
)

IMAGE_FILE_OPTION = click.option(
    "--image-file",
    "image_files",
    multiple=True,
    metavar="PATH=FILE",
    help="The file on this machine that an image_path model's image holds at PATH "
    "(repeatable): a local try runs this checkout's runner, not the image",
)


def _stored(database: Path, workflow: str) -> list[StoredRun]:
    """Every stored run of `workflow` (local tries and gathered ones)."""
    if not database.is_file():
        return []
    with open_store(database) as store:
        return list(store.runs(workflow))


def _say_reused(reuse: Reuse, planned: int) -> None:
    if not reuse.count:
        return
    click.echo(
        f"reusing {plural(reuse.count, 'variant')} that earlier local tries measured "
        f"(`--again` runs them again); {plural(planned - len(reuse.skipped), 'pod')} of "
        f"{planned} to run",
        err=True,
    )
    for plan, runs in reuse.skipped:
        for run in runs:
            ref = run.variant.variant
            what = ref.describe() if ref else f"index {run.variant.index}"
            when = format_finished(run.variant.finished_at)
            click.echo(
                f"  index {plan.index}: {what}: reused, measured {when} by Job {run.job.job}",
                err=True,
            )
    in_groups = reuse.count - sum(len(runs) for _, runs in reuse.skipped)
    if in_groups:
        click.echo(
            f"  and {plural(in_groups, 'variant')} that pods running the rest of their group skip",
            err=True,
        )


@dataclass(frozen=True)
class _Planned:
    """What a local try runs, read from dist/ at its start."""

    shown: Path
    """The workloads file, relative to the repository."""
    jobs: list[ExpectedJob]
    reuse: Reuse
    to_run: list[PodPlan]
    estimates: list[str]
    """About how long the pods of each target take here (localrun/estimate.py)."""


def _plan(
    root: Path,
    database: Path,
    workflow: str,
    cluster: str | None,
    indexes: tuple[int, ...],
    scratch: Path,
    *,
    again: bool,
    given_files: Sequence[str],
) -> _Planned:
    """Read `workflow`'s pods, say which earlier runs stand for which, pull their images."""
    try:
        path = workload_file(root, workflow, cluster)
        if cluster is None:
            _say_cluster_chosen(root, workflow, path)
        workload, jobs = read_expected(path, cluster_of(path))
        plans = list(pod_plans(workload, scratch, indexes))
    except (PodSpecError, WorkloadError) as error:
        raise click.ClickException(str(error)) from None
    stored = _stored(root / database, workflow)
    reuse = Reuse(to_run=plans) if again else plan_reuse(plans, jobs, earlier_runs(stored))
    _say_reused(reuse, len(plans))
    try:
        files = image_files(parse_image_files(given_files), workload, reuse.to_run)
    except ImageFileError as error:
        raise click.ClickException(str(error)) from None
    to_run = [replace(plan, image_files=files) for plan in reuse.to_run]
    _pull_images(to_run)
    skipped = {job: runs.keys() for job, runs in reuse.reused.items()}
    estimates = estimate_lines(workload, jobs, to_run, skipped, stored)
    return _Planned(path.relative_to(root), jobs, reuse, to_run, estimates)


def _say_cluster_chosen(root: Path, workflow: str, chosen: Path) -> None:
    """Name the cluster a try runs the Jobs of, where the workflow runs in several."""
    clusters = [cluster_of(path) for path in workload_files(root, workflow)]
    if len(clusters) > 1:
        click.echo(
            f"{workflow} runs in {len(clusters)} clusters ({', '.join(clusters)}): trying "
            f"{cluster_of(chosen)}'s Jobs (--cluster picks another)",
            err=True,
        )


def run_workflow(
    root: Path,
    database: Path,
    workflow: str,
    cluster: str | None,
    indexes: tuple[int, ...],
    executor: Executor | None = None,
    *,
    again: bool = False,
    given_files: Sequence[str] = (),
) -> None:
    """Run `workflow`'s pods one at a time (with `executor`, processes by default), but for
    the variants earlier local tries measured (all of them `again`), storing each pod's
    results as it ends, and report them; raises click.ClickException when any variant of
    `indexes` (all by default) did not succeed, or when nothing was stored, and
    click.exceptions.Exit(128 + the signal) when SIGINT or SIGTERM stopped it
    (localrun/stop.py). `given_files`: `PATH=FILE` for each `image_path` model
    (localrun/image_files.py).

    Everything the run needs from dist/ is read at its start: a `make synth` meanwhile may
    rename the Job or drop the file, and what was measured is still stored under the Job it
    ran as."""
    run_pod = executor or _run_process
    with Stop() as stop, tempfile.TemporaryDirectory(prefix="benchfleet-local-") as scratch:
        try:
            with stop.at_once():
                planned = _plan(
                    root,
                    database,
                    workflow,
                    cluster,
                    indexes,
                    Path(scratch),
                    again=again,
                    given_files=given_files,
                )
        except Stopped:
            click.echo(f"stopped by {stop.name} before any pod ran: nothing stored", err=True)
            raise click.exceptions.Exit(stop.exit_code) from None
        click.echo(f"running {plural(len(planned.to_run), 'pod')} of {planned.shown}", err=True)
        for line in planned.estimates:
            click.echo(line, err=True)
        _say_short_of_cpus(planned.to_run)
        store_reuses(root / database, planned.jobs, planned.reuse)
        tried = run_and_store(
            root / database,
            planned.to_run,
            {expected.identity.job: expected for expected in planned.jobs},
            planned.reuse,
            executor=run_pod,
            stop=stop,
            display=PodDisplay(sys.stderr, live=sys.stderr.isatty()),
        )
    _report(root, database, workflow, planned, tried, stop)


def _say_short_of_cpus(plans: Sequence[PodPlan], cores: int | None = None) -> None:
    """Say when a pod's CPU limit is more than this machine may give it: the runner sizes its
    threads by the cores it is pinned to, so the numbers are of fewer threads than the
    target's node would run."""
    cores = cores or len(os.sched_getaffinity(0))
    asked = max((plan.cpu_limit or 0.0 for plan in plans), default=0.0)
    if asked > cores:
        click.echo(
            f"note: the pods' CPU limit is {asked:g} CPUs and this machine gives them "
            f"{plural(cores, 'core')}: they measure with {cores} threads where a node of the "
            f"target runs {asked:g} (a local try proves the spec runs; the target's node says "
            "how fast)",
            err=True,
        )


def _run_process(plan: PodPlan, watch: Watch) -> PodRun:
    return run_process(plan, POD_TIMEOUT_S, watch=watch)


def _report(
    root: Path, database: Path, workflow: str, planned: _Planned, tried: Tried, stop: Stop
) -> None:
    """Report the Jobs this try ran or reused; judge only its own variants (an earlier try
    of another index is reported, not judged)."""
    if stop.signum is not None:
        _say_stopped(stop, workflow, tried)
    stored_jobs = {identity for identity, _ in tried.stored}
    identities = [
        identity
        for expected in planned.jobs
        if (identity := local_identity(expected)) in stored_jobs
        or planned.reuse.reused.get(identity.job)
    ]
    if not identities:
        if stop.signum is not None:
            raise click.exceptions.Exit(stop.exit_code)
        raise click.ClickException(f"nothing to store: {planned.shown} holds no pod to run")
    with open_store(root / database) as store:
        runs = [run for run in store.runs(workflow) if run.job in identities]
        notes = Notes(tried=store.reuses(workflow))
    reused = [run for runs_of in planned.reuse.reused.values() for run in runs_of.values()]
    runs += [run for run in reused if run.job not in identities]
    own = tried.stored | {(run.job, run.variant.index) for run in reused}
    judged = [run for run in runs if (run.job, run.variant.index) in own]
    failed = [run for run in judged if run.variant.state != "succeeded"]
    click.echo(to_text(build_report(runs, notes=notes)))
    baseline = " ".join(f"--baseline-job {identity.job}" for identity in identities)
    click.echo(
        f"stored in {root / database} as cluster {LOCAL_CLUSTER}; after an edit, "
        f"`collector report --workflow {workflow} --cluster {LOCAL_CLUSTER} {baseline}` "
        f"compares a new try with this one, and `collector forget --cluster {LOCAL_CLUSTER}` "
        "deletes local tries",
        err=True,
    )
    if stop.signum is not None:
        raise click.exceptions.Exit(stop.exit_code)
    if failed:
        raise click.ClickException(
            f"{len(failed)} of {plural(len(judged), 'variant')} did not succeed"
        )


def _say_stopped(stop: Stop, workflow: str, tried: Tried) -> None:
    click.echo(
        f"stopped by {stop.name}: stored the {plural(len(tried.stored), 'variant')} that "
        f"finished; {plural(len(tried.not_run), 'variant')} did not run",
        err=True,
    )
    for name in tried.not_run:
        click.echo(f"  not run: {name}", err=True)
    if tried.not_run:
        click.echo(
            f"`localrun run {workflow}` (without --again) runs only those, reusing what was stored",
            err=True,
        )


def _pull_images(plans: list[PodPlan]) -> None:
    """Every image volume of the run, before any pod starts: an artifact that cannot be
    pulled stops the run at once, as it would hold every pod of the Job."""
    volumes = {volume.reference: volume for plan in plans for volume in plan.images}
    if volumes:
        click.echo(f"pulling {plural(len(volumes), 'image volume')}", err=True)
    try:
        ImageStore().mount_all(tuple(volumes.values()))
    except ImagePullError as error:
        raise click.ClickException(f"{error.reason}: {error.message}") from None


@click.group(context_settings={"auto_envvar_prefix": "BENCHFLEET", "show_default": True})
@version_option
@root_option
@database_option
@click.pass_context
def cli(context: click.Context, root: Path, database: Path) -> None:
    """Run a synthesized workflow's pods on this machine, with no cluster."""
    context.obj = Local(root=root, database=database)


@cli.command()
@click.argument("workflow")
@CLUSTER_OPTION
@INDEX_OPTION
@AGAIN_OPTION
@IMAGE_FILE_OPTION
@pass_local
def run(
    local: Local,
    workflow: str,
    cluster: str | None,
    indexes: tuple[int, ...],
    again: bool,
    image_files: tuple[str, ...],
) -> None:
    """Run WORKFLOW's pods one at a time on this machine, store and report the results.

    A variant that an earlier local try measured (the same variant id, in the same namespace
    and repeat, and succeeded) is reused, not run: its pod is skipped, or its group's runner
    skips it. --again runs everything. A model baked into the runner image (image_path) is
    tried from a file given with --image-file PATH=FILE, checked against its sha256 first.

    Each pod's results are stored as it ends. Ctrl-C (or SIGTERM) stops the running pod,
    keeps what finished, names what did not run and exits 130 (143).

    Exits 1 when any pod it ran handed over no result or an error result.
    """
    run_workflow(
        local.root,
        local.database,
        workflow,
        cluster,
        indexes,
        again=again,
        given_files=image_files,
    )
