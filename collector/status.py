"""`collector status`: where a workflow's Jobs stand in a cluster, and why anything waits.

Read-only: one list of the workflow's Jobs and pods, plus the events of a bounded number of
pending pods, since the scheduler's reasons (no GPU of that type, quota) live in events. A
variant that has ended counts as gather would store it (harvest.py), reading its log when
the termination message falls short, so status, progress and the record agree.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from collector.follow import listed_once
from collector.harvest import Harvest, harvest, settled
from collector.indexes import (
    IndexState,
    failure_condition,
    index_states,
    job_failure,
    summary_counts,
)
from collector.kube import KubeClient, KubeError, Object
from collector.pods import RUNNER
from collector.progress import counts_line
from collector.workload import ExpectedJob, label_selector
from contract.layout import JOB_NAME_LABEL
from contract.records import StoredVariant
from store.database import Unread

log = logging.getLogger(__name__)

EXPLAINED_PENDING: Final = 20
"""Pending pods whose events are fetched: enough to show why, a bounded number of requests."""


def pods_by_job(pods: Sequence[Object]) -> dict[str, list[Object]]:
    """Pods grouped by the Job that owns them (the label the Job controller sets)."""
    grouped: dict[str, list[Object]] = {}
    for pod in pods:
        owner = (pod["metadata"].get("labels") or {}).get(JOB_NAME_LABEL)
        if owner is not None:
            grouped.setdefault(owner, []).append(pod)
    return grouped


def explain_waiting(
    client: KubeClient, job: Object, pods: Sequence[Object], waiting: Sequence[IndexState]
) -> list[IndexState]:
    """`waiting` re-explained with the events of their pending pods."""
    namespace = job["metadata"]["namespace"]
    events: list[Object] = []
    pending = [s for s in waiting if s.phase == "pending" and s.pod is not None]
    for state in pending[:EXPLAINED_PENDING]:
        assert state.pod is not None
        try:
            events += client.events_for(namespace, "Pod", state.pod.name)
        except KubeError as error:
            log.warning("no events for pod %s: %s", state.pod.name, error)
    if not events:
        return list(waiting)
    again = {s.index: s for s in index_states(job, pods, events)}
    return [again.get(s.index, s) for s in waiting]


@dataclass(frozen=True)
class JobStatus:
    """One expected Job as the cluster shows it."""

    expected: ExpectedJob
    job: Object | None
    states: tuple[IndexState, ...]
    ended: dict[int, StoredVariant]
    """Each variant that has ended, as gather stores it."""
    kept: dict[int, Unread] = field(default_factory=dict)
    """Each variant whose result a newer runner wrote, as gather keeps it unread."""


def workflow_status(client: KubeClient, expected: Sequence[ExpectedJob]) -> list[JobStatus]:
    """The state of every expected Job (all in one namespace: a workflow's environment)."""
    if not expected:
        return []
    namespace = expected[0].identity.namespace
    snapshot = listed_once(client, namespace, label_selector(expected[0].identity.workflow))
    grouped = pods_by_job(list(snapshot.pods.values()))
    statuses = []
    for job_expected in expected:
        name = job_expected.identity.job
        job = snapshot.jobs.get(name)
        if job is None:
            statuses.append(JobStatus(job_expected, None, (), {}))
            continue
        states = index_states(job, grouped.get(name, []))
        harvested = _ended(client, job_expected, job, states)
        waiting = [s for s in states if s.phase not in ("succeeded", "failed")]
        explained = {
            s.index: s for s in explain_waiting(client, job, grouped.get(name, []), waiting)
        }
        statuses.append(
            JobStatus(
                job_expected,
                job,
                tuple(explained.get(s.index, s) for s in states),
                {variant.index: variant for variant in harvested.stored},
                {kept.variant.index: kept for kept in harvested.unread},
            )
        )
    return statuses


def _ended(
    client: KubeClient, expected: ExpectedJob, job: Object, states: Sequence[IndexState]
) -> Harvest:
    condition = failure_condition(job)
    failure = condition.get("reason") if condition else None
    namespace = expected.identity.namespace

    def read_log(pod: str) -> str | None:
        try:
            return client.pod_log(namespace, pod, RUNNER)
        except KubeError as error:
            log.warning("no log for pod %s: %s", pod, error)
            return None

    every = [
        harvest(state, expected.slots(state.index), failure, read_log)
        for state in states
        if settled(state)
    ]
    return Harvest(
        [v for one in every for v in one.stored], [k for one in every for k in one.unread]
    )


def _where(index: int, variant: int) -> str:
    """Which variant: its completion index, and its own index where a group makes them differ."""
    return f"index {index}" if index == variant else f"index {index}, variant {variant}"


def format_status(statuses: Sequence[JobStatus]) -> str:
    """A paragraph per Job: its counts, then each variant that is not done or failed."""
    lines = []
    for status in statuses:
        identity = status.expected.identity
        lines.append(
            f"{identity.cluster}/{identity.namespace} Job {identity.job} ({identity.target}):"
        )
        if status.job is None:
            lines.append("  not in the cluster: Flux has not applied it (yet)")
            continue
        final = {index: variant.state for index, variant in status.ended.items()}
        counts = summary_counts(status.states, final, status.expected.positions)
        lines.append(f"  {counts_line(vars(counts))}")
        if (failure := job_failure(status.job)) is not None:
            lines.append(f"  the Job failed: {failure}")
        for state in status.states:
            ended = [
                status.ended[p] for p in status.expected.positions(state.index) if p in status.ended
            ]
            for variant in ended:
                if variant.state == "failed":
                    lines.append(
                        f"  {_where(state.index, variant.index)}: failed: {variant.explanation}"
                    )
            for p in status.expected.positions(state.index):
                if (kept := status.kept.get(p)) is not None:
                    lines.append(f"  {_where(state.index, p)}: kept unread: {kept.why}")
            if not ended and state.phase != "succeeded":
                lines.append(f"  index {state.index}: {state.phase}: {state.explanation}")
    return "\n".join(lines)
