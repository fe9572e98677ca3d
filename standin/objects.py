"""Jobs, Pods and Events as a Kubernetes 1.33 API server returns them, for the collector's tests.

A Job starts as the Job synth wrote to the fixture's dist/
(standin/fixture.py) and gets what the API server adds on creation
(defaults, uid, selector) and the status the Job controller writes; a pod is what the Job
controller creates from its template (name, labels, annotations, owner, env), admission
completes (priority, tolerations) and the scheduler and the kubelet fill in, one factory per
scenario. Fields the API leaves out when empty stay out here too (a Job's `active`,
`succeeded`, `failed` and `completedIndexes`, a pod's `nodeName` before scheduling), so the
collector meets the shapes a cluster gives it. Every factory returns a new dict.
"""

import copy
import hashlib
import random
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any, Final, TypedDict, Unpack

import yaml

from contract.config import RunConfig
from contract.dist import config_text
from contract.errors import ErrorType, ExitCode
from contract.layout import COMPLETION_INDEX_KEY
from contract.result import (
    Applied,
    BenchResult,
    Environment,
    ErrorInfo,
    ErrorResult,
    LatencyStats,
    Memory,
    OkResult,
    PhaseTiming,
    Timings,
    Validity,
    compact,
    result_line,
    termination_message,
)
from contract.samples import encode
from contract.variant import VariantRef
from standin.fixture import fixture_root

Obj = dict[str, Any]

START: Final = datetime(2025, 6, 1, 2, 0, tzinfo=UTC)
"""When every Job here was created; the other times are offsets from it."""
NODE: Final = "ip-10-20-4-17.ec2.internal"
TRACKING_FINALIZER: Final = "batch.kubernetes.io/job-tracking"
FAILURE_COUNT_KEY: Final = "batch.kubernetes.io/job-index-failure-count"
IGNORED_COUNT_KEY: Final = "batch.kubernetes.io/job-index-ignored-failure-count"

NO_GPU: Final = (
    "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are "
    "available: 3 No preemption victims found for incoming pod."
)
"""The scheduler's message (PodScheduled condition, FailedScheduling event) for a GPU pod."""
NO_GPU_NEVER_PREEMPTS: Final = (
    "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. "
    "preemption: not eligible due to preemptionPolicy=Never."
)
"""The same for a pod whose PriorityClass says preemptionPolicy: Never (synth's low and
nightly classes)."""
EVICTION: Final = (
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki. "
    "Container runner was using 7962624Ki, request is 8Gi, has larger consumption of memory. "
)
"""The kubelet's node-pressure eviction message, trailing space included."""
DISRUPTIONS: Final = {
    "PreemptionByScheduler": "default-scheduler: preempting to accommodate a higher priority pod",
    "DeletionByTaintManager": "Taint manager: deleting due to NoExecute taint",
    "EvictionByEvictionAPI": "Eviction API: evicting",
    "DeletionByPodGC": "PodGC: node no longer exists",
    "TerminationByKubelet": "Pod was terminated in response to imminent node shutdown.",
}
"""The message of the DisruptionTarget condition each component writes (by its reason)."""
JOB_FAILURES: Final = {
    "DeadlineExceeded": "Job was active longer than specified deadline",
    "BackoffLimitExceeded": "Job has reached the specified backoff limit",
    "FailedIndexes": "Job has failed indexes",
    "MaxFailedIndexesExceeded": "Job has exceeded the specified maximal number of failed indexes",
}
"""The Job controller's message for each reason of a FailureTarget/Failed condition."""
RUNNER_STARTS: Final = "2025-06-01 02:00:12,345 INFO variant {index} ({id}): 4 threads, device cpu"
"""The runner's first stderr line, as `kubectl logs` shows it."""
_NAME_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"


def stamp(seconds: float) -> str:
    """A metav1.Time `seconds` after START, as the API writes it."""
    return (START + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_stamp(seconds: float) -> str:
    """A metav1.MicroTime (an event's eventTime) `seconds` after START."""
    return (START + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _uid(*parts: object) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(map(str, parts))))


def _digest(*parts: object) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()


@cache
def _documents(path: str) -> tuple[Obj, ...]:
    text = (fixture_root() / path).read_text(encoding="utf-8")
    return tuple(doc for doc in yaml.load_all(text, Loader=yaml.CSafeLoader) if doc)


def _priority_class(cluster: str, name: str) -> Obj:
    for document in _documents(f"dist/{cluster}/infrastructure/priority-classes.yaml"):
        if document["metadata"]["name"] == name:
            return document
    raise LookupError(f"no PriorityClass {name} in dist/{cluster}")


def cluster_identity(cluster: str, namespace: str) -> Obj:
    """The identity ConfigMap synth writes into `namespace` of `cluster`, as the API serves it."""
    for document in _documents(f"dist/{cluster}/infrastructure/namespaces.yaml"):
        metadata = document["metadata"]
        if document["kind"] == "ConfigMap" and metadata["namespace"] == namespace:
            served = {k: v for k, v in document.items() if k not in ("apiVersion", "kind")}
            return {**served, "metadata": {**metadata, "uid": _uid(cluster, namespace)}}
    raise LookupError(f"no identity ConfigMap in dist/{cluster} for {namespace}")


# Jobs


def job(workflow: str = "cpu-smoke", *, cluster: str = "us-east", target: str | None = None) -> Obj:
    """The Job synth wrote for `workflow` (its first, or the one for `target`) as the API server
    returns it once the Job controller has started it and before any pod exists."""
    workload = _documents(f"dist/{cluster}/workloads/{workflow}.yaml")
    found = next(
        doc
        for doc in workload
        if doc["kind"] == "Job"
        and target in (None, doc["metadata"]["labels"]["benchfleet.io/target"])
    )
    created = copy.deepcopy(found)
    meta, spec = created["metadata"], created["spec"]
    uid = _uid(cluster, meta["namespace"], meta["name"])
    meta.update(uid=uid, resourceVersion="48151", generation=1, creationTimestamp=stamp(0))
    # Defaults of the batch/v1 API: with backoffLimitPerIndex the global limit is unbounded,
    # and a podFailurePolicy makes replacements wait until a pod has really failed.
    spec.setdefault("backoffLimit", 2147483647 if "backoffLimitPerIndex" in spec else 6)
    replacement = "Failed" if "podFailurePolicy" in spec else "TerminatingOrFailed"
    spec.setdefault("podReplacementPolicy", replacement)
    spec.setdefault("suspend", False)
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    template = spec["template"]
    template["metadata"]["labels"].update(_controller_labels(meta["name"], uid))
    pod_spec = template["spec"]
    pod_spec.setdefault("dnsPolicy", "ClusterFirst")
    pod_spec.setdefault("schedulerName", "default-scheduler")
    pod_spec.setdefault("terminationGracePeriodSeconds", 30)
    for volume in pod_spec["volumes"]:
        for source in ("configMap", "projected"):
            if source in volume:
                volume[source].setdefault("defaultMode", 420)
    for container in pod_spec["containers"]:
        for variable in container["env"]:
            if "fieldRef" in variable.get("valueFrom", {}):
                variable["valueFrom"]["fieldRef"].setdefault("apiVersion", "v1")
    created["status"] = job_status(created)["status"]
    return created


def _controller_labels(name: str, uid: str) -> dict[str, str]:
    return {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": name,
        "controller-uid": uid,
        "job-name": name,
    }


def intervals(indexes: Iterable[int]) -> str:
    """Indexes as the Job controller writes completedIndexes and failedIndexes ("0,1,3-5")."""
    runs: list[list[int]] = []
    for index in sorted(set(indexes)):
        if runs and index == runs[-1][1] + 1:
            runs[-1][1] = index
        else:
            runs.append([index, index])
    # Like the controller, a run of two is written "3,4" and only longer runs "3-5".
    parts = [
        str(first) if first == last else f"{first}{',' if last == first + 1 else '-'}{last}"
        for first, last in runs
    ]
    return ",".join(parts)


def job_condition(kind: str, reason: str, message: str, *, seconds: float = 600) -> Obj:
    """A Job condition as the Job controller writes it (probe and transition time alike)."""
    return {
        "type": kind,
        "status": "True",
        "lastProbeTime": stamp(seconds),
        "lastTransitionTime": stamp(seconds),
        "reason": reason,
        "message": message,
    }


def job_status(
    job: Mapping[str, Any],
    *,
    active: int = 0,
    ready: int = 0,
    terminating: int = 0,
    failed: int = 0,
    completed: Iterable[int] = (),
    failed_indexes: Iterable[int] = (),
    conditions: Iterable[Obj] = (),
    completion_seconds: float | None = None,
) -> Obj:
    """`job` with the status the Job controller writes: `succeeded` is the number of completed
    indexes, zero counters and an empty completedIndexes are left out, failedIndexes is there
    (possibly "") whenever the Job has backoffLimitPerIndex."""
    updated = copy.deepcopy(dict(job))
    done = intervals(completed)
    status: Obj = {"startTime": stamp(1)}
    counters = {"active": active, "succeeded": len(set(completed)), "failed": failed}
    status.update({key: value for key, value in counters.items() if value})
    status.update(ready=ready, terminating=terminating, uncountedTerminatedPods={})
    if done:
        status["completedIndexes"] = done
    if "backoffLimitPerIndex" in updated["spec"]:
        status["failedIndexes"] = intervals(failed_indexes)
    if listed := list(conditions):
        status["conditions"] = listed
    if completion_seconds is not None:
        status["completionTime"] = stamp(completion_seconds)
    updated["status"] = status
    return updated


def complete(job: Mapping[str, Any], *, seconds: float = 900) -> Obj:
    """`job` after every index succeeded: SuccessCriteriaMet, then Complete."""
    message = "Reached expected number of succeeded pods"
    return job_status(
        job,
        completed=range(job["spec"]["completions"]),
        conditions=[
            job_condition("SuccessCriteriaMet", "CompletionsReached", message, seconds=seconds),
            job_condition("Complete", "CompletionsReached", message, seconds=seconds),
        ],
        completion_seconds=seconds,
    )


def failed_job(
    job: Mapping[str, Any],
    reason: str,
    *,
    message: str | None = None,
    terminating: int = 0,
    seconds: float = 1801,
    **counts: Any,
) -> Obj:
    """`job` failing for `reason` (a key of JOB_FAILURES, or PodFailurePolicy with `message`):
    FailureTarget while pods still terminate, then Failed as well once `terminating` is 0."""
    text = message or JOB_FAILURES[reason]
    conditions = [job_condition("FailureTarget", reason, text, seconds=seconds)]
    if not terminating:
        conditions.append(job_condition("Failed", reason, text, seconds=seconds + 31))
    return job_status(job, terminating=terminating, conditions=conditions, **counts)


def suspended(job: Mapping[str, Any]) -> Obj:
    """`job` as Kueue holds it until admission: suspended, never started."""
    held = copy.deepcopy(dict(job))
    held["spec"]["suspend"] = True
    held["status"] = {
        "conditions": [job_condition("Suspended", "JobSuspended", "Job suspended", seconds=0)],
        "ready": 0,
        "terminating": 0,
        "uncountedTerminatedPods": {},
    }
    if "backoffLimitPerIndex" in held["spec"]:
        held["status"]["failedIndexes"] = ""
    return held


# Pods


class Attempt(TypedDict, total=False):
    """Which attempt of its index a pod is: the failures of the index before it, as the Job
    controller counts them in the pod's annotations."""

    failures: int
    """Failures that count against backoffLimitPerIndex."""
    ignored: int
    """Failures the podFailurePolicy ignored (disruptions)."""


def pod(
    job: Mapping[str, Any],
    index: int,
    *,
    failures: int = 0,
    ignored: int = 0,
    node: str | None = NODE,
    cluster: str = "us-east",
) -> Obj:
    """The pod the Job controller creates for `index` after `failures` counted and `ignored`
    disregarded failures of that index, bound to `node` (None: not scheduled). Its status is
    the bare Pending one; the scenario factories below fill it in."""
    meta, spec = job["metadata"], job["spec"]
    name, uid = meta["name"], meta["uid"]
    attempt = failures + ignored
    digest = _digest(name, index, attempt)
    suffix = "".join(_NAME_ALPHABET[int(digest[i : i + 2], 16) % 27] for i in range(0, 10, 2))
    template = copy.deepcopy(spec["template"])
    annotations = {COMPLETION_INDEX_KEY: str(index)}
    if "backoffLimitPerIndex" in spec:
        annotations[FAILURE_COUNT_KEY] = str(failures)
        if ignored:
            annotations[IGNORED_COUNT_KEY] = str(ignored)
    pod_spec = template["spec"]
    pod_spec["hostname"] = f"{name}-{index}"
    for container in pod_spec["containers"]:
        container["env"].append(
            {
                "name": "JOB_COMPLETION_INDEX",
                "valueFrom": {
                    "fieldRef": {
                        "apiVersion": "v1",
                        "fieldPath": f"metadata.labels['{COMPLETION_INDEX_KEY}']",
                    }
                },
            }
        )
    priority = _priority_class(cluster, pod_spec["priorityClassName"])
    pod_spec.update(priority=priority["value"], preemptionPolicy=priority["preemptionPolicy"])
    pod_spec["serviceAccount"] = pod_spec["serviceAccountName"]
    pod_spec["tolerations"] = [*pod_spec.get("tolerations", []), *_DEFAULT_TOLERATIONS]
    if node is not None:
        pod_spec["nodeName"] = node
    created = 5 + 600 * attempt + index
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{name}-{index}-{suffix}",
            "generateName": f"{name}-{index}-",
            "namespace": meta["namespace"],
            "uid": _uid(name, index, attempt),
            "resourceVersion": str(50000 + 100 * attempt + index),
            "creationTimestamp": stamp(created),
            "labels": {**template["metadata"]["labels"], COMPLETION_INDEX_KEY: str(index)},
            "annotations": annotations,
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": name,
                    "uid": uid,
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "finalizers": [TRACKING_FINALIZER],
        },
        "spec": pod_spec,
        "status": {"phase": "Pending", "qosClass": _qos_class(pod_spec)},
    }


_DEFAULT_TOLERATIONS: Final = [
    {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
]


def _qos_class(pod_spec: Mapping[str, Any]) -> str:
    resources = [container["resources"] for container in pod_spec["containers"]]
    if all(r.get("requests") == r.get("limits") for r in resources):
        return "Guaranteed"
    return "Burstable"


def _seconds(pod: Mapping[str, Any]) -> float:
    created = datetime.fromisoformat(pod["metadata"]["creationTimestamp"])
    return (created - START).total_seconds()


def _condition(kind: str, status: bool, at: float, reason: str = "", message: str = "") -> Obj:
    condition: Obj = {
        "type": kind,
        "status": "True" if status else "False",
        "lastProbeTime": None,
        "lastTransitionTime": stamp(at),
    }
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def _runner_spec(pod: Mapping[str, Any]) -> Obj:
    container: Obj = pod["spec"]["containers"][0]
    return container


def _container_status(pod: Mapping[str, Any], state: Obj, *, pulled: bool = True) -> Obj:
    runner = _runner_spec(pod)
    image = runner["image"]
    terminated = state.get("terminated")
    status: Obj = {
        "name": runner["name"],
        "state": state,
        "lastState": {},
        "ready": "running" in state,
        "restartCount": 0,
        "image": image,
        "imageID": image if pulled else "",
        "started": "running" in state,
        "resources": copy.deepcopy(runner["resources"]),
        "volumeMounts": [
            {
                "name": mount["name"],
                "mountPath": mount["mountPath"],
                **(
                    {"readOnly": True, "recursiveReadOnly": "Disabled"}
                    if mount.get("readOnly")
                    else {}
                ),
            }
            for mount in runner["volumeMounts"]
        ],
    }
    if pulled:
        status["containerID"] = "containerd://" + _digest(pod["metadata"]["uid"], "runner")
    if terminated is not None:
        terminated["containerID"] = status["containerID"]
    return status


def _scheduled(pod: Obj, *, phase: str, state: Obj, started: bool, pulled: bool = True) -> Obj:
    """`pod` as the kubelet reports it on its node: conditions, IPs, the runner's status."""
    t = _seconds(pod)
    running = "running" in state
    finished = "terminated" in state
    not_ready = "PodCompleted" if phase == "Succeeded" else "PodFailed" if finished else ""
    unready = not_ready or "ContainersNotReady"
    unready_message = "" if not_ready else "containers with unready status: [runner]"
    pod["status"].update(
        phase=phase,
        conditions=[
            _condition("PodReadyToStartContainers", not finished, t + 3),
            _condition("Initialized", True, t + 2),
            _condition("Ready", running, t + 20, "" if running else unready, unready_message),
            _condition(
                "ContainersReady", running, t + 20, "" if running else unready, unready_message
            ),
            _condition("PodScheduled", True, t + 1),
        ],
        hostIP="10.20.4.17",
        hostIPs=[{"ip": "10.20.4.17"}],
        containerStatuses=[_container_status(pod, state, pulled=pulled)],
    )
    if started:
        pod["status"].update(podIP="10.244.3.41", podIPs=[{"ip": "10.244.3.41"}])
    pod["status"]["startTime"] = stamp(t + 1)
    return pod


def _terminated(
    pod: Mapping[str, Any], exit_code: int, reason: str, message: str | None, ran: float
) -> Obj:
    t = _seconds(pod)
    terminated: Obj = {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": stamp(t + 20),
        "finishedAt": stamp(t + 20 + ran),
    }
    if message is not None:
        terminated["message"] = message
    return {"terminated": terminated}


def _deleted(pod: Obj, after: float) -> Obj:
    pod["metadata"]["deletionTimestamp"] = stamp(_seconds(pod) + after + 30)
    pod["metadata"]["deletionGracePeriodSeconds"] = 30
    return pod


def unschedulable_pod(
    job: Mapping[str, Any], index: int, *, message: str | None = NO_GPU, **attempt: Unpack[Attempt]
) -> Obj:
    """A pod the scheduler cannot place (message None: the condition carries none)."""
    created = pod(job, index, node=None, **attempt)
    created["status"]["conditions"] = [
        _condition("PodScheduled", False, _seconds(created) + 1, "Unschedulable", message or "")
    ]
    return created


def image_pull_pod(
    job: Mapping[str, Any], index: int, *, reason: str = "ErrImagePull", **attempt: Unpack[Attempt]
) -> Obj:
    """A pod on its node whose runner image cannot be pulled: ErrImagePull right after a pull
    failed, ImagePullBackOff while the kubelet waits to try again."""
    created = pod(job, index, **attempt)
    message = image_pull_error(created)
    if reason == "ImagePullBackOff":
        message = f"{back_off_message(created)}: ErrImagePull: {message}"
    waiting = {"waiting": {"reason": reason, "message": message}}
    return _scheduled(created, phase="Pending", state=waiting, started=True, pulled=False)


def image_pull_error(pod: Mapping[str, Any]) -> str:
    """What containerd answers the kubelet for an image that is not in the registry."""
    image = _runner_spec(pod)["image"]
    return (
        f'rpc error: code = NotFound desc = failed to pull and unpack image "{image}": '
        f'failed to resolve reference "{image}": {image}: not found'
    )


def back_off_message(pod: Mapping[str, Any]) -> str:
    """The kubelet's message while it backs off pulling the runner image."""
    return f'Back-off pulling image "{_runner_spec(pod)["image"]}"'


def running_pod(job: Mapping[str, Any], index: int, **attempt: Unpack[Attempt]) -> Obj:
    """A pod whose runner is measuring."""
    created = pod(job, index, **attempt)
    state = {"running": {"startedAt": stamp(_seconds(created) + 20)}}
    return _scheduled(created, phase="Running", state=state, started=True)


def succeeded_pod(
    job: Mapping[str, Any],
    index: int,
    result: BenchResult | None = None,
    **attempt: Unpack[Attempt],
) -> Obj:
    """A pod whose runner measured its variant and wrote the compacted result to
    /dev/termination-log (by default `ok_result(job, index)`)."""
    created = pod(job, index, **attempt)
    message = compact(result or ok_result(job, index))
    state = _terminated(created, 0, "Completed", message, ran=95)
    return _scheduled(created, phase="Succeeded", state=state, started=True)


def failed_pod(
    job: Mapping[str, Any],
    index: int,
    error_type: ErrorType = "model_load",
    message: str = "torch.export.load cannot read tiny-mlp.pt2: unexpected EOF",
    **attempt: Unpack[Attempt],
) -> Obj:
    """A pod whose runner failed with `error_type`, its exit code and its error result."""
    created = pod(job, index, **attempt)
    code = next(code for code in ExitCode if code.name.lower() == error_type)
    text = compact(error_result(job, error_type, message))
    state = _terminated(created, int(code), "Error", text, ran=4)
    return _scheduled(created, phase="Failed", state=state, started=True)


def group_pod(
    job: Mapping[str, Any],
    index: int,
    results: Sequence[BenchResult],
    *,
    exit_code: int = 0,
    reason: str = "Completed",
    **attempt: Unpack[Attempt],
) -> Obj:
    """A pod that ran a group of variants and handed over `results` (the runner rewrites the
    termination log with all of them after each one) before it ended with `exit_code` and
    `reason`: 0 and Completed, a runner error's code, or 137 and OOMKilled when the kernel
    killed it mid-group, whose non-empty termination log the kubelet keeps."""
    created = pod(job, index, **attempt)
    message = termination_message(list(results)) if results else log_tail(starting_log(job, 0))
    state = _terminated(created, exit_code, reason, message, ran=30 * max(len(results), 1))
    return _scheduled(
        created, phase="Succeeded" if exit_code == 0 else "Failed", state=state, started=True
    )


def crashed_pod(
    job: Mapping[str, Any],
    index: int,
    *,
    exit_code: int = 1,
    log: str | None = None,
    **attempt: Unpack[Attempt],
) -> Obj:
    """A pod whose runner died without writing /dev/termination-log: FallbackToLogsOnError
    puts the end of its log in the termination message (by default a Python traceback)."""
    created = pod(job, index, **attempt)
    tail = log_tail(log if log is not None else crash_log(job, index))
    state = _terminated(created, exit_code, "Error", tail or None, ran=3)
    return _scheduled(created, phase="Failed", state=state, started=True)


def oom_killed_pod(job: Mapping[str, Any], index: int, **attempt: Unpack[Attempt]) -> Obj:
    """A pod whose runner the kernel killed at its memory limit: exit 137, OOMKilled, and (by
    FallbackToLogsOnError) the end of its log as the termination message."""
    created = pod(job, index, **attempt)
    tail = log_tail(starting_log(job, index))
    state = _terminated(created, 137, "OOMKilled", tail, ran=41)
    return _scheduled(created, phase="Failed", state=state, started=True)


def preempted_pod(
    job: Mapping[str, Any],
    index: int,
    *,
    reason: str = "PreemptionByScheduler",
    **attempt: Unpack[Attempt],
) -> Obj:
    """A pod disrupted with DisruptionTarget `reason` (a key of DISRUPTIONS) as it finished
    terminating. The runner is PID 1 with no SIGTERM handler, so the kernel ignores SIGTERM and
    the kubelet kills it after the 30 s grace period: exit 137, reason Error. Every reason but
    the kubelet's own deletes the pod: it keeps a deletionTimestamp until the Job controller
    removes its finalizer, then disappears."""
    created = pod(job, index, **attempt)
    message = DISRUPTIONS[reason]
    t = _seconds(created)
    tail = log_tail(starting_log(job, index))
    state = _terminated(created, 137, "Error", tail, ran=300)
    _scheduled(created, phase="Failed", state=state, started=True)
    created["status"]["conditions"].insert(
        0, _condition("DisruptionTarget", True, t + 290, reason, message)
    )
    if reason == "TerminationByKubelet":
        created["status"].update(reason="Terminated", message=message)
    else:
        _deleted(created, after=290)
    return created


def evicted_pod(job: Mapping[str, Any], index: int, **attempt: Unpack[Attempt]) -> Obj:
    """A pod the kubelet evicted for memory pressure on its node: phase Failed, reason Evicted,
    and a DisruptionTarget condition (TerminationByKubelet) with the same message. The kubelet
    does not delete it."""
    created = pod(job, index, **attempt)
    t = _seconds(created)
    state = _terminated(created, 137, "Error", log_tail(starting_log(job, index)), ran=200)
    _scheduled(created, phase="Failed", state=state, started=True)
    condition = _condition("DisruptionTarget", True, t + 219, "TerminationByKubelet", EVICTION)
    created["status"]["conditions"].insert(0, condition)
    created["status"].update(reason="Evicted", message=EVICTION)
    return created


def deadline_killed_pod(
    job: Mapping[str, Any], index: int, *, terminated: bool = True, **attempt: Unpack[Attempt]
) -> Obj:
    """A pod the Job controller deleted when the Job's activeDeadlineSeconds passed: a
    deletionTimestamp and no DisruptionTarget condition; still Running during the grace
    period (`terminated` False), then killed by SIGKILL (exit 137, reason Error)."""
    created = pod(job, index, **attempt)
    deadline = job["spec"]["activeDeadlineSeconds"] - _seconds(created)
    if terminated:
        state = _terminated(
            created, 137, "Error", log_tail(starting_log(job, index)), deadline + 10
        )
        _scheduled(created, phase="Failed", state=state, started=True)
    else:
        state = {"running": {"startedAt": stamp(_seconds(created) + 20)}}
        _scheduled(created, phase="Running", state=state, started=True)
    return _deleted(created, after=deadline - 10)


ISTIO_PROXY: Final = "istio-proxy"


def with_sidecar(pod: Mapping[str, Any], *, killed_at_deadline: bool = False) -> Obj:
    """`pod` (whose runner has ended) with an injected Istio sidecar, a container beside the
    runner (not a native one): still running, so the pod stays Running; or with
    `killed_at_deadline`, killed when the Job's activeDeadlineSeconds passed and the Job
    controller deleted the pod, which fails it."""
    changed = copy.deepcopy(dict(pod))
    image = "docker.io/istio/proxyv2:1.27.1"
    changed["spec"]["containers"].append(
        {"name": ISTIO_PROXY, "image": image, "args": ["proxy", "sidecar"]}
    )
    started = changed["status"]["containerStatuses"][0]["state"]["terminated"]["startedAt"]
    state: Obj = {"running": {"startedAt": started}}
    if killed_at_deadline:
        end = _seconds(changed) + 1800
        state = {"terminated": {"exitCode": 137, "reason": "Error", "startedAt": started,
                                "finishedAt": stamp(end)}}  # fmt: skip
        # The Job controller deletes its pods at the deadline: the kubelet kills the sidecar.
        changed["status"]["phase"] = "Failed"
        _deleted(changed, after=1800 - 30)
    else:
        changed["status"]["phase"] = "Running"
    changed["status"]["containerStatuses"].append(
        {
            "name": ISTIO_PROXY,
            "state": state,
            "lastState": {},
            "ready": "running" in state,
            "restartCount": 0,
            "image": image,
            "imageID": image,
            "started": "running" in state,
        }
    )
    return changed


def with_termination_message(pod: Mapping[str, Any], message: str | None) -> Obj:
    """`pod` with the runner's termination message replaced (None: left out, as when the
    file was empty and the container exited 0, so the kubelet did not fall back to the log)."""
    changed = copy.deepcopy(dict(pod))
    terminated = changed["status"]["containerStatuses"][0]["state"]["terminated"]
    terminated.pop("message", None)
    if message is not None:
        terminated["message"] = message
    return changed


# Results and logs


def run_config(job: Mapping[str, Any]) -> RunConfig:
    """The config.json synth wrote into the ConfigMap the Job's pods mount (named like the
    Job synth wrote, which a test may have renamed since), or into its parts."""
    volume = job["spec"]["template"]["spec"]["volumes"][0]
    name = volume["configMap"]["name"] if "configMap" in volume else job["metadata"]["name"]
    workflow = job["metadata"]["labels"]["workflow"]
    for cluster in ("us-east", "eu-west"):
        documents = _documents(f"dist/{cluster}/workloads/{workflow}.yaml")
        configmaps = {d["metadata"]["name"]: d for d in documents if d["kind"] == "ConfigMap"}
        if (text := config_text(configmaps, name)) is not None:
            return RunConfig.model_validate_json(text)
    raise LookupError(f"no config.json of Job {name} in dist/")


def ok_result(job: Mapping[str, Any], index: int, *, p50_ms: float = 0.84) -> BenchResult:
    """The result a runner measures for `index` of `job`, whole (the log line has it so),
    every iteration's duration included."""
    config = run_config(job)
    variant = config.variants[index]
    count = 1180
    # Nanosecond noise, as a timer gives it: the samples take about 3.3 bytes an iteration.
    noise = random.Random(index)
    stats = {
        "mean_ms": p50_ms * 1.02,
        "std_ms": p50_ms * 0.05,
        "cv": 0.049,
        "min_ms": p50_ms * 0.91,
        "p25_ms": p50_ms * 0.97,
        "p50_ms": p50_ms,
        "p75_ms": p50_ms * 1.04,
        "p90_ms": p50_ms * 1.08,
        "p95_ms": p50_ms * 1.12,
        "p99_ms": p50_ms * 1.3,
        "max_ms": p50_ms * 2.2,
        "iqr_ms": p50_ms * 0.07,
    }
    return OkResult(
        workflow=config.workflow,
        target=config.target,
        variant=VariantRef.of(variant),
        model_sha256=config.models[variant.model].sha256,
        latency=LatencyStats(count=count, **stats),
        throughput_samples_per_s=variant.batch_size * 1000 / p50_ms,
        timings=Timings(
            load_s=0.21,
            prepare_s=0.03,
            first_iteration_ms=12.5,
            warmup=PhaseTiming(iterations=240, seconds=0.2, stopped_by="minimums"),
            measure=PhaseTiming(iterations=count, seconds=1.0, stopped_by="minimums"),
        ),
        memory=Memory(peak_rss_bytes=412_000_000),
        applied=Applied(
            compute_dtype="float32" if variant.precision == "fp32" else "bfloat16",
            parameter_dtypes={"float32" if variant.precision == "fp32" else "bfloat16": 6},
            input_dtypes=["float32"],
            output_dtype="float32",
            quantization=variant.quantization,
            linear_layers=3,
            quantized_layers=0,
            weight_bytes=52_000,
        ),
        validity=Validity(
            noisy=False,
            noise=0.07,
            reliable_percentiles=["p25", "p50", "p75", "p90", "p95"],
            output_finite=True,
        ),
        environment=Environment(
            python="3.11.14",
            torch="2.13.0+cpu",
            device="cpu",
            device_name="Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz",
            cpu_model="Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz",
            threads=4,
            cpu_quota=4.0,
            node_name=NODE,
            image=job["spec"]["template"]["spec"]["containers"][0]["image"],
            hostname=f"{job['metadata']['name']}-{index}",
        ),
        samples=encode([round(p50_ms * 1e6 * noise.uniform(0.91, 1.3)) for _ in range(count)]),
    )


def error_result(job: Mapping[str, Any], error_type: ErrorType, message: str) -> BenchResult:
    """The result a runner hands over when it fails with `error_type` (no variant: it fails
    before or while reading it)."""
    labels = job["metadata"]["labels"]
    return ErrorResult(
        workflow=labels["workflow"],
        target=labels["benchfleet.io/target"],
        error=ErrorInfo(type=error_type, message=message),
    )


def starting_log(job: Mapping[str, Any], index: int) -> str:
    """A runner's log up to the start of its measurement."""
    variant = run_config(job).variants[index]
    return RUNNER_STARTS.format(index=index, id=variant.id) + "\n"


def runner_log(job: Mapping[str, Any], index: int, result: BenchResult) -> str:
    """A finished runner's log (stdout and stderr together, as `kubectl logs` gives it): the
    stderr lines, then the whole result on the last line."""
    return starting_log(job, index) + result_line(result)


def crash_log(job: Mapping[str, Any], index: int) -> str:
    """The log of a runner that died of something it did not catch."""
    return starting_log(job, index) + (
        "Traceback (most recent call last):\n"
        '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
        '  File "/app/runner/__main__.py", line 7, in <module>\n'
        "    from runner.run import run_variant\n"
        "ImportError: libgomp.so.1: cannot open shared object file: No such file or directory\n"
    )


def log_tail(log: str) -> str:
    """What FallbackToLogsOnError puts in the termination message: the last 80 lines of the
    log, at most its last 2048 bytes."""
    tail = "".join(log.splitlines(keepends=True)[-80:]).encode()[-2048:]
    return tail.decode(errors="ignore")


# Events


def _involved(pod: Mapping[str, Any], field_path: str | None = None) -> Obj:
    meta = pod["metadata"]
    involved: Obj = {
        "kind": "Pod",
        "namespace": meta["namespace"],
        "name": meta["name"],
        "uid": meta["uid"],
        "apiVersion": "v1",
        "resourceVersion": meta["resourceVersion"],
    }
    if field_path:
        involved["fieldPath"] = field_path
    return involved


def _event_meta(pod: Mapping[str, Any], reason: str, seconds: float) -> Obj:
    meta = pod["metadata"]
    return {
        "name": f"{meta['name']}.{_digest(meta['uid'], reason)[:16]}",
        "namespace": meta["namespace"],
        "uid": _uid(meta["uid"], reason),
        "resourceVersion": str(60000 + int(seconds)),
        "creationTimestamp": stamp(seconds),
    }


def scheduler_event(
    pod: Mapping[str, Any],
    reason: str,
    message: str,
    *,
    kind: str = "Warning",
    seconds: float | None = None,
    count: int = 1,
) -> Obj:
    """An event the scheduler records about `pod` through the events.k8s.io API, read back as
    core/v1: eventTime and (when repeated) series set, the legacy timestamps null."""
    first = _seconds(pod) + 1 if seconds is None else seconds
    event: Obj = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": _event_meta(pod, reason, first),
        "involvedObject": _involved(pod),
        "reason": reason,
        "message": message,
        "source": {},
        "firstTimestamp": None,
        "lastTimestamp": None,
        "type": kind,
        "eventTime": micro_stamp(first),
        "action": "Scheduling" if reason == "FailedScheduling" else "Preempting",
        "reportingComponent": "default-scheduler",
        "reportingInstance": "default-scheduler-ip-10-20-0-5",
    }
    if count > 1:
        event["series"] = {"count": count, "lastObservedTime": micro_stamp(first + 60 * count)}
    return event


def failed_scheduling_event(
    pod: Mapping[str, Any], message: str = NO_GPU, *, count: int = 1, seconds: float | None = None
) -> Obj:
    """The scheduler's FailedScheduling event for `pod`."""
    return scheduler_event(pod, "FailedScheduling", message, count=count, seconds=seconds)


def preempted_event(pod: Mapping[str, Any], preemptor_uid: str) -> Obj:
    """The scheduler's event on a victim of preemption."""
    node = pod["spec"]["nodeName"]
    message = f"Preempted by pod {preemptor_uid} on node {node}"
    return scheduler_event(pod, "Preempted", message, kind="Normal", seconds=_seconds(pod) + 290)


def kubelet_event(
    pod: Mapping[str, Any], reason: str, message: str, *, kind: str = "Warning", count: int = 1
) -> Obj:
    """An event the kubelet records about the runner container (core/v1 recorder)."""
    first = _seconds(pod) + 5
    node = pod["spec"]["nodeName"]
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": _event_meta(pod, reason + message, first),
        "involvedObject": _involved(pod, "spec.containers{runner}"),
        "reason": reason,
        "message": message,
        "source": {"component": "kubelet", "host": node},
        "firstTimestamp": stamp(first),
        "lastTimestamp": stamp(first + 30 * (count - 1)),
        "count": count,
        "type": kind,
        "eventTime": None,
        "reportingComponent": "kubelet",
        "reportingInstance": node,
    }


def image_pull_failed_event(pod: Mapping[str, Any], count: int = 1) -> Obj:
    """The kubelet's Failed event for a failed pull of the runner image."""
    image = _runner_spec(pod)["image"]
    message = f'Failed to pull image "{image}": {image_pull_error(pod)}'
    return kubelet_event(pod, "Failed", message, count=count)


def back_off_event(pod: Mapping[str, Any], count: int = 1) -> Obj:
    """The kubelet's BackOff event (type Normal) while it waits to pull the image again."""
    return kubelet_event(pod, "BackOff", back_off_message(pod), kind="Normal", count=count)
