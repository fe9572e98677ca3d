"""`python -m localrun WORKFLOW`: run a synthesized workflow's pods here and print the results.

Reads dist/<cluster>/workloads/WORKFLOW.yaml, the file Flux would apply, and runs each Job
index as a process through the runner, with the ConfigMaps' files and the pod's env as the
kubelet would give them. Try a spec this way before opening a pull request.
"""

import sys
import tempfile
from pathlib import Path

import click

from localrun.pod import PodSpecError
from localrun.process import run_process
from localrun.table import format_table
from localrun.workflow import pod_plans, run_pods, workload_file

POD_TIMEOUT_S = 1800.0


@click.command(context_settings={"show_default": True})
@click.argument("workflow")
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("."),
    help="The repository root, holding dist/.",
)
@click.option("--cluster", help="Which cluster's manifests to run [default: the first]")
@click.option(
    "--index",
    "indexes",
    type=click.IntRange(min=0),
    multiple=True,
    help="Run only this Job completion index (repeatable) [default: all]",
)
def main(workflow: str, root: Path, cluster: str | None, indexes: tuple[int, ...]) -> None:
    """Run WORKFLOW's pods one at a time on this machine and print a results table.

    Exits 1 when any pod handed over no result or an error result.
    """
    with tempfile.TemporaryDirectory(prefix="benchfleet-local-") as scratch:
        try:
            workload = workload_file(root, workflow, cluster)
            plans = list(pod_plans(workload, Path(scratch), indexes))
        except PodSpecError as error:
            raise click.ClickException(str(error)) from None
        click.echo(f"running {len(plans)} pods of {workload.relative_to(root)}", err=True)
        outcomes = []
        for number, outcome in enumerate(
            run_pods(plans, lambda plan: run_process(plan, POD_TIMEOUT_S)), start=1
        ):
            status = outcome.result.status if outcome.result else outcome.problem
            click.echo(f"  [{number}/{len(plans)}] index {outcome.plan.index}: {status}", err=True)
            outcomes.append(outcome)
    click.echo(format_table(outcomes))
    failed = [o for o in outcomes if o.result is None or o.result.status != "ok"]
    if failed:
        raise click.ClickException(f"{len(failed)} of {len(outcomes)} pods did not succeed")


if __name__ == "__main__":
    sys.exit(main())
