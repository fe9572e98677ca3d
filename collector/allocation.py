"""What the cluster allocated to each variant, read from its pods: from the moment the
scheduler bound a pod (its PodScheduled condition turning True) to the runner's end (its
container's terminated.finishedAt), over every attempt of the completion index, times the
GPUs (or, for a pod without any, the CPUs) the pod requested; split among the variants of
a grouped pod by their own times, from their results' timings.

Gather watches the pods, so it sees attempts that Kubernetes deletes afterwards (a preempted
or evicted pod vanishes once the Job controller has counted it): each attempt is noted as it
is seen (`attempt_time`), and an index's allocation is worked out once it has ended. What
gather could not see is estimated and said so, never left out in silence.

A pod's times come from several clocks (contract/clocks.py), so they are held against each
other, against the Job's and against the collector's own before they are counted: a pod
bound before it (or its Job) was created, one that ended before it was bound, a time in the
future, or a pod that ran with no time of binding, makes the index's time unknown, with the
skew said, never 0 nor the years between two clocks.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from collector.indexes import attempt_order, job_finished, parse_indexes
from collector.pods import (
    Object,
    bound_at,
    completion_index,
    condition,
    runner_container,
    runner_started,
    runner_terminated,
)
from contract.allocation import Allocation, Capacity, Unit
from contract.clocks import ahead_by, skew_text, stamp
from contract.instant import instant
from contract.layout import GPU_RESOURCE
from contract.quantity import parse_quantity
from contract.result import OkResult

_TERMINAL: Final = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class AttemptTime:
    """One attempt (pod) of an index, as far as its times go."""

    pod: str
    version: str | None
    """Its resourceVersion when read: the same version says nothing new."""
    order: tuple[int, str, str]
    """Where it comes among its index's attempts (indexes.attempt_order)."""
    created: datetime | None
    scheduled: datetime | None
    """When the PodScheduled condition turned True; None while it is not bound."""
    started: datetime | None
    """The runner container's startedAt: it ran, so the pod was bound."""
    finished: datetime | None
    """The runner container's terminated.finishedAt."""
    ended: datetime | None
    """For a terminal pod without that: its last condition change (the kubelet's record of
    the pod's end, where the runner never ran or its end was lost)."""
    deleting: datetime | None
    """metadata.deletionTimestamp: the time by which a pod being deleted must be gone."""
    devices: float
    unit: Unit


def _devices(pod: Object) -> tuple[float, Unit]:
    """The GPUs the runner of `pod` (or of a pod template) requested, or for a pod without
    any its CPUs (requests, which the scheduler reserves, fall back to limits, which
    Kubernetes copies into them)."""
    resources = (runner_container(pod) or {}).get("resources") or {}
    asked = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
    gpus = _count(asked.get(GPU_RESOURCE))
    return (gpus, "gpu") if gpus > 0 else (_count(asked.get("cpu")), "cpu")


def _count(quantity: object) -> float:
    """A resource quantity as a number; 0 where there is none, or it is not a quantity."""
    try:
        return float(parse_quantity(str(quantity))) if quantity is not None else 0.0
    except ValueError:
        return 0.0


def attempt_time(pod: Object) -> AttemptTime:
    """The times of one attempt, as its pod says them now."""
    metadata = pod.get("metadata") or {}
    status = pod.get("status") or {}
    terminated = runner_terminated(pod)
    conditions = status.get("conditions") or ()
    transitions = [at for c in conditions if (at := instant(c.get("lastTransitionTime")))]
    devices, unit = _devices(pod)
    return AttemptTime(
        pod=str(metadata.get("name")),
        version=metadata.get("resourceVersion"),
        order=attempt_order(pod),
        created=instant(metadata.get("creationTimestamp")),
        scheduled=bound_at(pod),
        started=runner_started(pod),
        finished=instant(terminated.get("finishedAt")),
        ended=max(transitions, default=None) if status.get("phase") in _TERMINAL else None,
        deleting=instant(metadata.get("deletionTimestamp")),
        devices=devices,
        unit=unit,
    )


class AttemptLog:
    """Every attempt gather has seen of a Job's indexes, as last seen."""

    def __init__(self) -> None:
        self._seen: dict[int, dict[str, AttemptTime]] = {}

    def note(self, pods: Sequence[Object]) -> None:
        """Note each of `pods` that has changed since it was last seen."""
        for pod in pods:
            index = completion_index(pod)
            if index is None:
                continue
            attempts = self._seen.setdefault(index, {})
            metadata = pod.get("metadata") or {}
            known = attempts.get(str(metadata.get("name")))
            if known is None or known.version != metadata.get("resourceVersion"):
                found = attempt_time(pod)
                attempts[found.pod] = found

    def attempts(self, index: int) -> list[AttemptTime]:
        """The attempts of `index` seen, oldest first."""
        return sorted(self._seen.get(index, {}).values(), key=lambda attempt: attempt.order)

    def forget(self, index: int) -> None:
        """Let go of an index whose variants are all stored."""
        self._seen.pop(index, None)


@dataclass(frozen=True)
class JobTimes:
    """What the Job itself says that its indexes' times are held against."""

    created: datetime | None
    """Its creationTimestamp: no pod of it was bound before."""
    ended: datetime | None
    """When it ended (its Complete or Failed condition); None while it runs."""
    listed: frozenset[int]
    """The indexes its status lists as completed or failed: each of them had a pod."""
    devices: float
    """What its pod template's runner asks for: a pod gather never saw held that."""
    unit: Unit


def job_times(job: Object) -> JobTimes:
    """The times and devices `job` says, as the API returned it."""
    status = job.get("status") or {}
    listed: frozenset[int] = frozenset()
    for key in ("completedIndexes", "failedIndexes"):
        try:
            listed |= parse_indexes(status.get(key))
        except ValueError:
            continue  # not the Job controller's: no index is known to have had a pod
    devices, unit = _devices((job.get("spec") or {}).get("template") or {})
    return JobTimes(
        created=instant((job.get("metadata") or {}).get("creationTimestamp")),
        ended=job_end(job),
        listed=listed,
        devices=devices,
        unit=unit,
    )


@dataclass(frozen=True)
class PodTime:
    """The time an index's pods held their node's devices, all attempts summed."""

    seconds: float | None
    """None where it is unknown (`estimate` says why)."""
    attempts: int
    """The attempts counted."""
    devices: float
    unit: Unit
    estimate: tuple[str, ...]


def pod_time(
    attempts: Sequence[AttemptTime], counted: int, index: int, job: JobTimes, now: datetime
) -> PodTime:
    """The time `attempts` (oldest first) of `index` held their devices; `counted` is how
    many attempts the Job controller made (more where pods vanished unseen), `job` what the
    Job says, `now` the collector's clock."""
    last = attempts[-1] if attempts else None
    devices, unit = (last.devices, last.unit) if last else (job.devices, job.unit)
    if not attempts and index in job.listed:
        why = f"no pod of index {index} was seen (gone before gather looked): its time is unknown"
        return PodTime(None, 0, devices, unit, (why,))
    seconds, timed, estimate, wrong = 0.0, 0, [], []
    for position, attempt in enumerate(attempts):
        later = attempts[position + 1].created if position + 1 < len(attempts) else None
        end, how = _end(attempt, later, job.ended)
        if (impossible := _impossible(attempt, end, job.created, now)) is not None:
            wrong.append(impossible)
            continue
        if attempt.scheduled is None:
            continue  # never bound to a node: it held nothing
        if end is None:
            estimate.append(f"pod {attempt.pod} was never seen to end: its time is not counted")
            continue
        if how is not None:
            estimate.append(f"pod {attempt.pod} was not seen to end: counted to {how}")
        seconds += max((end - attempt.scheduled).total_seconds(), 0.0)
        timed += 1
    unseen = counted - len(attempts)
    if unseen > 0:
        estimate.append(
            f"{unseen} of {counted} attempts' pods were gone before gather saw them (a "
            "preempted or evicted pod is deleted): not counted, so this is a lower bound"
        )
    if wrong:
        return PodTime(None, timed, devices, unit, (*wrong, "so its time is unknown"))
    if not attempts:
        estimate.append(
            f"no pod of index {index} was seen, and the Job lists it neither completed nor "
            "failed: counted as holding nothing"
        )
    return PodTime(seconds, timed, devices, unit, tuple(estimate))


def _impossible(
    attempt: AttemptTime, end: datetime | None, job_created: datetime | None, now: datetime
) -> str | None:
    """What of `attempt`'s times cannot be right, with the skew, where anything: they are
    held against each other, the Job's creation and the collector's clock (`now`)."""
    pod, bound = attempt.pod, attempt.scheduled
    if bound is None:
        ran = attempt.started or attempt.finished
        if ran is None:
            return None
        return (
            f"pod {pod} ran its runner (at {stamp(ran)}) but says not when it was bound to "
            "its node (no PodScheduled condition turned True)"
        )
    for earlier, what in ((attempt.created, "the pod"), (job_created, "its Job")):
        if earlier is not None and (skew := ahead_by(earlier, bound)) is not None:
            return (
                f"pod {pod} says it was bound ({stamp(bound)}) {skew_text(skew)} before "
                f"{what} was created ({stamp(earlier)})"
            )
    # A deletion deadline may lie ahead: only the times a node or the scheduler wrote of
    # what has happened are held against the collector's clock.
    happened = (
        (bound, "was bound", "the scheduler's"),
        (attempt.started, "started its runner", "its node's"),
        (attempt.finished or attempt.ended, "ended", "its node's"),
    )
    for moment, what, whose in happened:
        if moment is not None and (skew := ahead_by(moment, now)) is not None:
            return (
                f"pod {pod} says it {what} at {stamp(moment)}, {skew_text(skew)} ahead of the "
                f"collector's clock ({stamp(now)}): {whose} clock runs ahead"
            )
    if end is not None and (skew := ahead_by(bound, end)) is not None:
        return (
            f"pod {pod} says it ended ({stamp(end)}) {skew_text(skew)} before it was bound "
            f"({stamp(bound)}): its node's clock and the control plane's disagree"
        )
    return None


def _end(
    attempt: AttemptTime, later: datetime | None, job_end: datetime | None
) -> tuple[datetime | None, str | None]:
    """When `attempt` stopped holding its devices, and how that is known where it was not
    read (None: read). With podFailurePolicy, the Job controller creates the next attempt
    only once a pod has ended, and a deleted pod is gone by its deletionTimestamp."""
    if attempt.finished is not None:
        return attempt.finished, None
    for found, how in (
        (attempt.ended, "its last condition change"),
        (attempt.deleting, "its deletion deadline (deletionTimestamp)"),
        (later, "the next attempt's creation"),
        (job_end, "the Job's end"),
    ):
        if found is not None:
            return found, how
    return None, None


def job_end(job: Object) -> datetime | None:
    """When the Job ended (its Complete or Failed condition); None while it runs."""
    if not job_finished(job):
        return None
    ends = [condition(job, kind) or {} for kind in ("Complete", "Failed")]
    return max((at for end in ends if (at := instant(end.get("lastTransitionTime")))), default=None)


def own_seconds(result: object) -> float | None:
    """A variant's own time in its pod (load to the end of its accuracy pass), where its
    result says it."""
    if isinstance(result, OkResult) and result.timings is not None:
        return result.timings.own_s
    return None


def allocations(
    time: PodTime,
    own: Mapping[int, float | None],
    device_type: str | None,
    capacity: Capacity | None,
) -> dict[int, Allocation]:
    """Each variant's part of `time`, by its position in the group: its own time over the
    group's. A variant whose result gives none counts as the group's mean; where none does,
    they share alike."""
    known = {position: s for position, s in own.items() if s is not None and s > 0}
    mean = sum(known.values()) / len(known) if known else 1.0
    weights = {position: known.get(position, mean) for position in own}
    total = sum(weights.values())
    found = {}
    for position, weight in weights.items():
        estimate = list(time.estimate)
        if len(own) > 1 and position not in known:
            estimate.append(
                "its own time is unknown (no result with timings): its share is the group's mean"
                if known
                else "no variant of its pod reported its own time: the pod's variants share alike"
            )
        share = weight / total
        found[position] = Allocation(
            seconds=None if time.seconds is None else time.seconds * share,
            pod_seconds=time.seconds,
            share=share,
            devices=time.devices,
            unit=time.unit,
            device_type=device_type,
            capacity=capacity,
            attempts=time.attempts,
            estimate=tuple(estimate),
        )
    return found
