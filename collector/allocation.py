"""What the cluster allocated to each variant, read from its pods: from the moment the
scheduler bound a pod (its PodScheduled condition turning True) to the runner's end (its
container's terminated.finishedAt), over every attempt of the completion index, times the
GPUs (or, for a pod without any, the CPUs) the pod requested; split among the variants of
a grouped pod by their own times, from their results' timings.

Gather watches the pods, so it sees attempts that Kubernetes deletes afterwards (a preempted
or evicted pod vanishes once the Job controller has counted it): each attempt is noted as it
is seen (`attempt_time`), and an index's allocation is worked out once it has ended. What
gather could not see is estimated and said so, never left out in silence.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from collector.indexes import attempt_order, job_finished
from collector.pods import (
    Object,
    bound_at,
    completion_index,
    condition,
    runner_container,
    runner_terminated,
)
from contract.allocation import Allocation, Capacity, Unit
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
    """The GPUs the runner requested, or for a pod without any its CPUs (requests, which
    the scheduler reserves, fall back to limits, which Kubernetes copies into them)."""
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
class PodTime:
    """The time an index's pods held their node's devices, all attempts summed."""

    seconds: float
    attempts: int
    """The attempts counted."""
    devices: float
    unit: Unit
    estimate: tuple[str, ...]


def pod_time(attempts: Sequence[AttemptTime], counted: int, job_end: datetime | None) -> PodTime:
    """The time `attempts` (oldest first) held their devices; `counted` is how many attempts
    the Job controller made (more where pods vanished unseen), `job_end` when the Job ended."""
    seconds, timed, estimate = 0.0, 0, []
    for position, attempt in enumerate(attempts):
        if attempt.scheduled is None:
            continue  # never bound to a node: it held nothing
        later = attempts[position + 1].created if position + 1 < len(attempts) else None
        end, how = _end(attempt, later, job_end)
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
    last = attempts[-1] if attempts else None
    return PodTime(
        seconds=seconds,
        attempts=timed,
        devices=last.devices if last else 0.0,
        unit=last.unit if last else "cpu",
        estimate=tuple(estimate),
    )


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
            seconds=time.seconds * share,
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
