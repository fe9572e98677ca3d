"""One pod of a benchmark Job, in words: where its attempt stands and what its runner handed over.

Pure logic on pods and events as the Kubernetes API returns them (camelCase dicts, as JSON or
as the client's `sanitize_for_serialization` gives them, which drops nulls). The runner hands
its result over twice (docs/runner.md): compacted in /dev/termination-log, which the pod
status keeps, and whole on the last `BENCH_RESULT` line of its log. synth sets
`terminationMessagePolicy: FallbackToLogsOnError`, so a runner that dies before writing the
file (OOMKilled, killed, crashed) leaves the end of its log as the termination message.
"""

import json
import signal
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from typing import Any, Final, Literal

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from pydantic import ValidationError

from contract.errors import ERROR_TYPES, ExitCode
from contract.fingerprint import image_digest
from contract.instant import EARLIEST, instant
from contract.lake import StoredObject
from contract.layout import COMPLETION_INDEX_KEY, CONTROLLER_UID_LABEL, JOB_NAME_LABEL
from contract.progress import parse_progress
from contract.records import PodStart
from contract.result import (
    READ_SCHEMA_VERSIONS,
    RESULT_PREFIX,
    RESULT_SCHEMA_VERSION,
    SCHEMA_FILE,
    BenchResult,
    ErrorResult,
    OmittedResult,
    find_result_texts,
    is_group_message,
    parse_group_message,
    parse_result,
    unreadable_measurement,
)

Object = Mapping[str, Any]
Phase = Literal["pending", "running", "succeeded", "failed", "preempted"]
"""Where an attempt stands. `preempted`: disrupted (DisruptionTarget), which synth's
podFailurePolicy ignores, so the Job replaces the pod without spending a retry."""
ResultSource = Literal["termination-message", "log", "lake"]

RUNNER: Final = "runner"
_IMAGE_PULL: Final = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "ErrImageNeverPull",
        "InvalidImageName",
        "RegistryUnavailable",
        "SignatureValidationFailed",
    }
)
_STARTING: Final = frozenset({"ContainerCreating", "PodInitializing"})
_DISRUPTED_BY: Final = {
    "PreemptionByScheduler": "preempted",
    "DeletionByTaintManager": "deleted for a NoExecute taint on its node",
    "EvictionByEvictionAPI": "evicted through the Eviction API",
    "DeletionByPodGC": "deleted by the pod garbage collector",
    "TerminationByKubelet": "terminated by the kubelet",
}
_RETRIED: Final = "the Job retries it without spending a retry"
_QUOTE_LIMIT: Final = 300
_COMPACTED_ONLY: Final = (
    "only the termination message's compacted copy is left, without what compaction left out "
    "to fit it (the round medians, then the environment, timings, memory and applied details, "
    "then the validity flags' reasons) and without the samples, which it never holds"
)


@dataclass(frozen=True)
class ResultReading:
    """What a pod's runner handed over, and where it was found: one result per variant it
    ran (a pod runs one variant, or a group of them in order)."""

    results: tuple[BenchResult, ...]
    source: ResultSource | None
    problem: str | None
    """What kept the whole results from being read, in words; None when nothing did."""
    omitted: tuple[OmittedResult, ...] = ()
    """Results a group's termination message had no room for: only the log has them."""
    newer: tuple[str, ...] = ()
    """Results written by a newer runner than this collector reads, as they arrived (JSON):
    kept for a later collector, never taken for a broken result."""
    from_lake: Mapping[int, StoredObject] = field(default_factory=dict)
    """The variants (by index) whose result here is the whole one their runner wrote to the
    lake, each with the object it was read from."""
    not_from_lake: Mapping[int | None, str] = field(default_factory=dict)
    """Why the lake gave no whole result for a variant (by index; None: for any of the pod's)
    whose runner wrote one, in words."""

    @property
    def result(self) -> BenchResult | None:
        """The last result handed over: the only one of a pod that ran one variant."""
        return self.results[-1] if self.results else None

    @property
    def whole(self) -> bool:
        """Every result handed over is here in full: none compacted, none left out."""
        return (
            bool(self.results)
            and not self.omitted
            and not any(result.compacted for result in self.results)
        )


@dataclass(frozen=True)
class PodState:
    """One attempt (pod) of a Job's index, as a person needs to hear it."""

    name: str
    index: int | None
    """The completion index, from the pod's label or annotation."""
    phase: Phase
    node: str | None
    exit_code: int | None
    """The runner container's exit code, once it terminated."""
    reason: str | None
    """The most telling reason Kubernetes gives (Unschedulable, ImagePullBackOff, OOMKilled,
    Evicted, PreemptionByScheduler, Error, Completed...)."""
    explanation: str
    finished_at: datetime | None
    """When the runner container terminated, as the API server reports it (None where it
    is not a time: a record never holds one that its readers cannot read)."""
    message: ResultReading = field(compare=False, repr=False)
    """The result in the termination message, parsed once when the state is read."""
    start: PodStart | None = field(default=None, compare=False, repr=False)
    """When the pod got its node and started its runner (None where it says neither)."""
    image_digest: str | None = field(default=None, compare=False, repr=False)
    """The digest of the image its runner ran, as its status says (`imageID`): what the
    runner cannot know of itself, added to its results' fingerprints."""


_HELD_METADATA: Final = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "annotations",
)
_HELD_LABELS: Final = (COMPLETION_INDEX_KEY, JOB_NAME_LABEL, CONTROLLER_UID_LABEL)
_HELD_SPEC: Final = ("nodeName", "schedulingGates")


def held_pod(pod: Object) -> dict[str, Any]:
    """What the collector keeps of a pod as the API returned it: every field this module,
    indexes.py, status.py and allocation.py read (the metadata that names and orders
    attempts, the labels naming its Job and index, the node, scheduling gates, the runner's
    requests and limits, the whole status), nothing else.

    A pod the API returns is about 40 KiB of Python objects, most of it managedFields and
    the pod template's spec (env, volumes, security context); holding thousands of them made
    gather's memory grow with every variant by that much."""
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    held_spec: dict[str, Any] = {key: spec[key] for key in _HELD_SPEC if key in spec}
    held_spec["containers"] = [
        {"name": container.get("name"), "resources": _resources(container)}
        for container in spec.get("containers") or ()
    ]
    labels = metadata.get("labels") or {}
    held_metadata = {key: metadata[key] for key in _HELD_METADATA if key in metadata}
    held_metadata["labels"] = {key: labels[key] for key in _HELD_LABELS if key in labels}
    held: dict[str, Any] = {"metadata": held_metadata, "spec": held_spec}
    if "status" in pod:
        held["status"] = pod["status"]
    return held


def _resources(container: Object) -> dict[str, Any]:
    resources = container.get("resources") or {}
    return {key: resources[key] for key in ("limits", "requests") if key in resources}


def message_reading(pod: Object) -> ResultReading:
    """The runner's results as the termination message holds them (no request needed)."""
    message = runner_terminated(pod).get("message")
    if message is None or not message.strip():
        return ResultReading((), None, _no_message(pod))
    if is_group_message(message):
        return _from_group_message(message.strip())
    return _from_termination_message(message)


def read_result(pod: Object, log: str | None) -> ResultReading:
    """The runner's results: from the termination message when it holds them whole and
    valid; otherwise (missing, malformed, compacted while a log is given) from the
    BENCH_RESULT lines of `log`. A malformed result is a `problem`, never an exception."""
    return with_log(message_reading(pod), log)


def with_log(message: ResultReading, log: str | None) -> ResultReading:
    """The reading of the termination message, completed from `log` where it falls short."""
    if message.whole:
        return ResultReading(message.results, "termination-message", None)
    if log is None:
        if message.results or message.omitted:
            problem = f"the log cannot be read, so {_COMPACTED_ONLY}"
            return ResultReading(message.results, "termination-message", problem, message.omitted)
        return message
    from_log = _all_from_log(log, "the log")
    if from_log.results:
        return from_log
    if message.results or message.omitted:
        problem = f"{from_log.problem}, so {_COMPACTED_ONLY}"
        return ResultReading(message.results, "termination-message", problem, message.omitted)
    # The log's lines whole where it has them, else what the message kept.
    newer, source = (from_log.newer, "log") if from_log.newer else (message.newer, message.source)
    problem = f"{message.problem}; {from_log.problem}"
    return ResultReading((), source if newer else None, problem, newer=newer)


def _from_group_message(message: str) -> ResultReading:
    """A group's termination message: its results, and stubs of those it had no room for."""
    try:
        entries = parse_group_message(message)
    except ValidationError as error:
        newer = _newer_entries(message)
        if newer:
            version = max(_newer_version(text) or 0 for text in newer)
            words = f"the termination message was {_newer_words(version)}"
            return ResultReading((), "termination-message", words, newer=newer)
        return ResultReading(
            (), None, f"the termination message is not a group of results: {_pydantic_words(error)}"
        )
    results = tuple(e for e in entries if not isinstance(e, OmittedResult))
    omitted = tuple(e for e in entries if isinstance(e, OmittedResult))
    return ResultReading(results, "termination-message", None, omitted)


def _no_message(pod: Object) -> str:
    if not runner_terminated(pod):
        return "the runner container has not terminated"
    return "the runner container left no termination message"


def _from_termination_message(message: str) -> ResultReading:
    if message.lstrip().startswith("{"):
        text = message.strip()
        result, problem = parse_text(text, "the termination message")
        newer = (text,) if result is None and _newer_version(text) else ()
        source: ResultSource | None = "termination-message" if result or newer else None
        return ResultReading((result,) if result else (), source, problem, newer=newer)
    # Not the runner's JSON: FallbackToLogsOnError put the end of the log there, which may
    # still hold result lines (when writing /dev/termination-log failed).
    return _all_from_log(message, "the termination message (the end of the log)")


def _all_from_log(text: str, where: str) -> ResultReading:
    """Every valid result line of `text`, the lines a newer runner wrote, and what was wrong
    with the others (or that there were none)."""
    found = find_result_texts(text)
    if not found:
        return ResultReading((), None, f"{where} has no {RESULT_PREFIX.strip()} line")
    results, problems, newer = [], [], []
    for number, line in enumerate(found, 1):
        at = "the result line" if len(found) == 1 else f"result line {number}"
        result, problem = parse_text(line, f"{at} of {where}")
        if result is not None:
            results.append(result)
        elif _newer_version(line):
            newer.append(line)
        if problem is not None:
            problems.append(problem)
    source: ResultSource = "termination-message" if where.startswith("the termination") else "log"
    return ResultReading(
        tuple(results),
        source if results or newer else None,
        "; ".join(problems) or None,
        newer=tuple(newer),
    )


def _newer_version(text: str) -> int | None:
    """The result schema version of `text` where a runner newer than this collector wrote it
    (a JSON object whose integer `schema_version` is above ours); None otherwise."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return _newer_of(data)


def _newer_of(data: object) -> int | None:
    version = data.get("schema_version") if isinstance(data, dict) else None
    newer = isinstance(version, int) and version > RESULT_SCHEMA_VERSION
    return version if newer and isinstance(version, int) else None


def _newer_entries(message: str) -> tuple[str, ...]:
    """The entries of a group's termination message that a newer runner wrote, each as JSON."""
    try:
        entries = json.loads(message)
    except ValueError:
        return ()
    return tuple(
        json.dumps(entry, separators=(",", ":"), ensure_ascii=False)
        for entry in (entries if isinstance(entries, list) else ())
        if _newer_of(entry)
    )


def _newer_words(version: int) -> str:
    return (
        f"written by a newer runner (result schema_version {version}; this collector reads "
        f"{RESULT_SCHEMA_VERSION}): kept as it arrived, for a collector that reads it"
    )


def parse_text(text: str, where: str) -> tuple[BenchResult | None, str | None]:
    """The result in `text`, or why there is none.

    The model in strict mode decides first: the schema is generated from it, and strict mode
    accepts nothing the schema rejects (no "1" for 1). Only a rejection consults the schema
    itself, to say what is wrong in the terms of the shared contract, result.schema.json;
    validating every result with jsonschema cost 5 ms each, 5 s for a sweep of 1000.
    """
    try:
        return parse_result(text, strict=True), None
    except ValidationError as error:
        rejection = error
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        return None, f"{where} is not JSON: {error.msg} at character {error.pos}"
    if (version := _newer_of(data)) is not None:
        # Not a broken result: one this collector is too old to read.
        return None, f"{where} was {_newer_words(version)}"
    if (numbers := unreadable_measurement(rejection)) is not None:
        return None, f"{where} measured nothing usable: {numbers}"
    mismatch = _schema_mismatch(data)
    if mismatch is not None:
        return None, f"{where} does not match {SCHEMA_FILE.name}{mismatch}"
    return None, f"{where} is not a valid result: {_pydantic_words(rejection)}"


def _schema_mismatch(data: object) -> str | None:
    """Where and why `data` breaks the schema. A result is one of its kinds, chosen by
    `status` (the schema's discriminator), so it is checked against that kind alone: "any of
    the given schemas" would tell a reader nothing."""
    schema = _schema()
    discriminator = schema["discriminator"]
    kinds: dict[str, str] = discriminator["mapping"]
    key = discriminator["propertyName"]
    if (
        isinstance(data, dict)
        and data.get("schema_version", RESULT_SCHEMA_VERSION) not in READ_SCHEMA_VERSIONS
    ):
        # Not a version above ours (that is a newer runner's): its version is the problem.
        *earlier, last = map(str, READ_SCHEMA_VERSIONS)
        versions = f"{', '.join(earlier)} or {last}" if earlier else last
        return f" at schema_version: {versions} was expected"
    status = data.get(key) if isinstance(data, dict) else None
    if not isinstance(status, str) or status not in kinds:
        return f" at {key}: {status!r} is not one of {sorted(kinds)}"
    kind = Draft202012Validator({"$ref": kinds[status], "$defs": schema["$defs"]})
    if (found := best_match(kind.iter_errors(data))) is None:
        return None
    at = ".".join(map(str, found.absolute_path))
    return f"{' at ' + at if at else ''}: {found.message}"


@cache
def _schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return loaded


def _pydantic_words(error: ValidationError) -> str:
    # The schema has caught everything but the model's own rules ("an ok result has latency").
    parts = []
    for detail in error.errors():
        at = ".".join(map(str, detail["loc"]))
        parts.append(f"{at}: {detail['msg']}" if at else detail["msg"])
    return "; ".join(parts)


def pod_state(pod: Object, events: Sequence[Object] = ()) -> PodState:
    """Where `pod` stands, with an explanation for people; `events` (about any object) help
    explain a pending pod."""
    status = pod.get("status", {})
    terminated = runner_terminated(pod)
    message = message_reading(pod)
    disruption = condition(pod, "DisruptionTarget")
    phase: Phase
    # The runner's own end decides: a sidecar (an injected istio-proxy) keeps the pod Running
    # after it, and the Job's deadline then fails the pod, the runner's result in it.
    if status.get("phase") == "Succeeded" or terminated.get("exitCode") == 0:
        phase, reason = "succeeded", terminated.get("reason")
        explanation = _succeeded(message) + _held(pod)
    elif disruption is not None and disruption.get("status") == "True":
        phase, reason = "preempted", status.get("reason") or disruption.get("reason")
        explanation = _disrupted(pod, disruption)
    elif status.get("phase") == "Failed" or terminated:
        phase, reason = "failed", _failure_reason(pod)
        explanation = _failed(pod, message) + _held(pod)
    elif status.get("phase") == "Running":
        phase, reason, explanation = "running", None, _running(pod)
    elif status.get("phase") == "Unknown":
        # The node stopped reporting (NodeLost): the runner may still be measuring there.
        phase, reason, explanation = "running", status.get("reason"), _unknown(pod)
    else:
        phase, reason = "pending", _pending_reason(pod)
        explanation = explain_pending(pod, events)
    return PodState(
        name=pod["metadata"]["name"],
        index=completion_index(pod),
        phase=phase,
        node=pod.get("spec", {}).get("nodeName"),
        exit_code=terminated.get("exitCode"),
        reason=reason,
        explanation=explanation,
        finished_at=instant(terminated.get("finishedAt")),
        message=message,
        start=pod_start(pod),
        image_digest=image_digest(_runner_status(pod).get("imageID")),
    )


def pod_start(pod: Object) -> PodStart | None:
    """When `pod` was created, bound to its node and started its runner, as far as its status
    says; None where it says neither of the last two."""
    started = runner_started(pod)
    bound = bound_at(pod)
    if bound is None and started is None:
        return None
    created = instant(pod.get("metadata", {}).get("creationTimestamp"))
    return PodStart(created_at=created, scheduled_at=bound, started_at=started)


def bound_at(pod: Object) -> datetime | None:
    """When the scheduler bound `pod` to its node: its PodScheduled condition's turn to True;
    None while it is not bound."""
    scheduled = condition(pod, "PodScheduled") or {}
    bound = scheduled.get("lastTransitionTime") if scheduled.get("status") == "True" else None
    return instant(bound)


def is_stuck(state: PodState) -> bool:
    """A pending attempt held by something other than the time it takes to start: the
    scheduler's verdict, an image that cannot be pulled, a container that cannot be made."""
    return state.phase == "pending" and state.reason not in (None, *_STARTING)


def completion_index(pod: Object) -> int | None:
    """The Job completion index of `pod`: its label, or the annotation older clusters set."""
    meta = pod.get("metadata", {})
    for value in (
        (meta.get("labels") or {}).get(COMPLETION_INDEX_KEY),
        (meta.get("annotations") or {}).get(COMPLETION_INDEX_KEY),
    ):
        if value is not None and value.isdigit():
            return int(value)
    return None


def condition(obj: Object, kind: str) -> Object | None:
    """The status condition of type `kind` of a pod or Job, if it has one."""
    conditions: Sequence[Object] = obj.get("status", {}).get("conditions") or ()
    return next((found for found in conditions if found.get("type") == kind), None)


def explain_pending(pod: Object, events: Sequence[Object] = ()) -> str:
    """Why a pod has not started its runner: the image, the scheduler's verdict (from the
    PodScheduled condition, or the latest FailedScheduling event when the condition has no
    message), or the latest warning about it while it starts on its node."""
    about = [event for event in events if _is_about(event, pod)]
    waiting = _runner_status(pod).get("state", {}).get("waiting") or {}
    if waiting.get("reason") and waiting["reason"] not in _STARTING:
        return _cannot_start(waiting, about)
    node = pod.get("spec", {}).get("nodeName")
    if node:
        warning = _latest(event for event in about if event.get("type") == "Warning")
        said = "" if warning is None else f": {warning.get('reason')}: {warning.get('message')}"
        return f"starting on {node}{said}"
    return _unscheduled(pod, about)


def _cannot_start(waiting: Object, about: Sequence[Object]) -> str:
    reason, message = waiting["reason"], waiting.get("message")
    if reason in _IMAGE_PULL:
        # The kubelet's Failed events alternate "Failed to pull image ...: <why>" with a bare
        # "Error: ErrImagePull"; only the first kind says anything.
        pulls = [event for event in about if str(event.get("message")).startswith("Failed to pull")]
        pulled = _latest_message(pulls, "Failed")
        detail = message or pulled or "no message"
        # A back-off's message may only say that it backs off ("Back-off pulling image x"):
        # why the pull failed ("not found", "unauthorized") is then the event's.
        why = pulled.split(": ", 1)[-1] if pulled else None
        if message and why and why not in message:
            detail = f"{message}; {pulled}"
        return f"image pull failed ({reason}): {detail}"
    return f"the runner cannot start ({reason}): {message or 'no message'}"


def _unscheduled(pod: Object, about: Sequence[Object]) -> str:
    scheduled = condition(pod, "PodScheduled") or {}
    if scheduled.get("reason") == "SchedulingGated":
        gates = ", ".join(gate["name"] for gate in pod["spec"].get("schedulingGates", ()))
        return f"waiting for its scheduling gates to be removed: {gates}"
    verdict = scheduled.get("message") or _latest_message(about, "FailedScheduling")
    if verdict:
        # What follows " preemption: " says why evicting others would not help either.
        return f"unschedulable: {verdict.split(' preemption: ', 1)[0].rstrip('. ')}"
    if scheduled.get("reason") == "Unschedulable":
        return "unschedulable (the scheduler gave no reason)"
    return "waiting for the scheduler"


def _is_about(event: Object, pod: Object) -> bool:
    involved = event.get("involvedObject") or {}
    meta = pod["metadata"]
    return (
        involved.get("kind") == "Pod"
        and involved.get("name") == meta["name"]
        and involved.get("uid", meta.get("uid")) == meta.get("uid")
    )


def _latest(events: Iterable[Object]) -> Object | None:
    return max(events, key=_event_time, default=None)


def _latest_message(events: Iterable[Object], reason: str) -> str | None:
    latest = _latest(event for event in events if event.get("reason") == reason)
    return None if latest is None else latest.get("message")


def _event_time(event: Object) -> datetime:
    # The scheduler records through events.k8s.io: eventTime and series, null lastTimestamp;
    # the kubelet through core/v1: lastTimestamp and count.
    series = event.get("series") or {}
    stamp = (
        series.get("lastObservedTime")
        or event.get("lastTimestamp")
        or event.get("eventTime")
        or event.get("firstTimestamp")
        or event.get("metadata", {}).get("creationTimestamp")
    )
    # One without a time (or with one that is none) is the oldest.
    return instant(stamp) or EARLIEST


def _runner_status(pod: Object) -> Object:
    statuses: Sequence[Object] = pod.get("status", {}).get("containerStatuses") or ()
    for status in statuses:
        if status.get("name") == RUNNER:
            return status
    return statuses[0] if len(statuses) == 1 else {}


def runner_started(pod: Object) -> datetime | None:
    """When the runner container started (running or ended since); None where it has not."""
    state = _runner_status(pod).get("state") or {}
    return instant((state.get("terminated") or state.get("running") or {}).get("startedAt"))


def runner_terminated(pod: Object) -> Object:
    """The runner container's terminated state ({} while it has not ended)."""
    terminated: Object = _runner_status(pod).get("state", {}).get("terminated") or {}
    return terminated


def runner_container(pod: Object) -> Object | None:
    """The runner container of the pod's spec."""
    for container in pod.get("spec", {}).get("containers", ()):
        if container.get("name") == RUNNER:
            found: Object = container
            return found
    return None


def _memory_limit(pod: Object) -> str | None:
    container = runner_container(pod)
    if container is None:
        return None
    limit: str | None = container.get("resources", {}).get("limits", {}).get("memory")
    return limit


def _succeeded(reading: ResultReading) -> str:
    if reading.result is None:
        return f"succeeded without a readable result: {reading.problem}"
    return "succeeded"


def _disrupted(pod: Object, disruption: Object) -> str:
    status = pod["status"]
    if status.get("reason") == "Evicted":
        return f"evicted: {_sentence(status.get('message'))}; {_RETRIED}"
    reason = disruption.get("reason", "")
    what = _DISRUPTED_BY.get(reason, "disrupted")
    return f"{what} ({reason}): {_sentence(disruption.get('message'))}; {_RETRIED}"


def _failure_reason(pod: Object) -> str | None:
    # The pod's own reason (Evicted, Terminated...) says more than the container's Error.
    reason: str | None = pod["status"].get("reason") or runner_terminated(pod).get("reason")
    return reason


def _failed(pod: Object, message: ResultReading) -> str:
    status = pod["status"]
    terminated = runner_terminated(pod)
    if status.get("reason") == "Evicted":
        return f"evicted: {_sentence(status.get('message'))}"
    if not terminated:
        reason, message = status.get("reason"), status.get("message")
        cause = f" ({reason}): {message}" if reason else ""
        if _runner_started(pod):
            # NodeLost and the like: the runner ran, and its end never reached the API server.
            return f"failed while the runner was running{cause}; its end was never reported"
        return f"failed before the runner ran{cause}" if reason else "failed"
    if terminated.get("reason") == "OOMKilled":
        limit, code = _memory_limit(pod), terminated["exitCode"]
        if limit is None:
            return f"OOMKilled: the node ran out of memory for the container (exit {code})"
        return f"OOMKilled: the container exceeded its memory limit of {limit} (exit {code})"
    return _exited(pod, terminated, message)


def _exited(pod: Object, terminated: Object, message: ResultReading) -> str:
    code: int = terminated["exitCode"]
    result = message.result
    if isinstance(result, ErrorResult):
        return f"runner error {result.error.type} (exit {code}): {result.error.message}"
    if code > 128:
        deleted = " after the pod was deleted" if "deletionTimestamp" in pod["metadata"] else ""
        return f"killed by {_signal_name(code - 128)} (exit {code}){deleted}"
    named = f"exit {code}{_failure_class(code)}"
    words = f"{named} with no result" if result is None else named
    last = _last_log_line(terminated.get("message"))
    return f"{words}; the log ends: {last}" if last else words


def _failure_class(code: int) -> str:
    """The runner's failure class of an exit code, in brackets, where only the runner's own
    classification exits so: Python exits 1 for any exception, and argparse 2."""
    if code in _AMBIGUOUS_CODES or code not in ERROR_TYPES:
        return ""
    return f" ({ERROR_TYPES[ExitCode(code)]})"


_AMBIGUOUS_CODES: Final = frozenset({ExitCode.INTERNAL, ExitCode.BAD_CONFIG})


def _sentence(message: str | None) -> str:
    # Kubernetes' messages end in ". " or "." or nothing; ours go on after them.
    return (message or "no message").strip().rstrip(".")


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _last_log_line(message: str | None) -> str | None:
    if not message or message.lstrip().startswith("{"):
        return None
    # A progress line says where the runner was, not what went wrong.
    lines = [
        line.strip()
        for line in message.splitlines()
        if line.strip() and parse_progress(line.strip()) is None
    ]
    return lines[-1][:_QUOTE_LIMIT] if lines else None


def runner_succeeded(pod: Object) -> bool:
    """Whether `pod`'s attempt succeeded: the pod did, or its runner exited 0 (whatever its
    sidecars did after)."""
    return (
        pod.get("status", {}).get("phase") == "Succeeded"
        or runner_terminated(pod).get("exitCode") == 0
    )


def _held(pod: Object) -> str:
    """What the pod still runs once its runner has ended, in words ("" when it has ended)."""
    status = pod.get("status", {})
    if status.get("phase") != "Running":
        return ""
    others = sorted(
        str(container.get("name"))
        for container in status.get("containerStatuses") or ()
        if container.get("name") != RUNNER and "terminated" not in (container.get("state") or {})
    )
    return f"; the pod goes on running for {', '.join(others) or 'another container'} (a sidecar)"


def _runner_started(pod: Object) -> bool:
    """Whether the runner container was seen started: running, or having ended before."""
    status = _runner_status(pod)
    state = status.get("state") or {}
    return "running" in state or bool(status.get("lastState")) or status.get("started") is True


def _unknown(pod: Object) -> str:
    status = pod["status"]
    node = pod.get("spec", {}).get("nodeName")
    said = (
        f" ({status['reason']}): {_sentence(status.get('message'))}" if status.get("reason") else ""
    )
    ran = "the runner was running" if _runner_started(pod) else "the runner had not started"
    return f"its node {node} stopped reporting{said}; when it last did, {ran}"


def _running(pod: Object) -> str:
    where = f"running on {pod.get('spec', {}).get('nodeName')}"
    return f"{where}, being deleted" if "deletionTimestamp" in pod["metadata"] else where


def _pending_reason(pod: Object) -> str | None:
    waiting = _runner_status(pod).get("state", {}).get("waiting") or {}
    scheduled = condition(pod, "PodScheduled") or {}
    reason: str | None = waiting.get("reason") or (
        scheduled.get("reason") if scheduled.get("status") == "False" else None
    )
    return reason
