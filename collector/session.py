"""One command's session with the fleet: which clusters it works on, a client confirmed to
reach each, the Jobs left to follow there, and the gather of a workflow across them. The
click commands in collector/cli.py are thin layers over these."""

import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import FrameType

import click

from collector.credentials import CredentialsError, connect
from collector.gather import Gatherer, GatherOptions, GatherOutcome
from collector.identity import UnconfirmedCluster, confirm_cluster
from collector.kube import KubeClient, KubeError
from collector.lakeread import LIMITS, LakeReader, StoreReader
from collector.progress import Progress
from collector.workload import ExpectedJob, WorkloadError, clusters_with, expected_jobs
from contract.lake import LakeUrl
from contract.layout import RESULTS, recorded_clusters, recorded_jobs, workload_file
from contract.objectstore import ObjectStore
from contract.objectstore import StoreError as ObjectStoreError
from contract.pricing import PriceList
from contract.text import plural, shown
from contract.variant import VariantRef
from store.database import StoreError, open_store

PriceReader = Callable[[Path, str], PriceList | None]
"""The fleet's price list under a checkout's root, as the checkout holds it (`CHECKOUT`) or
as a commit does: None where it prices nothing (no fleet file, no prices in it, or a file
that cannot be read, which the reader says on stderr). Handed in by the composition root
(benchfleet/collector.py), so that the collector never imports synth, whose loader reads the
fleet file."""


ScheduleReader = Callable[[Path], Mapping[str, int] | None]
"""The workflows whose specs under a checkout's root have `scheduling.every`, with it in
seconds: {} where there are no specs, None where they cannot be read (the reader says why on
stderr). Handed in like PriceReader."""


@dataclass(frozen=True)
class Settings:
    """Options every command shares, how its results are priced, and which workflows the
    specs schedule."""

    root: Path
    database: Path
    credentials_dir: Path
    context: str | None
    read_prices: PriceReader
    read_scheduled: ScheduleReader
    read_stores: StoreReader


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


def _client(
    settings: Settings, cluster: str, namespaces: list[str], deadline: float | None
) -> KubeClient:
    """A client for `cluster`, once the cluster it reaches has said it is `cluster` (in the
    first of `namespaces` it may read), asking no longer than `deadline` (time.monotonic())."""
    try:
        connection = connect(
            cluster, context=settings.context, credentials_dir=settings.credentials_dir
        )
        client = KubeClient(connection.api_client, redactor=connection.redactor)
        confirm_cluster(client, cluster, namespaces, connection.provider, deadline)
    except (CredentialsError, UnconfirmedCluster, KubeError) as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"{cluster}: credentials from {connection.provider}", err=True)
    return client


def confirmed_clusters(
    settings: Settings,
    clusters: list[str],
    namespaces_of: Callable[[str], list[str]],
    explicit: bool,
    done: Sequence[str] = (),
    *,
    deadline: float | None = None,
) -> Iterator[tuple[str, KubeClient]]:
    """Each cluster with a client confirmed to reach it, each asked no longer than
    `deadline` (time.monotonic()).

    A cluster named with --cluster must be reached; of the clusters found in dist/, those
    without credentials, or whose credentials reach another cluster, are skipped, saying so,
    and it is an error only when none is left and none was `done` (had nothing left to do,
    which needs no client: a gather with nothing new there did its work).
    """
    skipped: list[str] = []
    reached = 0
    for name in clusters:
        try:
            client = _client(settings, name, namespaces_of(name), deadline)
        except click.ClickException as error:
            if explicit:
                raise
            click.echo(f"{name}: skipped: {error.message}", err=True)
            skipped.append(name)
            continue
        reached += 1
        yield name, client
    if skipped and not reached and not done:
        raise click.ClickException(
            f"no cluster could be confirmed ({', '.join(skipped)}); nothing was gathered"
        )
    if skipped:
        click.echo(f"skipped {', '.join(skipped)}: see above", err=True)


def pending_jobs(
    settings: Settings, workflow: str, cluster: str | None
) -> tuple[dict[str, list[ExpectedJob]], list[str]]:
    """The Jobs of `workflow` not yet recorded, by cluster, and the clusters with none left
    (said on stderr)."""
    pending, done = {}, []
    for name in _clusters(settings, workflow, cluster):
        expected = _expected(settings, workflow, name)
        if expected:
            pending[name] = expected
        else:
            click.echo(f"{name}: nothing left of {workflow} to follow", err=True)
            done.append(name)
    return pending, done


def job_namespace(pending: dict[str, list[ExpectedJob]], cluster: str) -> list[str]:
    """The namespace of a cluster's expected Jobs (a workflow runs in one)."""
    return [pending[cluster][0].identity.namespace]


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


def _was(count: int) -> str:
    return "was" if count == 1 else "were"


def _index_namer(expected: Sequence[ExpectedJob]) -> Callable[[str, int, VariantRef | None], str]:
    """Names a Job's index for the summary: `tiny-mlp fp16 batch 4 at index 3`, with the
    variant from the stored run or else from dist/'s config.json; `index 3` when neither
    knows it."""
    by_job = {job.identity.job: job.variants for job in expected}

    def name(job: str, index: int, variant: VariantRef | None) -> str:
        known = variant or by_job.get(job, {}).get(index)
        return f"{known.describe()} at index {index}" if known else f"index {index}"

    return name


def _summary(outcome: GatherOutcome, expected: Sequence[ExpectedJob] = ()) -> list[str]:
    """What gather did in one cluster, for people; `expected` names the variants of indexes
    whose stored run does not."""
    name = _index_namer(expected)
    lines = [
        f"{outcome.cluster}: stored {plural(outcome.stored_new, 'variant run')} "
        f"({outcome.already_stored} {_was(outcome.already_stored)} stored before)"
    ]
    for record, path in outcome.records:
        failed = [v for v in record.variants if v.state == "failed"]
        where = f"wrote {path}" if path else "record unchanged (or --keep)"
        lines.append(
            f"  {record.job}: {record.outcome}, {len(record.variants) - len(failed)} ok, "
            f"{len(failed)} failed; {where}"
        )
        lines += [f"    {name(record.job, v.index, v.variant)}: {v.explanation}" for v in failed]
        if record.failure:
            lines.append(f"    the Job failed: {record.failure}")
    for unfinished in outcome.unfinished:
        job = unfinished.job
        lines.append(f"  {job}: NOT FINISHED: {unfinished.why}")
        lines += [
            f"    {name(job, v.index, v.variant)}: failed: {v.explanation}"
            for v in unfinished.failed
        ]
        lines += [
            f"    {name(job, s.index, None)}: {s.phase}: {s.explanation}"
            for s in unfinished.waiting
        ]
        lines += [
            f"    {name(job, k.variant.index, k.variant.variant)}: kept unread: {k.why}"
            for k in unfinished.kept
        ]
    lines += _lake_lines(outcome, name)
    # Explanations quote what pods reported and what spec files named: one line each.
    return [shown(line) for line in lines]


def _lake_lines(
    outcome: GatherOutcome, name: Callable[[str, int, VariantRef | None], str]
) -> list[str]:
    """What the lake gave, and each variant it did not give the whole result of, with why."""
    lake = outcome.lake
    if not lake.read and not lake.missed:
        return []
    down = f" ({lake.down})" if lake.down else ""
    lines = [f"  lake: {plural(lake.read, 'whole result')} read, {len(lake.missed)} not{down}"]
    lines += [
        f"    {name(job, v.index, v.variant)}: stored from its pod "
        f"({v.result_source or 'no result'}): {v.explanation}"
        for job, v in lake.missed
    ]
    return lines


def _lake_reader(lake: LakeUrl, env: Mapping[str, str]) -> LakeReader:
    """The reader of `lake`'s whole results, its store found by the AWS variables in `env`;
    raises click.ClickException where no client can be made."""
    try:
        return LakeReader(lake, ObjectStore.for_lake(lake, env, LIMITS))
    except ObjectStoreError as error:
        raise click.ClickException(str(error)) from None


def lake_readers(settings: Settings, lake: LakeUrl | None) -> Callable[[str], LakeReader | None]:
    """Each cluster's reader of whole results, by cluster name: `lake` for every cluster
    where given (its store found by the standard AWS variables), else the cluster's results
    store as the fleet file names it (its endpoint, region and CA; the credentials still the
    standard variables'); None where there is neither."""
    if lake is not None:
        given = _lake_reader(lake, os.environ)
        return lambda cluster: given
    stores = settings.read_stores(settings.root)
    made: dict[str, LakeReader] = {}

    def of(cluster: str) -> LakeReader | None:
        address = stores.get(cluster)
        if address is not None and cluster not in made:
            made[cluster] = _lake_reader(address.url, address.env(os.environ))
        return made.get(cluster)

    return of


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived (a CI job cancelled, a pod stopped): gather ends as on Ctrl-C."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """SIGTERM interrupts like SIGINT while inside; its earlier handler is put back after."""
    earlier = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, earlier)


def gather_workflow(
    settings: Settings,
    workflow: str,
    cluster: str | None,
    options: GatherOptions,
    lake: LakeUrl | None = None,
) -> list[GatherOutcome]:
    """Follow and store `workflow` in every cluster that runs it (or `cluster`), its whole
    results read from `lake` where its runners wrote them there, printing each cluster's
    summary as it ends (and its progress on stderr as it goes, unless `options.progress` is
    off); raises click.ClickException with what to do on errors."""
    # One deadline for the whole gather: confirming each cluster and following it spend
    # the same --timeout, so a fleet of unreachable clusters ends in it too.
    deadline = time.monotonic() + options.timeout_s
    outcomes = []
    readers = lake_readers(settings, lake)
    try:
        with open_store(settings.database) as store:
            pending, done = pending_jobs(settings, workflow, cluster)
            namespace = partial(job_namespace, pending)
            for name, client in confirmed_clusters(
                settings, list(pending), namespace, cluster is not None, done, deadline=deadline
            ):
                expected = pending[name]
                reader = readers(name)
                total = sum(job.variant_count for job in expected)
                progress = Progress(sys.stderr, total, live=sys.stderr.isatty())
                gatherer = Gatherer(
                    client,
                    store,
                    settings.root,
                    expected,
                    options=options,
                    on_progress=progress.update if options.progress else lambda *shown: None,
                    lake=reader,
                )
                try:
                    with _sigterm_interrupts():
                        outcome = gatherer.run(deadline=deadline)
                except KeyboardInterrupt as interrupt:
                    how = " (SIGTERM)" if isinstance(interrupt, Terminated) else ""
                    raise click.ClickException(
                        f"interrupted{how}: {plural(gatherer.stored_new, 'variant run')} "
                        f"{_was(gatherer.stored_new)} stored; "
                        "run gather again to resume"
                    ) from None
                finally:
                    progress.finish()
                outcomes.append(outcome)
                for line in _summary(outcome, expected):
                    click.echo(line)
                click.echo(
                    f"{name}: API requests {dict(sorted(client.requests.items()))}"
                    + (f", lake objects read {reader.reads}" if reader is not None else ""),
                    err=True,
                )
            if done and not outcomes:
                click.echo(f"nothing new to gather of {workflow} ({', '.join(done)}: all recorded)")
    except (StoreError, KubeError) as error:
        raise click.ClickException(str(error)) from None
    except OSError as error:
        raise click.ClickException(
            f"cannot write {error.filename}: {error.strerror}; every finished variant is in "
            f"{settings.database}: fix that and run gather again to write the records"
        ) from None
    return outcomes
