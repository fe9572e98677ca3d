"""One Indexed Job's variants: where each completion index stands, from the Job's status and
every pod (attempt) of the index.

How the Job controller (Kubernetes 1.33) reports the indexes of a Job with
backoffLimitPerIndex, which synth always sets:

- `completedIndexes` and `failedIndexes` list them as intervals ("1,3-5"); `failedIndexes`
  fills as soon as an index is lost, while the other indexes go on running.
- An index is lost when a failure matches a FailIndex rule of the podFailurePolicy, or when
  its counted failures exceed backoffLimitPerIndex. Each new pod of an index carries the
  failures before it in the annotations `batch.kubernetes.io/job-index-failure-count` and
  `...-ignored-failure-count` (failures an Ignore rule, here DisruptionTarget, let pass).
  Preempted pods are deleted and vanish once counted, so those annotations are the only
  record of them.
- The Job fails as a whole (FailureTarget, then Failed once no pod is terminating) with
  FailedIndexes when every index is done and one failed, or with DeadlineExceeded when
  activeDeadlineSeconds passes: the controller then deletes the active pods, leaving their
  indexes neither completed nor failed.
"""

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from collector.pods import (
    Object,
    Phase,
    PodState,
    completion_index,
    condition,
    pod_state,
    runner_succeeded,
)
from contract.layout import CONTROLLER_UID_LABEL
from contract.records import VariantState

FAILURE_COUNT_KEY: Final = "batch.kubernetes.io/job-index-failure-count"
IGNORED_COUNT_KEY: Final = "batch.kubernetes.io/job-index-ignored-failure-count"
QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
_INTERVAL: Final = re.compile(r"(\d+)(?:-(\d+))?")


@dataclass(frozen=True)
class IndexState:
    """One variant (completion index) of a Job, over all its attempts."""

    index: int
    phase: Phase
    explanation: str
    attempts: int
    """Pods created for the index so far, counting those already gone."""
    preemptions: int
    """Attempts the podFailurePolicy ignored (disruptions: preemption, eviction...)."""
    pod: PodState | None
    """The attempt that decides the state: the succeeded one, else the latest."""
    manifest: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    """That attempt's pod as the API returned it (to read its result with its log)."""
    cut_by: str | None = None
    """The reason of the Job's Failed condition when that, not the index's own pod, ended it
    (DeadlineExceeded, FailedIndexes...)."""
    earlier: tuple[PodState, ...] = field(default=(), compare=False, repr=False)
    """The index's other attempts that ended, oldest first: a pod running a group that ended
    mid-group handed over the variants it finished, which its retry may not repeat."""


@dataclass(frozen=True)
class SummaryCounts:
    """How many variants of a Job stand where, for a progress bar."""

    pending: int
    running: int
    succeeded: int
    failed: int
    preempted: int

    @property
    def total(self) -> int:
        """Every variant."""
        return self.pending + self.running + self.succeeded + self.failed + self.preempted


def parse_indexes(text: str | None) -> frozenset[int]:
    """The indexes in a Job's completedIndexes or failedIndexes ("1,3-5" is {1, 3, 4, 5});
    None and "" are none. Raises ValueError on anything the Job controller does not write."""
    if not text:
        return frozenset()
    indexes: set[int] = set()
    for part in text.split(","):
        match = _INTERVAL.fullmatch(part)
        if match is None:
            raise ValueError(f"{text!r} is not a list of index intervals: {part!r}")
        first = int(match[1])
        last = int(match[2]) if match[2] else first
        if last < first:
            raise ValueError(f"{text!r} is not a list of index intervals: {part!r} runs backwards")
        indexes.update(range(first, last + 1))
    return frozenset(indexes)


def job_finished(job: Object) -> bool:
    """Whether the Job is over: a Complete or Failed condition that is True. FailureTarget and
    SuccessCriteriaMet come first, while pods still terminate; they are not the end yet."""
    return any(
        (found := condition(job, kind)) is not None and found.get("status") == "True"
        for kind in ("Complete", "Failed")
    )


def job_failure(job: Object) -> str | None:
    """Why the Job failed (or is failing) as a whole, in words; None when it has not."""
    failure = failure_condition(job)
    if failure is None:
        return None
    reason, message = failure.get("reason"), failure.get("message")
    if reason == "DeadlineExceeded":
        return f"deadline exceeded: {message} (activeDeadlineSeconds={_deadline(job)})"
    return f"{reason}: {message}"


def failure_condition(job: Object) -> Object | None:
    """The Job's Failed condition, or FailureTarget while its pods still terminate."""
    for kind in ("Failed", "FailureTarget"):
        found = condition(job, kind)
        if found is not None and found.get("status") == "True":
            return found
    return None


def _deadline(job: Object) -> int | None:
    seconds: int | None = job["spec"].get("activeDeadlineSeconds")
    return seconds


def index_states(
    job: Object, pods: Iterable[Object], events: Sequence[Object] = ()
) -> list[IndexState]:
    """One state per completion index 0..completions-1 of `job`, from its status and `pods`
    (those of other Jobs are left out); `events` help explain pending pods."""
    uid = job["metadata"].get("uid")
    by_index: dict[int, list[Object]] = defaultdict(list)
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        index = completion_index(pod)
        if index is not None and labels.get(CONTROLLER_UID_LABEL, uid) == uid:
            by_index[index].append(pod)
    status = job.get("status", {})
    failed = condition(job, "Failed")
    view = _JobView(
        job,
        parse_indexes(status.get("completedIndexes")),
        parse_indexes(status.get("failedIndexes")),
        failed if failed is not None and failed.get("status") == "True" else None,
    )
    states = []
    for index in range(job["spec"]["completions"]):
        attempts = sorted(by_index[index], key=attempt_order)
        won = next((pod for pod in attempts if runner_succeeded(pod)), None)
        deciding = won or (attempts[-1] if attempts else None)
        state = None if deciding is None else pod_state(deciding, events)
        counted = _attempts(job, attempts)
        cut_by = None
        ended = _ended(view, index, deciding, state, counted)
        if ended is None and view.failure is not None:
            # Only the Job's Failed condition ends an index its pod has not ended: at
            # FailureTarget the pod may still be running, and may yet finish.
            cut_by = view.failure.get("reason")
            ended = "failed", _unfinished(job, view.failure, state)
        phase, explanation = ended or _ongoing(job, state, counted)
        states.append(
            IndexState(
                index,
                phase,
                explanation,
                counted.total,
                counted.preemptions,
                state,
                deciding,
                cut_by,
                tuple(
                    pod_state(pod, events)
                    for pod in attempts
                    if pod is not deciding and pod.get("status", {}).get("phase") == "Failed"
                ),
            )
        )
    return states


@dataclass(frozen=True)
class _JobView:
    job: Object
    completed: frozenset[int]
    failed: frozenset[int]
    failure: Object | None
    """The Failed condition, once the Job has ended (not FailureTarget: pods still run)."""


def summary_counts(
    states: Iterable[IndexState],
    final: Mapping[int, VariantState] | None = None,
    positions: Callable[[int], Iterable[int]] = lambda index: (index,),
) -> SummaryCounts:
    """How many variants of `states` are pending, running, succeeded, failed and preempted:
    an index runs the variants `positions` gives (one, or a group), each counting as its
    index stands unless `final` holds it as stored (a pod that succeeded without a usable
    result failed)."""
    counts = dict.fromkeys(("pending", "running", "succeeded", "failed", "preempted"), 0)
    for state in states:
        for position in positions(state.index):
            counts[(final or {}).get(position, state.phase)] += 1
    return SummaryCounts(**counts)


def attempt_order(pod: Object) -> tuple[int, str, str]:
    """Where `pod` comes among its index's attempts: the failure counts rise with every
    replacement; creation times only have seconds."""
    meta = pod["metadata"]
    return (
        _count(pod, FAILURE_COUNT_KEY) + _count(pod, IGNORED_COUNT_KEY),
        meta.get("creationTimestamp", ""),
        meta["name"],
    )


def _count(pod: Object, key: str) -> int:
    value = (pod["metadata"].get("annotations") or {}).get(key, "0")
    return int(value) if value.isdigit() else 0


@dataclass(frozen=True)
class _Attempts:
    total: int
    preemptions: int
    failures: int
    """Failures the podFailurePolicy counts against backoffLimitPerIndex."""


def _attempts(job: Object, pods: Sequence[Object]) -> _Attempts:
    if not pods:
        return _Attempts(0, 0, 0)
    latest = pods[-1]
    ignored_before = _count(latest, IGNORED_COUNT_KEY)
    failed_before = _count(latest, FAILURE_COUNT_KEY)
    latest_ignored = _ignored(job, latest)
    latest_failed = (
        latest.get("status", {}).get("phase") == "Failed"
        and not latest_ignored
        and not runner_succeeded(latest)
    )
    visible_ignored = sum(1 for pod in pods if _ignored(job, pod))
    preemptions = max(visible_ignored, ignored_before + latest_ignored)
    failures = failed_before + latest_failed
    total = max(len(pods), ignored_before + failed_before + 1)
    return _Attempts(total, preemptions, failures)


def _ignored(job: Object, pod: Object) -> bool:
    # A disrupted pod may still be terminating (Running): its failure is ignored all the same.
    return not runner_succeeded(pod) and policy_action(job, pod) == "Ignore"


def policy_action(job: Object, pod: Object) -> str | None:
    """The action of the first podFailurePolicy rule matching a failed `pod` (Ignore,
    FailIndex, FailJob or Count), as the Job controller matches them; None when none does."""
    policy = job["spec"].get("podFailurePolicy") or {}
    for rule in policy.get("rules", ()):
        if _rule_matches(rule, pod):
            action: str = rule["action"]
            return action
    return None


def _rule_matches(rule: Object, pod: Object) -> bool:
    status = pod.get("status", {})
    if (codes := rule.get("onExitCodes")) is not None:
        wanted = codes.get("containerName")
        listed = set(codes["values"])
        for container in [
            *status.get("initContainerStatuses", ()),
            *status.get("containerStatuses", ()),
        ]:
            code = (container.get("state", {}).get("terminated") or {}).get("exitCode")
            # Exit code 0 never matches: a container that succeeded did not fail the pod.
            if code in (None, 0) or wanted not in (None, container.get("name")):
                continue
            if (code in listed) == (codes["operator"] == "In"):
                return True
        return False
    return any(
        found.get("type") == pattern["type"]
        and found.get("status") == pattern.get("status", "True")
        for pattern in rule.get("onPodConditions", ())
        for found in status.get("conditions", ())
    )


def _ended(
    view: _JobView, index: int, pod: Object | None, state: PodState | None, attempts: _Attempts
) -> tuple[Phase, str] | None:
    """The end of an index that is over, as the status says or its latest attempt decides."""
    if state is not None and state.phase == "succeeded":
        return "succeeded", state.explanation
    if index in view.completed:
        return "succeeded", "succeeded (its pod is gone)"
    if (lost := _lost(view.job, pod, state, attempts)) is not None:
        return "failed", lost
    if index in view.failed:
        last = "its pods are gone" if state is None else f"its last attempt: {state.explanation}"
        return "failed", f"failed (the Job lists it in failedIndexes); {last}"
    return None


def _ongoing(job: Object, state: PodState | None, attempts: _Attempts) -> tuple[Phase, str]:
    if state is None:
        return "pending", _not_started(job)
    if state.phase == "failed":
        limit = job["spec"].get("backoffLimitPerIndex")
        of = "" if limit is None else f" of {limit + 1}"
        waiting = f"waiting to retry after failed attempt {attempts.failures}{of}"
        return "pending", f"{waiting}: {state.explanation}"
    return state.phase, state.explanation


def _unfinished(job: Object, failure: Object, state: PodState | None) -> str:
    """Why an index the Job's failure cut short did not finish. Its last attempt is named
    unless it is shown running: its end has not reached us yet, and "running" would be stale."""
    named = state is not None and state.phase != "running"
    last = f"; its last attempt: {state.explanation}" if state is not None and named else ""
    if failure.get("reason") == "DeadlineExceeded":
        deadline = f"activeDeadlineSeconds={_deadline(job)}"
        return f"deadline exceeded: {deadline} passed before this variant finished{last}"
    why = f"{failure.get('reason')}: {failure.get('message')}"
    return f"the Job failed ({why}) before this variant finished{last}"


def _lost(
    job: Object, pod: Object | None, state: PodState | None, attempts: _Attempts
) -> str | None:
    """Why the index is lost for good, when its latest attempt lost it (the status may not
    list it in failedIndexes yet)."""
    if pod is None or state is None or state.phase != "failed":
        return None
    if policy_action(job, pod) == "FailIndex":
        return (
            f"failed at once: the runner's exit {state.exit_code} is not retried "
            f"(podFailurePolicy FailIndex): {state.explanation}"
        )
    limit = job["spec"].get("backoffLimitPerIndex")
    if limit is None or attempts.failures <= limit:
        return None
    preempted = f" (and {attempts.preemptions} preempted)" if attempts.preemptions else ""
    return f"retries exhausted after {attempts.failures} attempts{preempted}: {state.explanation}"


def _not_started(job: Object) -> str:
    if job["spec"].get("suspend"):
        queue = (job["metadata"].get("labels") or {}).get(QUEUE_LABEL)
        held = f" until Kueue admits it from queue {queue}" if queue else ""
        return f"not started: the Job is suspended{held}"
    return "not started"
