"""`collector`: harvest benchmark results from the clusters, store them, report on them."""

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Literal

import click

from collector.clean import clean
from collector.credentials import DEFAULT_CREDENTIALS_DIR, CredentialsError, connect
from collector.gather import Gatherer, GatherOptions, GatherOutcome
from collector.history import HistoryError, merged, records_at, records_in, runs_of
from collector.identity import UnconfirmedCluster, confirm_cluster
from collector.kube import KubeClient, KubeError
from collector.logs import LogFormat, configure
from collector.metrics import build_registry, push, write_textfile
from collector.progress import Progress
from collector.report import build_report
from collector.report_render import to_csv, to_json, to_markdown, to_text
from collector.status import format_status, workflow_status
from collector.store import StoreError, open_store
from collector.workload import ExpectedJob, WorkloadError, clusters_with, expected_jobs
from contract.dist import dist_clusters, namespaces
from contract.layout import RESULTS, recorded_clusters, recorded_jobs, workload_file
from contract.options import database_option, root_option

ReportFormat = Literal["text", "markdown", "csv", "json", "html"]


@dataclass(frozen=True)
class Settings:
    """Options every command shares."""

    root: Path
    database: Path
    credentials_dir: Path
    context: str | None


pass_settings = click.make_pass_decorator(Settings)


def _duration(text: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        if text[-1:] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a duration like 90s, 30m or 2h") from None


@click.group(context_settings={"auto_envvar_prefix": "BENCHFLEET", "show_default": True})
@root_option
@database_option
@click.option(
    "--credentials-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=DEFAULT_CREDENTIALS_DIR,
    help="Folder of kubeconfig files, k8s_kubeconfig[_<cluster>] (relative to --root).",
)
@click.option(
    "--context",
    "kube_context",
    help="The kubeconfig context [default: the one named like the cluster, else current]",
)
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    help="json: one object per line, with workflow, Job, namespace and GPU type fields.",
)
@click.option("-v", "--verbose", is_flag=True, help="Log each stored variant.")
@click.pass_context
def cli(
    context: click.Context,
    root: Path,
    database: Path,
    credentials_dir: Path,
    kube_context: str | None,
    log_format: LogFormat,
    verbose: bool,
) -> None:
    """Gather benchmark results from the clusters, store them, report on them.

    \b
    The loop, after Flux has applied a workflow's Jobs from dist/:
      collector gather --workflow W    follow its Jobs, store every variant, write results/
      git add results/; make synth     synth drops the recorded Jobs; merged, Flux prunes them
      collector report --workflow W    GPU comparison, best configuration, ranking, regressions
    """
    configure(log_format, verbose)
    context.obj = Settings(
        root=root,
        database=root / database,
        credentials_dir=root / credentials_dir,
        context=kube_context,
    )


def _clusters(settings: Settings, workflow: str, cluster: str | None) -> list[str]:
    if cluster is not None:
        return [cluster]
    found = clusters_with(settings.root, workflow)
    recorded = recorded_clusters(settings.root, workflow)
    if not found and not recorded:
        raise click.ClickException(
            f"no cluster runs workflow {workflow!r}: {workload_file('*', workflow)} is missing "
            "(a typo, or `make synth` not run?)"
        )
    if not found:
        click.echo(
            f"every Job of {workflow} is recorded in {RESULTS}/{workflow}/ "
            f"({', '.join(recorded)}): nothing runs it any more",
            err=True,
        )
    return found


def _client(settings: Settings, cluster: str, namespace: str) -> KubeClient:
    """A client for `cluster`, once the cluster it reaches has said it is `cluster`."""
    try:
        connection = connect(
            cluster, context=settings.context, credentials_dir=settings.credentials_dir
        )
        client = KubeClient(connection.api_client)
        confirm_cluster(client, cluster, namespace, connection.provider)
    except (CredentialsError, UnconfirmedCluster, KubeError) as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"{cluster}: credentials from {connection.provider}", err=True)
    return client


def _confirmed(
    settings: Settings, clusters: list[str], namespace_of: Callable[[str], str], explicit: bool
) -> Iterator[tuple[str, KubeClient]]:
    """Each cluster with a client confirmed to reach it.

    A cluster named with --cluster must be reached; of the clusters found in dist/, those
    without credentials, or whose credentials reach another cluster, are skipped, saying so,
    and it is an error only when none is left.
    """
    skipped: list[str] = []
    reached = 0
    for name in clusters:
        try:
            client = _client(settings, name, namespace_of(name))
        except click.ClickException as error:
            if explicit:
                raise
            click.echo(f"{name}: skipped: {error.message}", err=True)
            skipped.append(name)
            continue
        reached += 1
        yield name, client
    if skipped and not reached:
        raise click.ClickException(
            f"no cluster could be confirmed ({', '.join(skipped)}); nothing was gathered"
        )
    if skipped:
        click.echo(f"skipped {', '.join(skipped)}: see above", err=True)


def _pending(
    settings: Settings, workflow: str, cluster: str | None
) -> dict[str, list[ExpectedJob]]:
    """The Jobs of `workflow` not yet recorded, by cluster; clusters with none are left out."""
    pending = {}
    for name in _clusters(settings, workflow, cluster):
        expected = _expected(settings, workflow, name)
        if expected:
            pending[name] = expected
        else:
            click.echo(f"{name}: nothing left of {workflow} to follow", err=True)
    return pending


def _namespace(pending: dict[str, list[ExpectedJob]], cluster: str) -> str:
    """The namespace of a cluster's expected Jobs (a workflow runs in one)."""
    return pending[cluster][0].identity.namespace


def _expected(settings: Settings, workflow: str, cluster: str) -> list[ExpectedJob]:
    try:
        expected = expected_jobs(settings.root, workflow, cluster)
    except WorkloadError as error:
        raise click.ClickException(str(error)) from None
    recorded = set(recorded_jobs(settings.root, workflow, cluster))
    done = [e for e in expected if e.identity.job in recorded]
    for job in done:
        click.echo(
            f"{cluster}: Job {job.identity.job} is already recorded in results/; "
            "run `make synth` to drop it from dist/",
            err=True,
        )
    return [e for e in expected if e.identity.job not in recorded]


def _summary(outcome: GatherOutcome) -> list[str]:
    lines = [
        f"{outcome.cluster}: stored {outcome.stored_new} variant runs "
        f"({outcome.already_stored} were stored before)"
    ]
    for record, path in outcome.records:
        failed = [v for v in record.variants if v.state == "failed"]
        where = f"wrote {path}" if path else "record unchanged (or --keep)"
        lines.append(
            f"  {record.job}: {record.outcome}, {len(record.variants) - len(failed)} ok, "
            f"{len(failed)} failed; {where}"
        )
        lines += [f"    index {v.index}: {v.explanation}" for v in failed]
        if record.failure:
            lines.append(f"    the Job failed: {record.failure}")
    for unfinished in outcome.unfinished:
        lines.append(f"  {unfinished.job}: NOT FINISHED: {unfinished.why}")
        lines += [f"    index {v.index}: failed: {v.explanation}" for v in unfinished.failed]
        lines += [f"    index {s.index}: {s.phase}: {s.explanation}" for s in unfinished.waiting]
    return lines


@cli.command()
@click.option("--workflow", required=True, help="The workflow id (its spec file's `id`).")
@click.option("--cluster", help="Only this cluster [default: every cluster dist/ runs it in]")
@click.option(
    "--timeout",
    default="1h",
    help="Stop following after this long (90s, 30m, 2h); what "
    "finished is stored and recorded, what did not is listed with the reason.",
)
@click.option("--no-wait", is_flag=True, help="List once and store what has finished; no watch.")
@click.option(
    "--keep",
    is_flag=True,
    help="Store in the database only and write no results/ record, so synth keeps the Jobs.",
)
@click.option(
    "--metrics-textfile",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write Prometheus metrics here, for node-exporter's textfile collector.",
)
@click.option("--pushgateway", help="Push Prometheus metrics to this Pushgateway (host:port).")
@pass_settings
def gather(
    settings: Settings,
    workflow: str,
    cluster: str | None,
    timeout: str,
    no_wait: bool,
    keep: bool,
    metrics_textfile: Path | None,
    pushgateway: str | None,
) -> None:
    """Follow a workflow's Jobs to their end; store and record each result.

    \b
    1. Finds the workflow's Jobs in dist/<cluster>/ and follows them and their pods in the
       cluster with list + watch (the same few requests however many variants).
    2. Reads each finished variant's result from its pod's termination message (or its log)
       and stores it in the database at once: re-running gather never stores one twice, and an
       interrupted gather resumes where it stopped.
    3. Writes results/<workflow>/<cluster>/<job>.json for every finished Job (not --keep).
       Commit it: `make synth` then drops the Job from dist/, and Flux prunes it. gather never
       deletes a Job itself, since Flux would run it again while git still holds it.
    4. Prints what finished, what failed and why, and what did not finish in time.

    Exits 1 when a variant failed or a Job did not finish.
    """
    options = GatherOptions(timeout_s=_duration(timeout), wait=not no_wait, record=not keep)
    outcomes = []
    try:
        with open_store(settings.database) as store:
            pending = _pending(settings, workflow, cluster)
            namespace = partial(_namespace, pending)
            for name, client in _confirmed(settings, list(pending), namespace, cluster is not None):
                expected = pending[name]
                total = sum(job.completions for job in expected)
                progress = Progress(sys.stderr, total, live=sys.stderr.isatty())
                gatherer = Gatherer(
                    client,
                    store,
                    settings.root,
                    expected,
                    options=options,
                    on_progress=progress.update,
                )
                try:
                    outcome = gatherer.run()
                except KeyboardInterrupt:
                    raise click.ClickException(
                        f"interrupted: {gatherer.stored_new} variant runs were stored; run "
                        "gather again to resume"
                    ) from None
                finally:
                    progress.finish()
                outcomes.append(outcome)
                for line in _summary(outcome):
                    click.echo(line)
                click.echo(
                    f"{name}: API requests {dict(sorted(client.requests.items()))}", err=True
                )
    except (StoreError, KubeError) as error:
        raise click.ClickException(str(error)) from None
    except OSError as error:
        raise click.ClickException(
            f"cannot write {error.filename}: {error.strerror}; every finished variant is in "
            f"{settings.database}: fix that and run gather again to write the records"
        ) from None
    registry = build_registry([job for outcome in outcomes for job in outcome.observed])
    if metrics_textfile is not None:
        write_textfile(registry, metrics_textfile)
    if pushgateway is not None:
        push(registry, pushgateway, workflow)
    recorded = [v for o in outcomes for record, _ in o.records for v in record.variants]
    failed = sum(v.state == "failed" for v in recorded)
    failed += sum(len(unfinished.failed) for o in outcomes for unfinished in o.unfinished)
    unfinished = sum(len(o.unfinished) for o in outcomes)
    if failed or unfinished:
        raise click.ClickException(
            f"{failed} variants failed, {unfinished} Jobs did not finish; see above"
        )


@cli.command()
@click.option("--workflow", required=True, help="The workflow id.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "markdown", "csv", "json", "html"]),
    default="text",
    help="markdown suits a pull-request comment; html writes a page with plots to --output.",
)
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    help="Write here instead of stdout (for html: a folder) [default for html: report/]",
)
@click.option(
    "--baseline",
    "baseline_ref",
    help="Compare with the results/ records at this git revision (main, a tag, a commit).",
)
@click.option(
    "--threshold",
    default=0.05,
    type=click.FloatRange(0, 1, max_open=True),
    help="A slowdown beyond this fraction, with disjoint CIs, is a regression.",
)
@pass_settings
def report(
    settings: Settings,
    workflow: str,
    output_format: ReportFormat,
    output: Path | None,
    baseline_ref: str | None,
    threshold: float,
) -> None:
    """Report a workflow's stored results.

    Reads the database and the records in results/ (so a fresh clone can report too) and
    answers the design note's questions where the data allows: latency per GPU type, the
    best configuration of a sweep, a ranking of models; each median with a 95 % confidence
    interval. With --baseline, flags significant regressions against that revision.
    """
    try:
        with open_store(settings.database) as store:
            runs = merged(store.runs(workflow), runs_of(records_in(settings.root, workflow)))
        baseline = (
            runs_of(records_at(settings.root, baseline_ref, workflow)) if baseline_ref else None
        )
    except (StoreError, HistoryError) as error:
        raise click.ClickException(str(error)) from None
    if not runs:
        raise click.ClickException(
            f"no results for workflow {workflow!r} in {settings.database} or {RESULTS}/{workflow}/"
            ": run `collector gather` first"
        )
    built = build_report(runs, baseline=baseline, regression_threshold=threshold)
    if output_format == "html":
        # matplotlib takes a while to import: only when a page is asked for.
        from collector.report_html import write_html  # noqa: PLC0415

        page = write_html(built, output or settings.root / "report")
        click.echo(f"wrote {page}")
        return
    render = {"text": to_text, "markdown": to_markdown, "csv": to_csv, "json": to_json}
    text = render[output_format](built)
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
    else:
        output.write_text(text, encoding="utf-8")
        click.echo(f"wrote {output}", err=True)


@cli.command()
@click.option("--workflow", required=True, help="The workflow id.")
@click.option("--cluster", help="Only this cluster [default: every cluster dist/ runs it in]")
@pass_settings
def status(settings: Settings, workflow: str, cluster: str | None) -> None:
    """Show where a workflow's Jobs stand, and why anything waits.

    Read-only: lists the Jobs and pods once and reads the events of pending pods (the
    scheduler's reasons: no node with that GPU, quota, preemption).
    """
    pending = {
        name: _expected(settings, workflow, name) for name in _clusters(settings, workflow, cluster)
    }
    clusters = [name for name, expected in pending.items() if expected]
    namespace = partial(_namespace, pending)
    for name, client in _confirmed(settings, clusters, namespace, cluster is not None):
        try:
            click.echo(format_status(workflow_status(client, pending[name])))
        except KubeError as error:
            raise click.ClickException(str(error)) from None


@cli.command("clean")
@click.option("--cluster", help="Only this cluster [default: every cluster in dist/]")
@click.option("--dry-run", is_flag=True, help="Print the decisions; delete nothing.")
@pass_settings
def clean_command(settings: Settings, cluster: str | None, dry_run: bool) -> None:
    """Delete finished Jobs that dist/ no longer holds, once their results are stored.

    Flux prunes what leaves dist/; this removes what it did not (a Job applied by hand, a
    Kustomization with prune: false). Never a Job dist/ holds: Flux would create it again
    and run the benchmark again. Never a running Job, nor one whose results are not stored.
    Prints each decision with its reason.
    """
    clusters = [cluster] if cluster else dist_clusters(settings.root)

    def first_namespace(name: str) -> str:
        return namespaces(settings.root, name)[0]

    try:
        with open_store(settings.database) as store:
            for name, client in _confirmed(
                settings, clusters, first_namespace, cluster is not None
            ):
                for decision in clean(client, settings.root, store, name, dry_run=dry_run):
                    verb = decision.action if not dry_run else f"would {decision.action}"
                    click.echo(
                        f"{name}/{decision.namespace} Job {decision.job}: {verb}: {decision.why}"
                    )
    except (StoreError, KubeError, OSError) as error:
        raise click.ClickException(str(error)) from None
