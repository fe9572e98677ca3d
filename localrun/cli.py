"""`localrun [--root R] [--db D] run WORKFLOW`: run a synthesized workflow's pods here and
report them.

Reads dist/<cluster>/workloads/WORKFLOW.yaml, the file Flux would apply, and runs each Job
index as a process through the runner, with the ConfigMaps' files and the pod's env as the
kubelet would give them. The results go into the collector's database as cluster `local`
and are reported as `collector report` reports a cluster's. Try a spec this way before
opening a pull request. `python -m localrun WORKFLOW` does the same.
"""

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click

from collector.store import open_store
from collector.workload import ExpectedJob, WorkloadError, read_expected
from contract.layout import LOCAL_CLUSTER, cluster_of
from contract.options import database_option, root_option, version_option
from contract.records import JobIdentity
from contract.text import plural
from localrun.images import ImagePullError, ImageStore
from localrun.pod import PodPlan, PodSpecError
from localrun.process import run_process
from localrun.record import local_identity, stored_variants
from localrun.workflow import Executor, PodOutcome, pod_plans, run_pods, workload_file
from report.model import build_report
from report.render import to_text

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


def _store(
    database: Path, jobs: Sequence[ExpectedJob], outcomes: list[PodOutcome]
) -> list[JobIdentity]:
    """Store each Job's local runs over any earlier local run of it; the identities stored."""
    identities = []
    with open_store(database) as store:
        for expected in jobs:
            mine = [o for o in outcomes if o.plan.job_name == expected.identity.job]
            if mine:
                identity = local_identity(expected)
                store.add(identity, expected.judged(stored_variants(mine, expected)), replace=True)
                identities.append(identity)
    return identities


def run_workflow(
    root: Path,
    database: Path,
    workflow: str,
    cluster: str | None,
    indexes: tuple[int, ...],
    executor: Executor | None = None,
) -> None:
    """Run `workflow`'s pods one at a time (with `executor`, processes by default), store and
    report the results; raises click.ClickException when any pod did not succeed, or when
    nothing was stored.

    Everything the run needs from dist/ is read at its start: a `make synth` meanwhile may
    rename the Job or drop the file, and what was measured is still stored under the Job it
    ran as."""
    run_pod = executor or (lambda plan: run_process(plan, POD_TIMEOUT_S))
    with tempfile.TemporaryDirectory(prefix="benchfleet-local-") as scratch:
        try:
            path = workload_file(root, workflow, cluster)
            workload, jobs = read_expected(path, cluster_of(path))
            plans = list(pod_plans(workload, Path(scratch), indexes))
        except (PodSpecError, WorkloadError) as error:
            raise click.ClickException(str(error)) from None
        shown = path.relative_to(root)
        _pull_images(plans)
        click.echo(f"running {plural(len(plans), 'pod')} of {shown}", err=True)
        outcomes = []
        for number, outcome in enumerate(run_pods(plans, run_pod), start=1):
            status = ", ".join(r.status for r in outcome.results) or outcome.problem
            click.echo(f"  [{number}/{len(plans)}] index {outcome.plan.index}: {status}", err=True)
            outcomes.append(outcome)
    identities = _store(root / database, jobs, outcomes)
    if not identities:
        raise click.ClickException(f"nothing to store: {shown} holds no pod to run")
    with open_store(root / database) as store:
        runs = [run for run in store.runs(workflow) if run.job in identities]
    failed = [run for run in runs if run.variant.state != "succeeded"]
    click.echo(to_text(build_report(runs)))
    baseline = " ".join(f"--baseline-job {identity.job}" for identity in identities)
    click.echo(
        f"stored in {root / database} as cluster {LOCAL_CLUSTER}; after an edit, "
        f"`collector report --workflow {workflow} --cluster {LOCAL_CLUSTER} {baseline}` "
        f"compares a new try with this one, and `collector forget --cluster {LOCAL_CLUSTER}` "
        "deletes local tries",
        err=True,
    )
    if failed:
        raise click.ClickException(
            f"{len(failed)} of {plural(len(runs), 'variant')} did not succeed"
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
@pass_local
def run(local: Local, workflow: str, cluster: str | None, indexes: tuple[int, ...]) -> None:
    """Run WORKFLOW's pods one at a time on this machine, store and report the results.

    Exits 1 when any pod handed over no result or an error result.
    """
    run_workflow(local.root, local.database, workflow, cluster, indexes)
