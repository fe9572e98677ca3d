"""`collector`: harvest benchmark results from the clusters, store them, report on them. The
command is put together in benchfleet/collector.py, which hands in the reader of the fleet's
prices (synth's), so that nothing here imports synth."""

import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Final

import click
from click.decorators import FC

from collector.check import (
    Checked,
    Unseen,
    check_schedule,
    checked_json,
    never_started,
    standing,
)
from collector.clean import clean
from collector.credentials import DEFAULT_CREDENTIALS_DIR
from collector.forget import ForgetError, forget, forget_everywhere
from collector.gather import GatherOptions
from collector.kube import KubeError
from collector.lake_runs import LakeRunsError, lake_runs
from collector.lakeread import StoreReader
from collector.logs import LogFormat, configure
from collector.metrics import ObservedJob, build_registry, last_results, write_textfile
from collector.pushgateway import PushFailed, Pushgateway, push, pushgateway
from collector.retention import MAX_DAYS as MAX_RAW_DAYS
from collector.retention import set_raw_days
from collector.samples import read_samples
from collector.session import (
    PriceReader,
    ScheduleReader,
    Settings,
    confirmed_clusters,
    gather_workflow,
    job_namespace,
    pending_jobs,
)
from collector.status import JobStatus, format_status, workflow_status
from collector.sync import SyncError, sync
from collector.workload import ExpectedJob, WorkloadError
from contract.dist import dist_clusters, namespaces
from contract.lake import LAKE_ENV, LakeUrl, LakeUrlError, parse_lake_url
from contract.layout import LOCAL_CLUSTER, RESULTS, SCHEDULES
from contract.objectstore import ObjectStore
from contract.objectstore import StoreError as ObjectStoreError
from contract.options import (
    database_option,
    moment_of,
    now_option,
    root_option,
    version_option,
)
from contract.pricing import CHECKOUT
from contract.records import JobRecord
from contract.schedule import MAX_PERIOD_S, read_schedules
from contract.text import plural, shown
from report.formats import REPORT_RENDERERS, TREND_RENDERERS, Renderers, ReportFormat, Shown
from report.model import JobChoiceError, build_report, in_cluster
from report.notes import notes_of, pricing_of
from report.trend import MIN_HISTORY, WINDOW, Rule, build_trend
from store.database import Store, StoreError, open_store
from store.history import (
    HistoryError,
    every_run,
    merged,
    records_at,
    records_in,
    runs_of,
)

HTML_REPORT: Final = "report.html"
"""Where `report --format html` writes without --output, under the repository root."""


pass_settings = click.make_pass_decorator(Settings)


_DURATION: Final = re.compile(r"(\d{1,12}(?:\.\d{1,9})?)([smh]?)")
_UNIT_S: Final = {"": 1, "s": 1, "m": 60, "h": 3600}


def _duration_option(
    context: click.Context, parameter: click.Parameter, text: str | None
) -> float | None:
    """A duration option (90s, 30m, 2h, or seconds) in seconds, at most MAX_PERIOD_S (a
    schedule's longest period or deadline): click names the option where it is refused."""
    if text is None:
        return None
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise click.BadParameter(f"{text[:40]!r} is not a duration like 90s, 30m or 2h")
    seconds = float(match[1]) * _UNIT_S[match[2]]
    if seconds > MAX_PERIOD_S:
        raise click.BadParameter(
            f"{text!r} is longer than {MAX_PERIOD_S:,} s (ten years), the longest period or "
            "deadline a schedule may have"
        )
    return seconds


def _lake(_: click.Context, __: click.Parameter, value: str | None) -> LakeUrl | None:
    if value == _LAKE_FROM_ENV:
        value = os.environ.get(LAKE_ENV)
        if not value:
            raise click.BadParameter(
                f"no lake named: give --lake s3://BUCKET/PREFIX or ${LAKE_ENV}"
            )
    try:
        return None if not value else parse_lake_url(value)
    except LakeUrlError as error:
        raise click.BadParameter(str(error)) from None


_LAKE_FROM_ENV: Final = "-"
"""What a bare `report --lake` stands for: the lake $BENCHFLEET_LAKE names."""


def lake_option(what: str) -> Callable[[FC], FC]:
    """`--lake s3://BUCKET/PREFIX`, $BENCHFLEET_LAKE by default; the store is found by the
    standard AWS variables (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...)."""
    return click.option(
        "--lake",
        envvar=LAKE_ENV,
        callback=_lake,
        show_envvar=True,
        help=f"The result lake, s3://BUCKET/PREFIX: {what}.",
    )


report_lake_option = click.option(
    "--lake",
    is_flag=False,
    flag_value=_LAKE_FROM_ENV,
    callback=_lake,
    help=f"Report the runs `collector sync` published to this lake (s3://BUCKET/PREFIX; "
    f"bare, the one ${LAKE_ENV} names) and nothing else: no database, no results/; the same "
    "report the roots that synced them give [default: the database and results/]",
)
"""report's --lake: only where asked, since a root's own report must not change with the
environment; bare, it takes the lake every other command defaults to."""


def collector_cli(
    read_prices: PriceReader, read_scheduled: ScheduleReader, read_stores: StoreReader
) -> click.Group:
    """The `collector` command, its reports and metrics priced by `read_prices`, its check
    told which workflows are scheduled by `read_scheduled`, its gather told where each
    cluster's runners write whole results by `read_stores`."""

    @click.group(
        commands=COMMANDS,
        context_settings={"auto_envvar_prefix": "BENCHFLEET", "show_default": True},
    )
    @version_option
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
            read_prices=read_prices,
            read_scheduled=read_scheduled,
            read_stores=read_stores,
        )

    return cli


def _pushgateway(_: click.Context, __: click.Parameter, value: str | None) -> Pushgateway | None:
    try:
        return None if value is None else pushgateway(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


NOT_FROM_LAKE_EXIT: Final = 4
"""gather's exit code where every variant ended and was stored, none failed, but a whole
result its runner wrote to the lake was not read from it (stored from its pod instead)."""


class NotFromLake(click.ClickException):
    """Nothing failed, but the lake did not give every result its runner wrote there."""

    exit_code = NOT_FROM_LAKE_EXIT


@click.command()
@click.option("--workflow", required=True, help="The workflow id (its spec file's `id`).")
@click.option("--cluster", help="Only this cluster [default: every cluster dist/ runs it in]")
@lake_option(
    "where its runners write whole results, for every cluster [default: each cluster's "
    "results_store in specs/clusters.yaml]"
)
@click.option(
    "--timeout",
    default="1h",
    callback=_duration_option,
    help="Stop following after this long (90s, 30m, 2h), every cluster together, confirming "
    "each included; what finished is stored and recorded, what did not is listed with the "
    "reason.",
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
@click.option(
    "--pushgateway",
    "gateway",
    callback=_pushgateway,
    help="Push Prometheus metrics to this Pushgateway: host:port or an http(s) URL, with "
    "user:password@ for Basic auth (give it as BENCHFLEET_GATHER_PUSHGATEWAY to keep the "
    "password off the command line).",
)
@click.option(
    "--no-progress",
    is_flag=True,
    help="Show no progress while following, and read no running pod's log for it.",
)
@pass_settings
def gather(
    settings: Settings,
    workflow: str,
    cluster: str | None,
    lake: LakeUrl | None,
    timeout: float,
    no_wait: bool,
    keep: bool,
    metrics_textfile: Path | None,
    gateway: Pushgateway | None,
    no_progress: bool,
) -> None:
    """Follow a workflow's Jobs to their end; store and record each result.

    \b
    1. Finds the workflow's Jobs in dist/<cluster>/ and follows them and their pods in the
       cluster with list + watch (the same few requests however many variants).
    2. Reads each finished variant's whole result, every sample with it, from the lake object
       its termination message names (its digest checked first), else from that message (or
       its pod's log), and stores it in the database at once: re-running gather, or two at
       once, never stores one twice, and an interrupted gather resumes where it stopped.
    3. Writes results/<workflow>/<cluster>/<job>.json for every finished Job (not --keep).
       Commit it: `make synth` then drops the Job from dist/, and Flux prunes it. gather never
       deletes a Job itself, since Flux would run it again while git still holds it.
    4. Prints what finished, what failed and why, and what did not finish in time.

    While it follows, stderr shows the counts and what the running pods are doing, from the
    progress line at the end of a few pods' logs at a time (a live line on a terminal, a
    plain line as the counts change and every 10 s otherwise).

    Exits 1 when a variant failed or a Job did not finish; else 4 when a whole result its
    runner wrote to the lake was not read from it (each such variant says why: the object
    missing, partial, another digest, a newer schema, the store down, refusing or hanging),
    though its pod's copy was stored. The metrics are a side output:
    where they cannot be written or pushed, one line says so and why, and the exit code is
    still the gather's.
    """
    options = GatherOptions(
        timeout_s=timeout, wait=not no_wait, record=not keep, progress=not no_progress
    )
    outcomes = gather_workflow(settings, workflow, cluster, options, lake)
    if metrics_textfile is not None or gateway is not None:
        observed = [job for outcome in outcomes for job in outcome.observed]
        for failure in _metrics(settings, workflow, observed, metrics_textfile, gateway):
            click.echo(f"warning: {failure}", err=True)
    recorded = [v for o in outcomes for record, _ in o.records for v in record.variants]
    failed = sum(v.state == "failed" for v in recorded)
    failed += sum(len(unfinished.failed) for o in outcomes for unfinished in o.unfinished)
    unfinished = sum(len(o.unfinished) for o in outcomes)
    missed = sum(len(o.lake.missed) for o in outcomes)
    not_from_lake = f"{plural(missed, 'whole result')} not read from the lake"
    if failed or unfinished:
        raise click.ClickException(
            f"{plural(failed, 'variant')} failed, {plural(unfinished, 'Job')} did not finish"
            f"{f'; {not_from_lake}' if missed else ''}; see above"
        )
    if missed:
        raise NotFromLake(f"every variant stored, but {not_from_lake}; see above")


def _metrics(
    settings: Settings,
    workflow: str,
    observed: list[ObservedJob],
    textfile: Path | None,
    gateway: Pushgateway | None,
) -> list[str]:
    """Write and push the metrics where asked; what failed, a line each."""
    try:
        # When each variant last brought a result, from every stored and recorded run: a
        # gather that found nothing new must not make the series vanish.
        with open_store(settings.database) as store:
            last = last_results(every_run(store, settings.root, workflow), datetime.now(UTC))
    except (StoreError, HistoryError) as error:
        return [f"no metrics written or pushed: {error}"]
    registry = build_registry(observed, last, settings.read_prices(settings.root, CHECKOUT))
    failures = []
    if textfile is not None:
        try:
            write_textfile(registry, textfile)
        except OSError as error:
            failures.append(f"metrics not written to {textfile}: {error}")
    if gateway is not None:
        try:
            push(registry, gateway, workflow)
        except PushFailed as error:
            failures.append(str(error))
    return failures


@click.command()
@click.option("--workflow", required=True, help="The workflow id.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(list(REPORT_RENDERERS)),
    default="text",
    help="markdown suits a pull-request comment; html is one self-contained page with plots.",
)
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    help="Write this file instead of stdout [default for html: report.html]",
)
@click.option(
    "--baseline",
    "baseline_ref",
    help="Compare with the results/ records at this git revision (main, a tag, a commit).",
)
@click.option(
    "--baseline-job",
    "baseline_jobs",
    multiple=True,
    metavar="NAME",
    help="Compare with this stored Job's runs (repeatable): an earlier spec revision, or an "
    "earlier local try of `localrun`.",
)
@click.option(
    "--threshold",
    default=0.05,
    type=click.FloatRange(0, 1, max_open=True),
    help="A slowdown beyond this fraction, with disjoint CIs, is a regression.",
)
@click.option(
    "--job",
    "jobs",
    multiple=True,
    metavar="NAME",
    help="Report this Job (repeatable), e.g. an older spec revision's "
    "[default: the newest Job of each cluster and target]",
)
@click.option(
    "--all-revisions",
    is_flag=True,
    help="Combine every Job: each variant from the newest Job that ran it, named per row.",
)
@click.option(
    "--cluster",
    help=f"Only this cluster's runs, and its baseline's (`{LOCAL_CLUSTER}`: localrun's tries) "
    "[default: every cluster's]",
)
@click.option(
    "--trend",
    is_flag=True,
    help="Each variant's p50 over every run, the history's own noise as a band, and each "
    "change beyond it with the run it began at (text, markdown, json, html).",
)
@click.option(
    "--window",
    default=WINDOW,
    type=click.IntRange(2, 1000),
    help="--trend: how many usable runs before a run make its reference.",
)
@click.option(
    "--min-history",
    default=MIN_HISTORY,
    type=click.IntRange(2, 1000),
    help="--trend: usable runs a run needs before it to be judged.",
)
@click.option(
    "--across-stacks",
    is_flag=True,
    help="Compare variants measured on different stacks (driver, CUDA or library build, MIG "
    "profile, power limit, CPU), naming what differs [default: only within a stack; a trend "
    "starts afresh where the stack changed].",
)
@report_lake_option
@pass_settings
def report(
    settings: Settings,
    workflow: str,
    output_format: ReportFormat,
    output: Path | None,
    baseline_ref: str | None,
    threshold: float,
    jobs: tuple[str, ...],
    all_revisions: bool,
    baseline_jobs: tuple[str, ...],
    cluster: str | None,
    trend: bool,
    window: int,
    min_history: int,
    across_stacks: bool,
    lake: LakeUrl | None,
) -> None:
    """Report a workflow's stored results.

    Reads the database and the records in results/ (so a fresh clone can report too), or
    with --lake the runs `collector sync` published there and nothing else, and
    answers the design note's questions where the data allows: latency per GPU type, the
    best configuration of a sweep, a ranking of models; each median with a 95 % confidence
    interval. With --baseline, flags significant regressions against that revision; with
    --baseline-job, against those stored Jobs (e.g. `localrun`'s try before an edit).

    Each spec revision runs as a new Job per target. The report shows the newest Job of each
    cluster and target, every failed variant of it included; the Jobs table lists the older
    ones, which --job NAME reports and --all-revisions combines. A local try of a Job has the
    Job's name: --cluster keeps a cluster's runs (or `local`'s) apart from the others'.
    """
    if jobs and all_revisions:
        raise click.UsageError("--job and --all-revisions exclude each other")
    if trend and (jobs or all_revisions or baseline_ref or baseline_jobs or output_format == "csv"):
        raise click.UsageError(
            "--trend shows every run: it takes no --job, --all-revisions, --baseline or "
            "--baseline-job, and writes text, markdown, json or html"
        )
    if min_history > window:
        raise click.UsageError(f"--min-history {min_history} exceeds --window {window}")
    if baseline_ref and baseline_jobs:
        raise click.UsageError("--baseline and --baseline-job exclude each other")
    try:
        with _stored(settings, lake, workflow) as (store, records):
            every_run = merged(store.runs(workflow), runs_of(records))
            tried = store.reuses(workflow)
        earlier = records_at(settings.root, baseline_ref, workflow) if baseline_ref else None
        runs = in_cluster(every_run, cluster)
        baseline = in_cluster(runs_of(earlier), cluster) if earlier is not None else None
        notes = notes_of(settings.root, workflow, [*records, *(earlier or [])], runs, tried)
    except (StoreError, HistoryError, LakeRunsError, ObjectStoreError) as error:
        raise click.ClickException(str(error)) from None
    if not runs and every_run:
        clusters = sorted({run.job.cluster for run in every_run})
        raise click.ClickException(
            f"no results for workflow {workflow!r} in cluster {cluster!r}; it has results in "
            f"{', '.join(clusters)}"
        )
    if not runs:
        raise click.ClickException(
            f"no results for workflow {workflow!r} in {lake}: run `collector sync` where it "
            "was gathered"
            if lake is not None
            else f"no results for workflow {workflow!r} in {settings.database} or "
            f"{RESULTS}/{workflow}/: run `collector gather` first"
        )
    if trend:
        rule = Rule(window=window, min_history=min_history, floor=threshold)
        trended = build_trend(workflow, runs, notes, rule, across_stacks=across_stacks)
        _write(settings, trended, output_format, output, TREND_RENDERERS)
        return
    prices = pricing_of(settings.root, workflow, partial(settings.read_prices, settings.root))
    try:
        built = build_report(
            runs,
            baseline=baseline,
            regression_threshold=threshold,
            jobs=jobs,
            all_revisions=all_revisions,
            notes=notes,
            baseline_jobs=baseline_jobs,
            prices=prices,
            across_stacks=across_stacks,
        )
    except JobChoiceError as error:
        raise click.ClickException(str(error)) from None
    _write(settings, built, output_format, output, REPORT_RENDERERS)


@contextmanager
def _stored(
    settings: Settings, lake: LakeUrl | None, workflow: str
) -> Iterator[tuple[Store, list[JobRecord]]]:
    """The runs to report and their records: the root's database and results/, or the
    lake's published runs in a store held in memory."""
    if lake is None:
        records = records_in(settings.root, workflow)
        with open_store(settings.database) as store:
            yield store, records
        return
    with lake_runs(ObjectStore.for_lake(lake), lake, workflow) as found:
        yield found.store, found.records


def _write(
    settings: Settings,
    shown: Shown,
    output_format: ReportFormat,
    output: Path | None,
    render: Renderers[Shown],
) -> None:
    """Render `shown` in `output_format` to stdout or `output` (html: report.html)."""
    text = render[output_format](shown)
    if output is None and output_format == "html":
        output = settings.root / HTML_REPORT
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    if output.is_dir():
        raise click.ClickException(
            f"--output {output} is a folder; name the file to write, e.g. {output / HTML_REPORT}"
        )
    output.write_text(text, encoding="utf-8")
    click.echo(f"wrote {output}", err=True)


@click.command()
@click.option("--workflow", required=True, help="The workflow id.")
@click.option("--cluster", help="Only this cluster [default: every cluster dist/ runs it in]")
@pass_settings
def status(settings: Settings, workflow: str, cluster: str | None) -> None:
    """Show where a workflow's Jobs stand, and why anything waits.

    Read-only: lists the Jobs and pods once and reads the events of pending pods (the
    scheduler's reasons: no node with that GPU, quota, preemption).
    """
    pending, done = pending_jobs(settings, workflow, cluster)
    namespace = partial(job_namespace, pending)
    explicit = cluster is not None
    for name, client in confirmed_clusters(settings, list(pending), namespace, explicit, done):
        try:
            click.echo(format_status(workflow_status(client, pending[name])))
        except KubeError as error:
            raise click.ClickException(str(error)) from None


class Unknown(click.ClickException):
    """A standing the check cannot tell: exit 3, apart from missing data's 1."""

    exit_code = 3


@click.command("check")
@click.option(
    "--scheduled",
    is_flag=True,
    help="Check that every scheduled workflow brought a result within its period plus a grace.",
)
@click.option(
    "--workflow",
    "workflows",
    multiple=True,
    help="Only this workflow (repeatable) [default: every one with a schedule or a spec "
    "with scheduling.every]",
)
@click.option(
    "--grace",
    callback=_duration_option,
    help="How late a result may be beyond its period (90s, 30m, 2h) [default: the last "
    "run's deadline]",
)
@now_option("Check")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    help="json: one object on stdout, for CI to read.",
)
@pass_settings
def check(
    settings: Settings,
    scheduled: bool,
    workflows: tuple[str, ...],
    grace: float | None,
    now: str | None,
    output_format: str,
) -> None:
    """Alert on missing data: exit 1 when a scheduled workflow has no new result, 3 when
    its standing cannot be told.

    For each workflow with a schedule (schedules/<workflow>.json, written by `benchfleet
    schedule`), the latest finish of a variant that succeeded, in the database or results/,
    must be within the period plus the grace, and the last run started must not have ended
    without any result. Where it is not so, says what is missing and why: no run started
    for the period (the last one unrecorded, or the scheduled CI job not running), the last
    run recorded without a result, and for each Job dist/ still holds, from the cluster: not
    applied by Flux, pending (Kueue's queue, unschedulable), failing, or ended and waiting
    for `collector gather`. A workflow whose spec is scheduled but that has no schedule file
    (never started, or the file deleted), an unreadable schedule, or specs that cannot be
    read, are unknown: exit 3, unless data is missing too.
    """
    if not scheduled:
        raise click.UsageError("say what to check: --scheduled (the only check so far)")
    moment = moment_of(now)
    allowance = timedelta(seconds=grace) if grace is not None else None
    states, unknown = read_schedules(settings.root)
    by_spec = settings.read_scheduled(settings.root)
    if by_spec is None:
        unknown.append(
            "cannot tell which workflows the specs schedule: they cannot be read (see above); "
            f"only those with a file in {SCHEDULES}/ are checked"
        )
    known = {state.workflow for state in states}
    unstarted = {w: every for w, every in (by_spec or {}).items() if w not in known}
    if strange := set(workflows) - known - set(unstarted):
        raise click.ClickException(
            f"no schedule for {', '.join(sorted(strange))} in {SCHEDULES}/, and no spec "
            f"schedules it; scheduled: {', '.join(sorted(known | set(unstarted))) or 'none'}"
        )
    results = []
    try:
        with open_store(settings.database) as store:
            for state in states:
                if workflows and state.workflow not in workflows:
                    continue
                checked = check_schedule(
                    settings.root,
                    state,
                    every_run(store, settings.root, state.workflow),
                    now=moment,
                    grace=allowance,
                    statuses=partial(_statuses, settings),
                )
                results.append(checked)
            for workflow, every in sorted(unstarted.items()):
                if not workflows or workflow in workflows:
                    runs = every_run(store, settings.root, workflow)
                    unknown.append(never_started(workflow, every, runs, moment))
    except (StoreError, HistoryError, WorkloadError) as error:
        raise click.ClickException(str(error)) from None
    _say_standings(results, unknown, moment, output_format)
    overdue = [checked.workflow for checked in results if checked.overdue]
    if overdue:
        raise click.ClickException(f"missing data: {', '.join(overdue)}; unknown: {len(unknown)}")
    if unknown:
        raise Unknown(f"{plural(len(unknown), 'standing')} unknown; see above")


def _say_standings(
    results: Sequence[Checked], unknown: Sequence[str], now: datetime, output_format: str
) -> None:
    """Each workflow's standing, and each that cannot be told, in `output_format`."""
    if output_format == "json":
        document = {
            "now": now.isoformat(),
            "workflows": [checked_json(checked) for checked in results],
            "unknown": list(unknown),
        }
        click.echo(json.dumps(document, indent=2))
        return
    for line in unknown:
        click.echo(shown(line))
    for checked in results:
        click.echo(shown(standing(checked)))
        for reason in (*checked.clocks, *checked.reasons):
            click.echo(shown(f"  - {reason}"))
    if not results and not unknown:
        click.echo(
            f"no workflow is scheduled (no file in {SCHEDULES}/, no spec with "
            "scheduling.every): nothing to check"
        )


def _statuses(settings: Settings, cluster: str, jobs: Sequence[ExpectedJob]) -> list[JobStatus]:
    """The Jobs as `cluster` shows them, through a client confirmed to reach it."""
    namespaces = [jobs[0].identity.namespace]
    try:
        for _, client in confirmed_clusters(settings, [cluster], lambda _: namespaces, True):
            return workflow_status(client, jobs)
    except (click.ClickException, KubeError) as error:
        message = error.message if isinstance(error, click.ClickException) else str(error)
        raise Unseen(message) from None
    return []


@click.command("samples")
@click.option("--workflow", required=True, help="The workflow id.")
@click.option("--cluster", help="Only this cluster [default: every cluster with such runs]")
@pass_settings
def samples_command(settings: Settings, workflow: str, cluster: str | None) -> None:
    """Read the per-iteration samples of stored runs from their pods' logs.

    gather stores each result from its pod's termination message, which holds everything but
    the samples (the report needs none: the runner summarises them). This reads them, one
    log request per pod, while the pods are still in the cluster; a pruned Job's are gone.
    """
    try:
        with open_store(settings.database) as store:
            unread = [r for r in store.samples_unread(workflow) if cluster in (None, r.job.cluster)]
            clusters = sorted({run.job.cluster for run in unread})

            def stored_namespaces(name: str) -> list[str]:
                return sorted({r.job.namespace for r in unread if r.job.cluster == name})

            for name, client in confirmed_clusters(
                settings, clusters, stored_namespaces, cluster is not None
            ):
                runs = [run for run in unread if run.job.cluster == name]
                done = read_samples(client, store, runs)
                for pod, why in done.missing.items():
                    click.echo(f"{name}: {pod}: samples not read: {why}", err=True)
                click.echo(
                    f"{name}: read the samples of {done.added} of {plural(len(runs), 'run')}"
                )
    except (StoreError, KubeError) as error:
        raise click.ClickException(str(error)) from None
    if not unread:
        click.echo(f"every stored run of {workflow} has its samples (or none to read)")


@click.command("clean")
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

    def cluster_namespaces(name: str) -> list[str]:
        return namespaces(settings.root, name)

    try:
        with open_store(settings.database) as store:
            for name, client in confirmed_clusters(
                settings, clusters, cluster_namespaces, cluster is not None
            ):
                cleaned = clean(client, settings.root, store, name, dry_run=dry_run)
                for namespace, refusal in cleaned.forbidden.items():
                    click.echo(
                        f"{name}/{namespace}: skipped: the credential may not list Jobs here "
                        f"({refusal})",
                        err=True,
                    )
                for decision in cleaned.decisions:
                    verb = decision.action if not dry_run else f"would {decision.action}"
                    click.echo(
                        f"{name}/{decision.namespace} Job {decision.job}: {verb}: {decision.why}"
                    )
    except (StoreError, KubeError, OSError) as error:
        raise click.ClickException(str(error)) from None


@click.command("forget")
@click.option(
    "--cluster",
    required=True,
    help=f"The cluster whose runs to forget; `{LOCAL_CLUSTER}` is localrun's on this machine.",
)
@click.option("--workflow", help="Only this workflow's runs [default: every workflow's]")
@click.option(
    "--job",
    "jobs",
    multiple=True,
    metavar="NAME",
    help="Only this Job's runs (repeatable) [default: every Job's]",
)
@click.option("--dry-run", is_flag=True, help="Print what would go; delete nothing.")
@click.option(
    "--everywhere",
    is_flag=True,
    help="Remove the runs from every place they were written: the lake (published files and "
    "raw objects), results/ and the database; needs --workflow.",
)
@lake_option("with --everywhere, remove the runs' files there too")
@pass_settings
def forget_command(
    settings: Settings,
    cluster: str,
    workflow: str | None,
    jobs: tuple[str, ...],
    dry_run: bool,
    everywhere: bool,
    lake: LakeUrl | None,
) -> None:
    """Delete stored runs from the database, e.g. local tries: `--cluster local`.

    A cluster's runs are forgotten only where results/ records them (the report still reads
    the record there); runs held only in the database are refused, since they would be lost.

    With --everywhere the runs go from every place they were written, for good: the lake's
    published files and the raw objects their runners wrote (with --lake or
    $BENCHFLEET_LAKE), their records in results/ (commit the deletion), and the database.
    """
    if everywhere:
        if workflow is None:
            raise click.UsageError(
                "--everywhere needs --workflow (the lake's folders are per workflow)"
            )
        _forget_everywhere(settings, cluster, workflow, jobs, lake, dry_run)
        return
    try:
        with open_store(settings.database) as store:
            forgotten = forget(
                store, settings.root, cluster, workflow=workflow, jobs=jobs, dry_run=dry_run
            )
    except (StoreError, ForgetError) as error:
        raise click.ClickException(str(error)) from None
    verb = "would forget" if dry_run else "forgot"
    for job in forgotten.jobs:
        click.echo(f"{verb} {plural(job.runs, 'run')} of {job.workflow} Job {job.job} in {cluster}")
    if forgotten.recorded:
        click.echo(
            f"still recorded in {RESULTS}/, and so in the report: "
            f"{', '.join(job.job for job in forgotten.recorded)}; "
            "`git rm` a record to forget it for everyone",
            err=True,
        )
    click.echo(f"{verb} {plural(forgotten.runs, 'run')} in all", err=True)


@click.command("sync")
@click.option("--workflow", help="Only this workflow's Jobs [default: every workflow's]")
@lake_option("publish the store's recorded Jobs there")
@pass_settings
def sync_command(settings: Settings, workflow: str | None, lake: LakeUrl | None) -> None:
    """Publish the store's finished Jobs to the result lake, each once.

    Each Job recorded in results/ and held in the database goes to the lake's
    runs/workflow=W/cluster=C/date=D/ as <job>.jsonl.gz (all of it, samples too),
    <job>.variants.parquet and <job>.samples.parquet (for DuckDB, pyarrow, a notebook);
    `collector report --lake` reads them on any machine. A file is written once and never
    over: a Job another collector published already is counted as there where it holds the
    same run, and is an error where it does not. A sync interrupted at any point is
    finished by running it again.
    """
    if lake is None:
        raise click.UsageError(f"name the lake: --lake s3://BUCKET/PREFIX or ${LAKE_ENV}")
    try:
        with open_store(settings.database) as store:
            done = sync(store, settings.root, ObjectStore.for_lake(lake), lake, workflow)
    except (StoreError, SyncError, ObjectStoreError) as error:
        raise click.ClickException(str(error)) from None
    for name in done.published:
        click.echo(f"published {name}")
    for name in done.already:
        click.echo(f"already in the lake, the same run: {name}")
    if done.unrecorded:
        click.echo(
            f"not published, not recorded in {RESULTS}/ (not finished, or gathered with "
            f"--keep): {', '.join(done.unrecorded)}",
            err=True,
        )
    click.echo(
        f"{lake}: published {plural(len(done.published), 'Job')}, "
        f"{len(done.already)} there already, {done.skipped} published before",
        err=True,
    )


def _forget_everywhere(
    settings: Settings,
    cluster: str,
    workflow: str,
    jobs: tuple[str, ...],
    lake: LakeUrl | None,
    dry_run: bool,
) -> None:
    try:
        with open_store(settings.database) as store:
            where = (ObjectStore.for_lake(lake), lake) if lake is not None else None
            gone = forget_everywhere(
                store, settings.root, cluster, workflow, jobs=jobs, lake=where, dry_run=dry_run
            )
    except (StoreError, ForgetError, ObjectStoreError, OSError) as error:
        raise click.ClickException(str(error)) from None
    verb = "would remove" if dry_run else "removed"
    for job in gone.jobs:
        click.echo(f"{verb} {workflow} Job {job} in {cluster}")
    runs = sum(job.runs for job in gone.stored)
    click.echo(
        f"{verb} {plural(runs, 'run')} from the database, {plural(len(gone.records), 'record')} "
        f"from {RESULTS}/ (commit the deletion), "
        + (
            f"{plural(len(gone.lake_keys), 'object')} from {lake}"
            if lake is not None
            else f"nothing from a lake (none named: --lake or ${LAKE_ENV})"
        ),
        err=True,
    )


@click.command("retention")
@lake_option("set the retention of its raw objects")
@click.option(
    "--raw-days",
    required=True,
    type=click.IntRange(1, MAX_RAW_DAYS),
    help="Keep what runners wrote under raw/ this many days; published runs are kept.",
)
def retention_command(lake: LakeUrl | None, raw_days: int) -> None:
    """Set the bucket's lifecycle rule: raw objects expire after --raw-days days.

    The store expires them itself, with no collector running (S3, and SeaweedFS: see
    docs/lake.md). Published runs (runs/) have no rule and are kept. Other rules of the
    bucket stay as they are. Needs credentials that may configure the bucket.
    """
    if lake is None:
        raise click.UsageError(f"name the lake: --lake s3://BUCKET/PREFIX or ${LAKE_ENV}")
    try:
        rule = set_raw_days(lake, raw_days)
    except ObjectStoreError as error:
        raise click.ClickException(str(error)) from None
    click.echo(
        f"{lake}: objects under s3://{lake.bucket}/{rule['Filter']['Prefix']} expire "
        f"{plural(raw_days, 'day')} after they were written (rule {rule['ID']}); runs are kept"
    )


COMMANDS: Final = (
    gather,
    report,
    status,
    check,
    samples_command,
    clean_command,
    forget_command,
    sync_command,
    retention_command,
)
"""The `collector` command's subcommands."""
