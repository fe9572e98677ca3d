"""`collector gather`: follow one workflow's Jobs in one cluster until they finish, storing each
variant as it ends, then record every finished Job in results/.

Order matters and is kept: a variant is in the database before anything else is done with
it, and a Job's record is written only when the Job has finished and every one of its
variants is stored. Nothing is deleted here: a Job leaves the cluster when its record, once
committed, makes `make synth` drop it and Flux prune it.
"""

import logging
import time
from bisect import insort
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from collector.allocation import allocations, job_times, own_seconds, pod_time
from collector.follow import Snapshot, WorkflowWatch, listed_once
from collector.handback import hand_back
from collector.harvest import (
    Harvest,
    earlier_needs_log,
    ended_attempts,
    gone,
    harvest,
    harvest_earlier,
    needs_log,
    read_kept,
    settled,
    unseen,
)
from collector.indexes import (
    IndexState,
    failure_condition,
    index_states,
    job_failure,
    job_finished,
    summary_counts,
)
from collector.job_progress import JobProgress
from collector.kube import KubeClient, KubeError, Object
from collector.lakeread import Claim, Fetched, LakeReader, covered
from collector.lakerefs import Reference, references
from collector.logreads import LogReads
from collector.logs import job_context
from collector.metrics import ObservedJob
from collector.pods import PodState, completion_index, held_pod, is_stuck
from collector.running import RunningProgress, RunningView
from collector.status import explain_waiting, pods_by_job
from collector.workload import ExpectedJob, expected_from, label_selector
from contract.allocation import Allocation
from contract.clocks import ahead_by, skew_text, stamp
from contract.instant import instant
from contract.layout import GROUPS_ANNOTATION, JOB_NAME_LABEL, recorded_jobs
from contract.records import JobIdentity, JobRecord, StoredVariant, write_record
from contract.text import plural
from store.database import Store, Unread

log = logging.getLogger(__name__)

NO_LAKE = (
    "this collector was given no lake to read it from (the fleet's results_store, or "
    "--lake / $BENCHFLEET_LAKE)"
)


@dataclass(frozen=True)
class GatherOptions:
    """How long to follow, and whether to close the loop."""

    timeout_s: float = 3600.0
    wait: bool = True
    """False: one list, store what has finished, report the rest (no watch)."""
    record: bool = True
    """False (`--keep`): store in the database only; write no results/ record, so the next
    synth keeps the Jobs."""
    batch_wait_s: float = 1.0
    """How long a round waits for changes before it looks at the state again."""
    progress: bool = False
    """Whether progress is shown (by `on_progress`): following, the running pods' progress
    lines are read from their logs too, a few at a time (collector/running.py)."""


@dataclass(frozen=True)
class Unfinished:
    """A Job gather stopped following before it ended, and why."""

    job: str
    why: str
    waiting: tuple[IndexState, ...]
    failed: tuple[StoredVariant, ...] = ()
    """Its variants that failed already (stored, and final)."""
    kept: tuple[Unread, ...] = ()
    """Its variants whose result a newer runner wrote, kept unread."""


@dataclass
class LakeTally:
    """What the lake gave one gather: whole results read from it, and the variants whose
    runner wrote one that it did not give, with why (they were stored from their pod)."""

    read: int = 0
    missed: list[tuple[str, StoredVariant]] = field(default_factory=list)
    """(Job, the variant as stored) for each, by Job and index: kept in that order as they
    come, since a group's pods are harvested in whatever order their reads end."""
    down: str | None = None
    """Why the store stopped being asked, where it did."""


def _job_and_index(missed: tuple[str, StoredVariant]) -> tuple[str, int]:
    return missed[0], missed[1].index


@dataclass(frozen=True)
class GatherOutcome:
    """What one gather in one cluster did."""

    cluster: str
    stored_new: int
    already_stored: int
    records: tuple[tuple[JobRecord, Path | None], ...]
    """Each finished Job's record and where it was written (None with `--keep` or unchanged)."""
    observed: tuple[ObservedJob, ...]
    unfinished: tuple[Unfinished, ...]
    lake: LakeTally = field(default_factory=LakeTally)
    """What the lake gave."""


Counts = dict[str, int]


class Gatherer:
    """One workflow's expected Jobs in one cluster, followed to their end."""

    def __init__(
        self,
        client: KubeClient,
        store: Store,
        root: Path,
        expected: list[ExpectedJob],
        *,
        options: GatherOptions,
        on_progress: Callable[[Counts, RunningView | None], None] = lambda counts, running: None,
        lake: LakeReader | None = None,
    ) -> None:
        self._client = client
        self._lake = lake
        self._fetched: dict[str, list[Fetched]] = {}
        """What the lake gave for each pod not yet stored, by pod."""
        self.lake = LakeTally()
        self._store = store
        self._root = root
        self._options = options
        self._on_progress = on_progress
        self.stored_new = 0
        self.already_stored = 0
        self._jobs = [self._progress(e) for e in expected]
        first = expected[0].identity
        self._recorded = set(recorded_jobs(root, first.workflow, first.cluster))
        self._unmapped: set[str] = set()
        """Finished Jobs left from older revisions that gather cannot read safely."""
        self._running: RunningProgress | None = None

    def run(
        self, clock: Callable[[], float] = time.monotonic, *, deadline: float | None = None
    ) -> GatherOutcome:
        """Follow until every Job has finished and is stored, or the timeout passes (at
        `deadline` on `clock`, where given: a gather's across clusters)."""
        namespaces = {p.expected.identity.namespace for p in self._jobs}
        (namespace,) = namespaces  # a workflow runs in one environment's namespace
        workflow = self._jobs[0].expected.identity.workflow
        selector = label_selector(workflow)
        if deadline is None:
            deadline = clock() + self._options.timeout_s
        self._logs = LogReads(self._client, namespace, deadline)
        self._selector = selector
        if self._options.wait and self._options.progress:
            self._running = RunningProgress(self._client, namespace, clock)
        for progress in self._jobs:
            self._read_kept(progress)
        try:
            if self._options.wait:
                self._follow(namespace, selector, deadline, clock)
            else:
                self._list_once(namespace, selector, deadline, clock)
        finally:
            self._logs.close()
            if self._running is not None:
                self._running.close()
        # The pods seen are let go by now: the records read every stored result back, and
        # holding both was the peak of a large gather.
        return self._outcome()

    def _list_once(
        self, namespace: str, selector: str, deadline: float, clock: Callable[[], float]
    ) -> None:
        snapshot = listed_once(self._client, namespace, selector)
        self._step(snapshot, listed=True)
        self._logs.wait(deadline - clock())
        self._step(snapshot, listed=True)

    def _follow(
        self, namespace: str, selector: str, deadline: float, clock: Callable[[], float]
    ) -> None:
        with WorkflowWatch(self._client, namespace, selector) as watch:
            while not all(progress.finished for progress in self._jobs):
                remaining = deadline - clock()
                if remaining <= 0:
                    break
                watch.wait(min(remaining, self._options.batch_wait_s))
                if watch.snapshot.synced == {"jobs", "pods"}:
                    self._step(watch.snapshot)
            if watch.snapshot.synced != {"jobs", "pods"}:
                raise KubeError(self._unlisted(self._jobs[0].expected.identity.workflow))

    def _unlisted(self, workflow: str) -> str:
        """Why gather saw nothing by its timeout: never that Flux has not applied the Jobs,
        since it could not even ask."""
        return (
            f"could not list the Jobs and pods of {workflow} from the API server at "
            f"{self._client.server} within --timeout ({self._options.timeout_s:g} s); last "
            f"error: {self._client.last_failure or 'none, the server never answered'}"
        )

    def _progress(self, expected: ExpectedJob) -> JobProgress:
        """What the store holds of `expected` before its pods are seen."""
        identity = expected.identity
        stored = self._store.variants(identity.cluster, identity.namespace, identity.job)
        progress = JobProgress(expected, {variant.index: variant.state for variant in stored})
        progress.own_s = {variant.index: own_seconds(variant.result) for variant in stored}
        progress.causes = self._store.causes(identity.cluster, identity.namespace, identity.job)
        self.already_stored += len(progress.stored)
        kept = self._store.unread(identity.cluster, identity.namespace, identity.job)
        progress.unread = {
            e.variant.index: e for e in kept if e.variant.index not in progress.stored
        }
        return progress

    def _read_kept(self, progress: JobProgress) -> None:
        """Store for good the kept results that this collector reads (a newer runner's, kept
        by an older collector)."""
        read = [variant for kept in progress.unread.values() if (variant := read_kept(kept))]
        self._add(progress, read)
        for variant in read:
            del progress.unread[variant.index]

    def _adopt_leftovers(self, snapshot: Snapshot) -> None:
        """Take on finished Jobs of the workflow that dist/ no longer holds (an earlier version
        of the spec) and that have no record: their results would be lost when Flux prunes
        them. Running ones are not waited for: the pull request that changed the spec lets
        Flux prune them."""
        known = {progress.expected.identity.job for progress in self._jobs}
        known |= self._recorded | self._unmapped
        cluster = self._jobs[0].expected.identity.cluster
        for name, job in sorted(snapshot.jobs.items()):
            if name in known or not job_finished(job):
                continue
            # Read with its own groups, from the Job itself: today's dist/ may group otherwise.
            expected = expected_from(cluster, job)
            if expected.unmapped:
                self._unmapped.add(name)
                log.warning(
                    "Job %s is not in dist/ any more and runs %d variants in %d pods, but says "
                    "not which each runs (a synth before %s): not gathered, so that no result "
                    "of it is filed under the wrong variant; `collector clean` keeps it",
                    name,
                    expected.declared,
                    expected.completions,
                    GROUPS_ANNOTATION,
                )
                continue
            log.info("Job %s is not in dist/ any more but finished: gathering it too", name)
            self._jobs.append(self._progress(expected))
            self._read_kept(self._jobs[-1])

    def _step(self, snapshot: Snapshot, *, listed: bool = False) -> None:
        """Store what has ended in `snapshot`; `listed`: it is one list of each kind, the pods
        listed after the Jobs, so no completed index's pod can be missing from it but a gone
        one."""
        self._adopt_leftovers(snapshot)
        counts: Counts = {}
        running: list[str] = []
        grouped = pods_by_job(list(snapshot.pods.values()))
        for progress in self._jobs:
            identity = progress.expected.identity
            progress.job = snapshot.jobs.get(identity.job)
            if progress.job is None:
                counts["pending"] = counts.get("pending", 0) + progress.expected.variant_count
                continue
            # Reading a pod parses its termination message: done for stored indexes at every
            # step, following thousands of variants cost time with every variant stored.
            pods = [
                pod
                for pod in grouped.get(identity.job, [])
                if progress.index_unstored(completion_index(pod))
            ]
            progress.attempts.note(pods)
            states = index_states(progress.job, pods)
            if not listed and any(unseen(s) and progress.awaited(s) for s in states):
                pods, states = self._confirmed(progress)
            progress.keep_unstored(pods, states)
            self._remember_causes(progress, progress.states)
            self._store_earlier(progress)
            self._store_finished(progress)
            hand_back(self._client, progress)
            summary = summary_counts(states, progress.stored, progress.expected.positions)
            for state, number in vars(summary).items():
                counts[state] = counts.get(state, 0) + number
            progress.keep_unstored(pods, states)
            running += [s.pod.name for s in progress.states if s.pod and s.pod.phase == "running"]
        view = self._running.follow(running) if self._running is not None else None
        self._on_progress(counts, view)

    def _confirmed(self, progress: JobProgress) -> tuple[list[Object], list[IndexState]]:
        """The Job's unstored pods and states from one fresh list of its pods: the Job watch
        showed an index completed whose succeeded pod the pod watch has not shown (the two are
        not ordered), and deciding from the watch alone would store a success as failed for
        want of its pod. The list is newer than the Job's status, so a completed index's pod
        it lacks is gone."""
        assert progress.job is not None
        identity = progress.expected.identity
        selector = f"{self._selector},{JOB_NAME_LABEL}={identity.job}"
        listed = self._client.list_pods(identity.namespace, selector, keep=held_pod).items
        pods = [pod for pod in listed if progress.index_unstored(completion_index(pod))]
        progress.attempts.note(pods)
        states = index_states(progress.job, pods)
        return pods, [gone(state) if unseen(state) else state for state in states]

    def _remember_causes(self, progress: JobProgress, states: Iterable[IndexState]) -> None:
        """Keep why each of `states` waits, in the store too, where it says something new."""
        for state in states:
            if state.phase != "pending" or state.pod is None or not is_stuck(state.pod):
                continue
            if _says_more(state.explanation, progress.causes.get(state.index)):
                progress.causes[state.index] = state.explanation
                self._store.remember_cause(
                    progress.expected.identity, state.index, state.explanation
                )

    def _store_earlier(self, progress: JobProgress) -> None:
        """Store what the ended attempts of grouped indexes measured, while their retries are
        still due or running (harvest.harvest_earlier)."""
        fresh: list[StoredVariant] = []
        harvested: list[str] = []
        for state in progress.states:
            if not progress.attempts_unread(state):
                continue
            attempts = [p for p in ended_attempts(state) if p.name not in progress.harvested]
            self._fetch(progress, [(state.index, pod) for pod in attempts])
            # Every read starts here at once; the index waits until all of them are done.
            unread = [
                p
                for p in attempts
                if earlier_needs_log(p, covered(p.message, self._fetched.get(p.name, [])))
                and not self._logs.ready(p.name)
            ]
            if unread:
                continue
            group = progress.expected.slots(state.index)
            gave = {pod.name: self._fetched.get(pod.name, []) for pod in attempts}
            fresh += [
                variant
                for variant in harvest_earlier(state, attempts, group, self._logs.reader(), gave)
                if variant.index not in progress.stored
            ]
            for pod in attempts:
                progress.harvested.add(pod.name)
                self._logs.forget(pod.name)
            harvested += [pod.name for pod in attempts]
        self._add(progress, fresh)
        for name in harvested:
            self._fetched.pop(name, None)

    def _store_finished(self, progress: JobProgress) -> None:
        assert progress.job is not None
        condition = failure_condition(progress.job)
        failure = condition.get("reason") if condition else None
        ended = [
            state
            for state in progress.states
            if settled(state) and progress.awaited(state) and not progress.attempts_unread(state)
        ]
        self._fetch(progress, [(state.index, state.pod) for state in ended if state.pod])
        ready = [
            state
            for state in ended
            if state.pod is None
            or not needs_log(state, self._from_lake(progress, state))
            or self._logs.ready(state.pod.name)
        ]
        fresh: list[StoredVariant] = []
        allocated: dict[int, Allocation] = {}
        for state in ready:
            group = progress.expected.slots(state.index)
            harvested = self._allocated(
                progress,
                state,
                harvest(state, group, failure, self._logs.reader(), self._lake_gave(state)),
            )
            cause = progress.causes.get(state.index)
            fresh += [
                _with_cause(variant, cause)
                for variant in harvested.stored
                if variant.index not in progress.stored
            ]
            # Stored before their index ended (what an earlier attempt measured): their
            # allocation comes now.
            allocated |= {
                variant.index: variant.allocation
                for variant in harvested.stored
                if variant.index in progress.stored and variant.allocation is not None
            }
            self._keep_unread(progress, harvested.unread)
            progress.attempts.forget(state.index)
        self._add(progress, fresh)
        if allocated:
            self._store.allocate(progress.expected.identity, allocated)

    def _fetch(self, progress: JobProgress, pods: Iterable[tuple[int, PodState]]) -> None:
        """Read from the lake the whole results `pods` (each with its completion index) say
        their runners wrote there, once per pod, a few at a time."""
        wanted: list[tuple[str, Reference, Claim]] = []
        identity = progress.expected.identity
        for index, pod in pods:
            if pod.name in self._fetched:
                continue
            named = references(pod.message)
            if named:
                self._fetched[pod.name] = []
            variants = dict(progress.expected.slots(index))
            for reference in named.found:
                variant = variants.get(reference.index) if reference.index is not None else None
                wanted.append((pod.name, reference, Claim(identity, pod.name, variant)))
        if not wanted:
            return
        if self._lake is None:
            fetched = [Fetched(reference, None, NO_LAKE) for _, reference, _ in wanted]
        else:
            fetched = self._lake.fetch_all((reference, claim) for _, reference, claim in wanted)
            self.lake.down = self._lake.down
        for (pod_name, _, _), got in zip(wanted, fetched, strict=True):
            self._fetched.setdefault(pod_name, []).append(got)

    def _lake_gave(self, state: IndexState) -> list[Fetched]:
        return self._fetched.get(state.pod.name, []) if state.pod is not None else []

    def _from_lake(self, progress: JobProgress, state: IndexState) -> bool:
        """Whether the lake gave the whole result of each result `state`'s pod lists."""
        fetched = self._lake_gave(state)
        return state.pod is not None and covered(state.pod.message, fetched)

    def _allocated(self, progress: JobProgress, state: IndexState, harvested: Harvest) -> Harvest:
        """`harvested` with what the cluster allocated to each variant: the index's pods'
        time, all its attempts, split by the variants' own times."""
        expected = progress.expected
        assert progress.job is not None
        fresh = {variant.index: variant.result for variant in harvested.stored}
        own = {
            position: own_seconds(fresh[position]) if position in fresh else None
            for position in expected.positions(state.index)
        }
        own |= {p: progress.own_s.get(p) for p in own if p in progress.stored}
        time = pod_time(
            progress.attempts.attempts(state.index),
            state.attempts,
            state.index,
            job_times(progress.job),
            datetime.now(UTC),
        )
        shares = allocations(time, own, expected.device_type, expected.capacity)

        def with_share(variant: StoredVariant) -> StoredVariant:
            return variant.model_copy(update={"allocation": shares.get(variant.index)})

        return Harvest(
            [with_share(variant) for variant in harvested.stored],
            [replace(kept, variant=with_share(kept.variant)) for kept in harvested.unread],
        )

    def _keep_unread(self, progress: JobProgress, unread: list[Unread]) -> None:
        """Keep what a newer runner wrote, as it arrived, before gather stops waiting for it."""
        if not unread:
            return
        self._store.keep_unread(progress.expected.identity, unread)
        for kept in unread:
            progress.unread.setdefault(kept.variant.index, kept)
            log.warning(
                "variant %d: %s",
                kept.variant.index,
                kept.why,
                extra=_context(progress.expected.identity),
            )

    def _add(self, progress: JobProgress, fresh: list[StoredVariant]) -> None:
        """Store `fresh` variants of the Job: before anything else is done with them."""
        if not fresh:
            return
        identity = progress.expected.identity
        now = datetime.now(UTC)
        fresh = [_as_of(variant, now) for variant in progress.expected.judged(fresh)]
        for variant in fresh:
            if variant.clock_note is not None:
                log.warning(
                    "variant %d: %s", variant.index, variant.clock_note, extra=_context(identity)
                )
        added = self._store.add(identity, fresh, now)
        self.stored_new += added.new
        progress.stored.update((variant.index, variant.state) for variant in fresh)
        progress.own_s.update((variant.index, own_seconds(variant.result)) for variant in fresh)
        for variant in fresh:
            if variant.result_source == "lake":
                self.lake.read += 1
            elif variant.pod in self._fetched:
                insort(self.lake.missed, (identity.job, variant), key=_job_and_index)
        for variant in fresh:
            if variant.pod is not None:
                self._logs.forget(variant.pod)
                self._fetched.pop(variant.pod, None)
            log.debug(
                "variant %d stored: %s",
                variant.index,
                variant.explanation,
                extra=_context(identity),
            )

    def _outcome(self) -> GatherOutcome:
        records: list[tuple[JobRecord, Path | None]] = []
        observed: list[ObservedJob] = []
        unfinished: list[Unfinished] = []
        for progress in self._jobs:
            context = _context(progress.expected.identity)
            if not progress.finished or progress.unread:
                unfinished.append(self._unfinished(progress))
                log.warning("Job not finished: %s", unfinished[-1].why, extra=context)
                continue
            record = self._record(progress)
            path = None
            if self._options.record:
                written, changed = write_record(self._root, record)
                path = written if changed else None
            records.append((record, path))
            assert progress.job is not None
            observed.append(ObservedJob(record, _duration_s(progress.job)))
            failed = sum(v.state == "failed" for v in record.variants)
            log.info(
                "Job %s: %d variants, %d failed",
                record.outcome,
                len(record.variants),
                failed,
                extra=context,
            )
        return GatherOutcome(
            cluster=self._jobs[0].expected.identity.cluster if self._jobs else "",
            stored_new=self.stored_new,
            already_stored=self.already_stored,
            records=tuple(records),
            observed=tuple(observed),
            unfinished=tuple(unfinished),
            lake=self.lake,
        )

    def _record(self, progress: JobProgress) -> JobRecord:
        identity = progress.expected.identity
        assert progress.job is not None
        variants: list[StoredVariant] = self._store.variants(
            identity.cluster, identity.namespace, identity.job
        )
        failure = job_failure(progress.job)
        return JobRecord(
            **identity.model_dump(),
            outcome="failed" if failure else "complete",
            failure=failure,
            variants=tuple(variants),
            description=progress.expected.description,
            owner=progress.expected.owner,
            reuses=progress.expected.reuses or None,
        )

    def _unfinished(self, progress: JobProgress) -> Unfinished:
        identity = progress.expected.identity
        if progress.job is None:
            why = (
                f"Job {identity.job} is not in namespace {identity.namespace}: Flux has not "
                "applied it (yet); check `flux get kustomizations` for the workloads"
            )
            return Unfinished(identity.job, why, ())
        waiting = [s for s in progress.states if s.phase not in ("succeeded", "failed")]
        assert progress.job is not None
        explained = explain_waiting(self._client, progress.job, progress.pods, waiting)
        # With its events, a cause says more (the registry's "not found", the scheduler's
        # verdict): kept for the gather that sees the Job fail it.
        self._remember_causes(progress, explained)
        unread = [
            replace(
                state,
                explanation="ended, but its log could not be read within --timeout to store "
                "its result: run gather again",
            )
            for state in progress.states
            if settled(state) and progress.awaited(state)
        ]
        total = progress.expected.variant_count
        done = total - sum(len(progress.expected.positions(s.index)) for s in waiting)
        why = f"{done} of {plural(total, 'variant')} finished"
        if progress.unread:
            why += (
                f"; {plural(len(progress.unread), 'result')} written by a newer runner than "
                "this collector reads, kept as it arrived: upgrade the collector and gather "
                "again to store it and record the Job"
            )
        stored = self._store.variants(identity.cluster, identity.namespace, identity.job)
        failed = tuple(variant for variant in stored if variant.state == "failed")
        return Unfinished(
            identity.job,
            why,
            tuple(sorted([*explained, *unread], key=lambda state: state.index)),
            failed,
            tuple(progress.unread[index] for index in sorted(progress.unread)),
        )


def _context(identity: JobIdentity) -> dict[str, object]:
    return job_context(
        identity.workflow, identity.job, identity.namespace, identity.target, identity.cluster
    )


def _says_more(cause: str, known: str | None) -> bool:
    """Whether `cause` replaces what was `known` of why an index waits: it is the first word,
    or another reason, or the same reason said at more length (with its events)."""
    if known is None:
        return True
    return cause.split(":", 1)[0] != known.split(":", 1)[0] or len(cause) > len(known)


def _with_cause(variant: StoredVariant, cause: str | None) -> StoredVariant:
    """A failed variant's explanation with why it waited, when it no longer says so."""
    if variant.state != "failed" or cause is None or cause in variant.explanation:
        return variant
    explanation = f"{variant.explanation}; it had been waiting: {cause}"
    return variant.model_copy(update={"explanation": explanation})


def _as_of(variant: StoredVariant, now: datetime) -> StoredVariant:
    """`variant` as it is stored at `now`: where its pod says it finished later than that
    (its node's clock ran ahead), it finished by `now`, and its note says what it said."""
    finished = variant.finished_at
    if finished is None or (skew := ahead_by(finished, now)) is None:
        return variant
    note = (
        f"its pod said it finished at {stamp(finished)}, {skew_text(skew)} ahead of the "
        f"collector's clock when it stored the run ({stamp(now)}): its node's clock runs "
        "ahead, so it counts as finished when stored"
    )
    # To the second, as the API's own times and the store's time of storage are.
    stored = now.replace(microsecond=0)
    return variant.model_copy(update={"finished_at": stored, "clock_note": note})


def _duration_s(job: Object) -> float | None:
    """startTime to completionTime, or to the Failed condition's transition."""
    status = job.get("status", {})
    start = status.get("startTime")
    end = status.get("completionTime")
    if end is None:
        for condition in status.get("conditions") or []:
            if condition.get("type") == "Failed" and condition.get("status") == "True":
                end = condition.get("lastTransitionTime")
    began, ended = instant(start), instant(end)
    return None if began is None or ended is None else (ended - began).total_seconds()
