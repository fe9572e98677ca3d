"""`benchfleet`: check the spec files and write what is generated from them."""

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import click

from contract.options import moment_of, now_option, root_option, version_option
from contract.text import shown
from contract.variant import SETTING_FIELDS, heading
from synth.advice import unchecked as left_to_pods
from synth.cache import CACHE_DIR, RenderCache
from synth.checks import target_clusters
from synth.committed import GitError
from synth.hints import did_you_mean
from synth.identity import identify
from synth.jobs import cluster_runs, waits_for_first_run
from synth.load import Specs, load_specs
from synth.main import synth as synthesise
from synth.plan import format_plan, plan, plan_json, planned_against
from synth.problems import Problem, SpecProblems
from synth.render import render
from synth.scheduler import (
    ScheduleChoiceError,
    commit,
    message,
    new_records,
    plan_schedule,
    start,
)
from synth.schema import stale_files, write_generated


@dataclass(frozen=True)
class Repo:
    """The repository the command works on."""

    root: Path


pass_repo = click.make_pass_decorator(Repo)


def report_problems(problems: SpecProblems, consequence: str = "") -> click.ClickException:
    """Print every problem to stderr; the exception to raise for exit status 1."""
    for problem in problems.problems:
        click.echo(str(problem), err=True)
    count = len(problems.problems)
    return click.ClickException(f"{count} problem{'s' * (count != 1)} in the specs{consequence}")


def load_or_fail(
    repo: Repo, files: list[Path] | None = None, *, output_format: str = "text"
) -> Specs:
    """The validated specs, or exit 1 after printing every problem (as JSON on stdout with
    `output_format` json)."""
    try:
        return load_specs(repo.root, files)
    except SpecProblems as problems:
        raise report_problems_as(problems, output_format) from None


def report_problems_as(problems: SpecProblems, output_format: str) -> click.ClickException:
    """`report_problems`, and with `output_format` json the problems as JSON on stdout."""
    if output_format == "json":
        listed = [asdict(problem) for problem in problems.problems]
        click.echo(json.dumps({"valid": False, "problems": listed}, indent=2))
    return report_problems(problems)


FORMAT_OPTION = click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    help="json: one object on stdout, for a pull-request check to read.",
)


@click.group(context_settings={"auto_envvar_prefix": "BENCHFLEET", "show_default": True})
@version_option
@root_option
@click.pass_context
def cli(context: click.Context, root: Path) -> None:
    """Benchmark specs in git, manifests for Flux: validate and generate."""
    context.obj = Repo(root=root)


@cli.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@FORMAT_OPTION
@pass_repo
def validate(repo: Repo, files: tuple[Path, ...], output_format: str) -> None:
    """Check the specs; print every problem.

    Checks FILES (default: all under specs/workflows/) and the fleet config. Prints every
    problem in every file as FILE:LINE:COLUMN: FIELD: MESSAGE (with --format json, one JSON
    object on stdout) and exits 1 if there is any; writes nothing. Valid specs may still leave
    something to their pods: a quantized model synth cannot read whose entry records no
    layers, or recorded inputs synth cannot read whose entry records no contents, are said
    on stderr (in JSON, under "unchecked").
    """
    specs = load_or_fail(repo, list(files) or None, output_format=output_format)
    variants = sum(len(loaded.variants) for loaded in specs.workflows)
    unchecked = left_to_pods(specs)
    if output_format == "json":
        summary = {"workflows": len(specs.workflows), "variants": variants}
        listed = {"unchecked": [asdict(problem) for problem in unchecked]}
        click.echo(json.dumps({"valid": True, "problems": [], **summary, **listed}, indent=2))
        return
    _echo_unchecked(unchecked)
    click.echo(
        f"{len(specs.workflows)} workflows, {variants} variants, "
        f"{len(specs.fleet.clusters)} clusters: all valid"
    )


def _echo_unchecked(unchecked: list[Problem]) -> None:
    """What the specs leave to be found out in the pods, on stderr."""
    for problem in unchecked:
        click.echo(str(problem), err=True)


@cli.command()
@click.option("--check", is_flag=True, help="Only report stale files; exit 1 if any.")
@pass_repo
def schema(repo: Repo, check: bool) -> None:
    """Regenerate the JSON Schemas and reference.

    Writes specs/schema.json, specs/clusters.schema.json, contract/result.schema.json and
    docs/spec-reference.md. Editors
    that speak the YAML language server read the schemas through the
    `# yaml-language-server: $schema=...` line at the top of each spec file.
    """
    if check:
        stale = stale_files(repo.root)
        if stale:
            names = ", ".join(path.as_posix() for path in stale)
            raise click.ClickException(f"stale: {names}; run `make schema`")
        click.echo("generated files are up to date")
        return
    for path in write_generated(repo.root):
        click.echo(f"wrote {path.as_posix()}")


@cli.command()
@click.argument("workflow_id")
@pass_repo
def variants(repo: Repo, workflow_id: str) -> None:
    """List what a workflow expands to, and which variants will run.

    One line per variant of WORKFLOW_ID in each cluster it runs in: what its pod measures,
    its content id (a hash of everything that determines its number, so it differs between
    clusters whose nodes differ), and whether it runs or a recorded result under results/
    is reused; with `benchmark.repeats`, a line per repeat.
    """
    specs = load_or_fail(repo)
    loaded = next((w for w in specs.workflows if w.workflow.id == workflow_id), None)
    if loaded is None:
        known = [w.workflow.id for w in specs.workflows]
        hint = did_you_mean(workflow_id, known, what="workflows")
        raise click.ClickException(f"unknown workflow {workflow_id!r}; {hint}")
    header = ("cluster", "variant", "target", *map(heading, SETTING_FIELDS), "")
    rows = []
    runs = 0
    repeats = loaded.workflow.benchmark.repeats
    waiting = waits_for_first_run(loaded)
    for cluster in target_clusters(loaded.workflow, specs.fleet):
        stored = specs.recorded[workflow_id, cluster.name]
        identified = identify(loaded, specs.fleet, cluster, specs.model_files)
        jobs = {(run.config.target, run.repeat): run for run in cluster_runs(specs, identified)}
        for target in loaded.workflow.targets:
            for variant, variant_id in identified.of(target):
                for repeat in range(repeats):
                    job = jobs.get((target.key, repeat))
                    pod = job.pods().get(variant_id) if job is not None else None
                    grouped = job is not None and job.config.groups is not None
                    reused = stored.reusable(variant_id, repeat, loaded.sha256)
                    if pod is not None:
                        outcome = f"runs in pod {pod}" if grouped else "runs"
                    elif waiting:
                        outcome = "waits for its first run (`benchfleet schedule`)"
                    else:
                        outcome = f"recorded in {reused.job}" if reused else "recorded"
                    runs += pod is not None
                    rows.append(
                        (
                            cluster.name,
                            variant_id,
                            variant.target,
                            *(str(getattr(variant, name)) for name in SETTING_FIELDS),
                            f"repeat {repeat}: {outcome}" if repeats > 1 else outcome,
                        )
                    )
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    for row in (header, *rows):
        cells = (cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        click.echo(shown("  ".join(cells).rstrip()))
    plural = "s" * (len(rows) != 1)
    counted = f"variant{plural}" if repeats == 1 else f"runs of variants ({repeats} repeats)"
    left = f"{len(rows) - runs} {'wait' if waiting else 'recorded'}"
    scheduled = f" (scheduled run {loaded.schedule.run})" if loaded.schedule else ""
    click.echo(f"{len(rows)} {counted} in {loaded.file}{scheduled}: {runs} run, {left}")


@cli.command()
@pass_repo
def synth(repo: Repo) -> None:
    """Regenerate dist/ and clusters/ from specs.

    Validates first: nothing is written unless every spec is valid; each folder is then
    replaced as a whole, so files of removed workflows disappear and a failure never leaves
    half a tree.
    """
    try:
        result = synthesise(repo.root)
    except SpecProblems as problems:
        raise report_problems(problems, "; dist/ and clusters/ are unchanged") from None
    for warning in result.warnings:
        click.echo(str(warning), err=True)
    for path, change in result.changed.items():
        click.echo(f"{change} {path}")
    click.echo(f"{len(result.changed)} files changed")


def _echo_lines(text: str) -> None:
    """`text` line by line, each shown so that nothing it quotes forges a line of its own."""
    for line in text.splitlines():
        click.echo(shown(line))


@cli.command("schedule")
@click.argument("workflow_ids", nargs=-1, metavar="[WORKFLOW]...")
@now_option("Schedule")
@click.option(
    "--commit",
    "make_commit",
    is_flag=True,
    help="Commit schedules/, dist/, clusters/ and results/ with a message saying what runs.",
)
@click.option("--dry-run", is_flag=True, help="Say what would start; write nothing.")
@pass_repo
def schedule(
    repo: Repo, workflow_ids: tuple[str, ...], now: str | None, make_commit: bool, dry_run: bool
) -> None:
    """Start the runs of scheduled workflows that are due (a scheduled CI job's command).

    For each workflow with `scheduling.every` (of WORKFLOW..., default all): where a new
    period has begun and its last run is recorded, bumps its run in schedules/<id>.json,
    which synth hashes into its variant ids, so the run is new and reuses nothing. Then
    writes dist/ and clusters/ as `make synth` does, and prints the commit message: each run
    started with its Jobs and variants per cluster, the records under results/ not yet
    committed, and why each other scheduled workflow waits. A run still going is never
    replaced: the next waits until gather has recorded it. With --commit, commits all of it;
    pushed, Flux starts the runs.
    """
    moment = moment_of(now)
    specs = load_or_fail(repo)
    try:
        planned = plan_schedule(specs, moment, workflow_ids)
    except ScheduleChoiceError as error:
        raise click.ClickException(str(error)) from None
    if dry_run:
        _echo_lines(message(planned, []))
        return
    try:
        start(repo.root, planned)
    except SpecProblems as problems:
        raise report_problems(problems, "; nothing started") from None
    try:
        recorded = new_records(repo.root)
        text = message(planned, recorded)
        _echo_lines(text)
        if make_commit:
            made = commit(repo.root, text)
            click.echo(f"committed {made}" if made else "nothing to commit", err=True)
    except GitError as error:
        raise click.ClickException(f"git: {error}") from None


@cli.command("plan")
@FORMAT_OPTION
@pass_repo
def plan_command(repo: Repo, output_format: str) -> None:
    """Preview Job changes per cluster (writes nothing to dist/ or clusters/).

    Compares what synth would write with the committed dist/ (git's HEAD: what Flux applies
    once pushed; without git, the working tree's) and lists, per cluster, the Jobs Flux
    would create, replace (a changed Job gets a new name and runs again) and prune; the
    first line says which it compared with; what only the pods will find out (a quantized
    model synth cannot read, whose entry records no layers) goes to stderr (in JSON, under
    "unchecked"). Exits 1 when the committed dist/ holds a
    workload object the API server would refuse: one that keeps its name but not the
    content synth writes for it (edited by hand, or stale).
    """
    specs = load_or_fail(repo, output_format=output_format)
    committed, compared = planned_against(repo.root, specs.committed)
    try:
        # The render cache makes a plan after `make synth` (or before it) cost only the changes.
        rendered = render(specs, RenderCache(repo.root / CACHE_DIR))
    except SpecProblems as problems:
        raise report_problems_as(problems, output_format) from None
    plans = plan(committed, rendered, repo.root)
    unchecked = left_to_pods(specs)
    if output_format == "json":
        listed = {"unchecked": [asdict(problem) for problem in unchecked]}
        click.echo(json.dumps({"compared_with": compared, **plan_json(plans), **listed}, indent=2))
    else:
        _echo_unchecked(unchecked)
        click.echo(f"compared with {compared}")
        for line in format_plan(plans):
            click.echo(line)
    edited = sum(len(cluster.edited) for cluster in plans)
    if edited:
        raise click.ClickException(f"{edited} objects in dist/ differ from what synth writes")
