"""One pod in words: the runner's result wherever it survived, and why the pod stands where it
does."""

from datetime import datetime, timedelta
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from collector.indexes import index_states
from collector.pods import ResultReading, held_pod, pod_state, read_result
from collector.status import pods_by_job
from contract.errors import ExitCode
from contract.instant import instant
from contract.layout import COMPLETION_INDEX_KEY
from contract.result import BenchResult, ErrorResult, without_samples
from standin import objects
from standin.objects import Obj

LONG_CONFIG_ERROR = "/config/config.json is not a valid config.json: " + "; ".join(
    f"variants.{index}.batch_size: Input should be greater than or equal to 1"
    for index in range(60)
)


@pytest.fixture(scope="module")
def smoke() -> Obj:
    """cpu-smoke's Job: six CPU variants, memory limit 8Gi, backoffLimitPerIndex 2."""
    return objects.job()


@pytest.fixture(scope="module")
def spot_gpu() -> Obj:
    """nightly-spot's T4 Job: GPU pods of a PriorityClass that never preempts, limit 4Gi."""
    return objects.job("nightly-spot", target="t4-spot")


@pytest.fixture
def succeeded(smoke: Obj) -> Obj:
    return objects.succeeded_pod(smoke, 3)


@pytest.fixture
def whole(smoke: Obj) -> BenchResult:
    """The result the runner of `succeeded` measured, as its log line has it."""
    return objects.ok_result(smoke, 3)


@pytest.fixture
def compacted(smoke: Obj) -> Obj:
    """A pod whose runner error was too long for the termination log."""
    return objects.failed_pod(smoke, 0, "bad_config", LONG_CONFIG_ERROR)


def log_of(job: Obj, index: int, result: BenchResult) -> str:
    return objects.runner_log(job, index, result)


def every_kind_of_pod(job: Obj) -> list[Obj]:
    """One pod of `job` in each state the collector explains."""
    return [
        objects.unschedulable_pod(job, 0),
        objects.image_pull_pod(job, 1, reason="ImagePullBackOff"),
        objects.running_pod(job, 2),
        objects.succeeded_pod(job, 3),
        objects.failed_pod(job, 4),
        objects.oom_killed_pod(job, 5, failures=1),
        objects.crashed_pod(job, 0),
        objects.preempted_pod(job, 1, ignored=1),
        objects.evicted_pod(job, 2),
        objects.deadline_killed_pod(job, 3),
    ]


def test_the_pod_factories_build_pods_the_1_33_api_schema_accepts(smoke: Obj) -> None:
    pods = every_kind_of_pod(smoke)
    events = [
        objects.failed_scheduling_event(pods[0], count=3),
        objects.image_pull_failed_event(pods[1]),
        objects.back_off_event(pods[1], count=4),
        objects.preempted_event(pods[7], "9f1d0c3e-5b7a-4f0e-8d2c-1a6b3e5f7c90"),
    ]
    for obj in [*pods, *events]:
        kubernetes_validate.validate(obj, "1.33.0", strict=True)


def test_a_held_pod_reads_as_the_whole_pod(smoke: Obj, spot_gpu: Obj) -> None:
    """held_pod drops only what nothing reads: every state, explanation and index reads the
    same from it, including with events and on a node with a memory limit (OOMKilled)."""
    pods = [*every_kind_of_pod(smoke), objects.oom_killed_pod(spot_gpu, 0)]
    events = [
        objects.failed_scheduling_event(pods[0], count=3),
        objects.image_pull_failed_event(pods[1]),
        objects.back_off_event(pods[1], count=4),
    ]
    held = [held_pod(pod) for pod in pods]
    for whole, kept in zip(pods, held, strict=True):
        assert pod_state(kept, events) == pod_state(whole, events)
        assert pod_state(kept).message == pod_state(whole).message
    assert index_states(smoke, held, events) == index_states(smoke, pods, events)
    jobs = {smoke["metadata"]["name"], spot_gpu["metadata"]["name"]}
    assert pods_by_job(held).keys() == pods_by_job(pods).keys() == jobs
    assert "volumes" in pods[0]["spec"] and "volumes" not in held[0]["spec"]


# read_result


@pytest.mark.parametrize("with_log", [False, True])
def test_a_whole_result_comes_from_the_termination_message(
    smoke: Obj, succeeded: Obj, whole: BenchResult, with_log: bool
) -> None:
    """All but the samples: a log, even at hand, is not read for them."""
    reading = read_result(succeeded, log_of(smoke, 3, whole) if with_log else None)
    summary = without_samples(whole)
    assert (reading.result, reading.source, reading.problem) == (
        summary,
        "termination-message",
        None,
    )


def test_a_compacted_termination_message_gives_way_to_the_whole_result_in_the_log(
    smoke: Obj, compacted: Obj
) -> None:
    failure = objects.error_result(smoke, "bad_config", LONG_CONFIG_ERROR)
    reading = read_result(compacted, log_of(smoke, 0, failure))
    assert (reading.result, reading.source, reading.problem) == (failure, "log", None)


def test_a_compacted_result_is_what_there_is_without_a_log_and_says_its_details_are_gone(
    compacted: Obj,
) -> None:
    """#15: it used to read as a whole result, with no word of what compaction dropped."""
    reading = read_result(compacted, None)
    assert isinstance(reading.result, ErrorResult) and reading.result.compacted
    assert LONG_CONFIG_ERROR.startswith(reading.result.error.message.removesuffix("..."))
    assert reading.source == "termination-message"
    assert reading.problem is not None
    assert reading.problem.startswith(
        "the log cannot be read, so only the termination message's compacted copy is left, "
        "without what compaction left out"
    )


def test_a_compacted_result_is_kept_when_the_log_has_lost_its_line(
    smoke: Obj, compacted: Obj
) -> None:
    reading = read_result(compacted, objects.starting_log(smoke, 0))
    assert reading.result is not None and reading.result.compacted
    assert reading.problem is not None
    assert reading.problem.startswith(
        "the log has no BENCH_RESULT line, so only the termination message's compacted copy is "
        "left, without what compaction left out"
    )


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        (
            '{"status": "ok", "latency": ',
            "the termination message is not JSON: Expecting value at character 27",
        ),
        (
            '{"status": "done"}',
            "the termination message does not match result.schema.json at status: "
            "'done' is not one of ['error', 'ok']",
        ),
        (
            '{"status": "error", "error": {"type": "model_load"}}',
            "the termination message does not match result.schema.json at error: "
            "'message' is a required property",
        ),
        (
            '{"status": "ok", "p50": 1.2}',
            "the termination message does not match result.schema.json: "
            "Additional properties are not allowed ('p50' was unexpected)",
        ),
        (
            '{"status": "ok"}',
            "the termination message does not match result.schema.json: "
            "'latency' is a required property",
        ),
        (
            '{"status": "error", "compacted": "yes", "error": {"type": "internal", "message": ""}}',
            "the termination message does not match result.schema.json at compacted: "
            "'yes' is not of type 'boolean'",
        ),
    ],
    ids=[
        "not-json",
        "unknown-status",
        "missing-field",
        "extra-field",
        "ok-without-latency",
        "no-coercion",
    ],
)
def test_a_malformed_termination_message_is_reported_not_raised(
    succeeded: Obj, message: str, problem: str
) -> None:
    reading = read_result(objects.with_termination_message(succeeded, message), None)
    assert (reading.result, reading.source, reading.problem) == (None, None, problem)


def test_a_malformed_termination_message_falls_back_to_the_log(
    smoke: Obj, succeeded: Obj, whole: BenchResult
) -> None:
    broken = objects.with_termination_message(succeeded, '{"status": "ok"')
    reading = read_result(broken, log_of(smoke, 3, whole))
    assert (reading.result, reading.source, reading.problem) == (whole, "log", None)


def test_a_pod_without_a_termination_message_is_read_from_its_log(
    smoke: Obj, succeeded: Obj, whole: BenchResult
) -> None:
    # Exit 0 with an empty /dev/termination-log (the runner could not write it): the kubelet
    # falls back to the log only for failed containers, so the message is absent.
    silent = objects.with_termination_message(succeeded, None)
    reading = read_result(silent, log_of(smoke, 3, whole))
    assert (reading.result, reading.source, reading.problem) == (whole, "log", None)
    assert read_result(silent, None) == ResultReading(
        (), None, "the runner container left no termination message"
    )


def test_a_malformed_log_line_is_reported_with_the_termination_messages_problem(
    smoke: Obj, succeeded: Obj
) -> None:
    silent = objects.with_termination_message(succeeded, None)
    log = objects.starting_log(smoke, 3) + 'BENCH_RESULT {"status": "ok", "latency": null}\n'
    assert read_result(silent, log).problem == (
        "the runner container left no termination message; the result line of the log does not "
        "match result.schema.json at latency: None is not of type 'object'"
    )


def test_the_log_tail_in_the_termination_message_still_yields_its_result_line(smoke: Obj) -> None:
    # The runner could not write /dev/termination-log and exited 3: FallbackToLogsOnError put
    # the end of its log, result line included, in the termination message.
    failure = objects.error_result(smoke, "model_load", "tiny-cnn.pt2 is a pickle")
    pod = objects.crashed_pod(smoke, 2, exit_code=3, log=log_of(smoke, 2, failure))
    reading = read_result(pod, None)
    assert (reading.result, reading.source, reading.problem) == (
        failure,
        "termination-message",
        None,
    )


def test_a_pod_without_a_result_anywhere_says_where_it_looked(smoke: Obj) -> None:
    reading = read_result(objects.oom_killed_pod(smoke, 5), objects.starting_log(smoke, 5))
    assert (reading.result, reading.source) == (None, None)
    assert reading.problem == (
        "the termination message (the end of the log) has no BENCH_RESULT line; "
        "the log has no BENCH_RESULT line"
    )


def test_a_running_pod_has_no_result_yet(smoke: Obj) -> None:
    reading = read_result(objects.running_pod(smoke, 2), None)
    assert reading.problem == "the runner container has not terminated"


# pod_state: pending


def test_an_unschedulable_pod_says_what_the_nodes_lack(spot_gpu: Obj) -> None:
    pod = objects.unschedulable_pod(spot_gpu, 0, message=objects.NO_GPU_NEVER_PREEMPTS)
    state = pod_state(pod)
    assert (state.phase, state.reason, state.node, state.index) == (
        "pending",
        "Unschedulable",
        None,
        0,
    )
    assert (
        state.explanation == "unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu"
    )


def test_a_scheduler_verdict_missing_from_the_pod_comes_from_its_latest_event(
    spot_gpu: Obj,
) -> None:
    pod = objects.unschedulable_pod(spot_gpu, 1, message=None)
    elsewhere = objects.unschedulable_pod(spot_gpu, 2)
    affinity = "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    events = [
        objects.failed_scheduling_event(pod, objects.NO_GPU, count=4, seconds=10),
        objects.failed_scheduling_event(pod, affinity, seconds=200),
        objects.failed_scheduling_event(elsewhere, "0/3 nodes are available: 3 Too many pods."),
    ]
    assert pod_state(pod, events).explanation == (
        "unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu"
    )
    assert pod_state(pod).explanation == "unschedulable (the scheduler gave no reason)"


@pytest.mark.parametrize("reason", ["ErrImagePull", "ImagePullBackOff"])
def test_an_image_pull_failure_quotes_the_kubelet(smoke: Obj, reason: str) -> None:
    pod = objects.image_pull_pod(smoke, 1, reason=reason)
    state = pod_state(pod)
    assert (state.phase, state.reason, state.exit_code) == ("pending", reason, None)
    assert state.explanation.startswith(f"image pull failed ({reason}): ")
    assert state.explanation.endswith(f"{objects.image_pull_error(pod)}")


def test_an_image_pull_without_a_message_is_explained_by_the_kubelets_events(smoke: Obj) -> None:
    pod = objects.image_pull_pod(smoke, 1, reason="ImagePullBackOff")
    del pod["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
    events = [
        objects.image_pull_failed_event(pod, count=2),
        objects.kubelet_event(pod, "Failed", "Error: ErrImagePull", count=2),
        objects.back_off_event(pod, count=3),
    ]
    image = pod["spec"]["containers"][0]["image"]
    assert pod_state(pod, events).explanation == (
        f'image pull failed (ImagePullBackOff): Failed to pull image "{image}": '
        f"{objects.image_pull_error(pod)}"
    )


def test_a_pod_starting_on_its_node_passes_on_the_latest_warning(smoke: Obj) -> None:
    pod = objects.pod(smoke, 0)
    mount = (
        'MountVolume.SetUp failed for volume "models" : '
        'configmap "cpu-smoke-models-8e44ea9fc5" not found'
    )
    events = [objects.kubelet_event(pod, "FailedMount", mount, count=5)]
    assert pod_state(pod, events).explanation == f"starting on {objects.NODE}: FailedMount: {mount}"
    assert pod_state(pod).explanation == f"starting on {objects.NODE}"


# pod_state: running and finished


def test_a_running_pod_names_its_node(smoke: Obj) -> None:
    state = pod_state(objects.running_pod(smoke, 2))
    assert (state.phase, state.explanation) == ("running", f"running on {objects.NODE}")


def test_a_succeeded_pod_with_an_unreadable_result_still_succeeded(succeeded: Obj) -> None:
    assert pod_state(succeeded).explanation == "succeeded"
    broken = pod_state(objects.with_termination_message(succeeded, "{"))
    assert (broken.phase, broken.exit_code, broken.reason) == ("succeeded", 0, "Completed")
    assert broken.explanation.startswith(
        "succeeded without a readable result: the termination message is not JSON"
    )


def test_a_runner_error_is_named_with_its_exit_code_and_message(smoke: Obj) -> None:
    state = pod_state(objects.failed_pod(smoke, 4, "model_load", "tiny-mlp.pt2 is missing"))
    assert (state.phase, state.exit_code, state.reason) == ("failed", 3, "Error")
    assert state.explanation == "runner error model_load (exit 3): tiny-mlp.pt2 is missing"
    assert state.finished_at == instant("2025-06-01T02:00:33Z")


@pytest.mark.parametrize(("job_fixture", "limit"), [("smoke", "8Gi"), ("spot_gpu", "4Gi")])
def test_an_oom_killed_pod_names_its_memory_limit(
    request: pytest.FixtureRequest, job_fixture: str, limit: str
) -> None:
    job: Obj = request.getfixturevalue(job_fixture)
    state = pod_state(objects.oom_killed_pod(job, 1))
    assert (state.phase, state.exit_code, state.reason) == ("failed", 137, "OOMKilled")
    assert state.explanation == (
        f"OOMKilled: the container exceeded its memory limit of {limit} (exit 137)"
    )


def test_a_crash_without_a_result_quotes_the_end_of_its_log(smoke: Obj) -> None:
    assert pod_state(objects.crashed_pod(smoke, 0)).explanation == (
        "exit 1 with no result; the log ends: ImportError: libgomp.so.1: cannot open shared "
        "object file: No such file or directory"
    )
    assert pod_state(objects.crashed_pod(smoke, 0, log="")).explanation == "exit 1 with no result"
    measuring = 'BENCH_PROGRESS {"variants": [0], "phase": "measure", "elapsed_s": 5.0}\n'
    crashed = objects.crashed_pod(smoke, 0, log=f"Fatal Python error: Aborted\n{measuring}")
    assert pod_state(crashed).explanation == (
        "exit 1 with no result; the log ends: Fatal Python error: Aborted"
    ), "the last log line, not the last progress line"


def test_a_runner_exit_whose_result_was_lost_is_named_by_its_class(smoke: Obj) -> None:
    """A termination message lost (a node gone, a log rotated): the code alone still says
    which failure it was, where only the runner exits with it."""
    untrusted = objects.crashed_pod(smoke, 0, exit_code=ExitCode.DOWNLOAD_UNTRUSTED, log="")
    assert pod_state(untrusted).explanation == "exit 11 (download_untrusted) with no result"
    refused = objects.crashed_pod(smoke, 0, exit_code=ExitCode.DOWNLOAD_REFUSED, log="")
    assert pod_state(refused).explanation == "exit 9 (download_refused) with no result"


def test_a_pod_killed_when_its_job_ran_out_of_time_is_not_an_oom(smoke: Obj) -> None:
    killed = pod_state(objects.deadline_killed_pod(smoke, 2))
    assert (killed.phase, killed.reason) == ("failed", "Error")
    assert killed.explanation == "killed by SIGKILL (exit 137) after the pod was deleted"
    dying = pod_state(objects.deadline_killed_pod(smoke, 2, terminated=False))
    assert (dying.phase, dying.explanation) == (
        "running",
        f"running on {objects.NODE}, being deleted",
    )


# pod_state: disrupted


def test_a_preempted_pod_is_retried_without_spending_a_retry(smoke: Obj) -> None:
    state = pod_state(objects.preempted_pod(smoke, 0))
    assert (state.phase, state.reason, state.exit_code) == (
        "preempted",
        "PreemptionByScheduler",
        137,
    )
    assert state.explanation == (
        "preempted (PreemptionByScheduler): default-scheduler: preempting to accommodate a higher "
        "priority pod; the Job retries it without spending a retry"
    )


@pytest.mark.parametrize("reason", sorted(set(objects.DISRUPTIONS) - {"PreemptionByScheduler"}))
def test_every_disruption_is_retried_without_spending_a_retry(smoke: Obj, reason: str) -> None:
    state = pod_state(objects.preempted_pod(smoke, 0, reason=reason))
    assert state.phase == "preempted"
    assert f"({reason}): {objects.DISRUPTIONS[reason].rstrip('.')}; the Job retries" in (
        state.explanation
    )


def test_an_evicted_pod_says_what_its_node_ran_short_of(smoke: Obj) -> None:
    state = pod_state(objects.evicted_pod(smoke, 1))
    assert (state.phase, state.reason) == ("preempted", "Evicted")
    assert state.explanation.startswith("evicted: The node was low on resource: memory. ")
    assert state.explanation.endswith(
        "has larger consumption of memory; the Job retries it without spending a retry"
    )


def test_an_eviction_without_a_disruption_condition_is_a_failure(smoke: Obj) -> None:
    # Clusters before PodDisruptionConditions (GA in 1.31) evict without the condition, so the
    # Job counts the failure.
    pod = objects.evicted_pod(smoke, 1)
    pod["status"]["conditions"] = pod["status"]["conditions"][1:]
    state = pod_state(pod)
    assert (state.phase, state.reason) == ("failed", "Evicted")
    assert state.explanation.startswith("evicted: The node was low on resource: memory. ")


def test_the_completion_index_comes_from_the_label_or_else_the_annotation(smoke: Obj) -> None:
    pod = objects.running_pod(smoke, 4)
    del pod["metadata"]["labels"][COMPLETION_INDEX_KEY]
    assert pod_state(pod).index == 4
    del pod["metadata"]["annotations"][COMPLETION_INDEX_KEY]
    assert pod_state(pod).index is None


NODE_LOST = "Node node-a which was running pod cpu-smoke-0 is unresponsive"


@pytest.mark.parametrize(
    ("phase", "expected"),
    [
        (
            "Failed",
            f"failed while the runner was running (NodeLost): {NODE_LOST}; its end was never "
            "reported",
        ),
        (
            "Unknown",
            f"its node {{node}} stopped reporting (NodeLost): {NODE_LOST}; when it last did, the "
            "runner was running",
        ),
    ],
)
def test_a_pod_whose_node_was_lost_mid_run_is_not_said_to_have_failed_before_it(
    smoke: Obj, phase: str, expected: str
) -> None:
    """The defect: a pod whose node was lost while its runner ran (the runner's last known
    state: running) was explained as "failed before the runner ran"."""
    pod = objects.running_pod(smoke, 2)
    pod["status"].update(phase=phase, reason="NodeLost", message=NODE_LOST)
    state = pod_state(pod)
    assert state.explanation == expected.format(node=pod["spec"]["nodeName"])
    assert state.phase == ("failed" if phase == "Failed" else "running")


def test_a_pod_failed_before_its_runner_started_still_says_so(smoke: Obj) -> None:
    pod = objects.unschedulable_pod(smoke, 1)
    pod["spec"]["nodeName"] = "node-a"
    pod["status"].update(
        phase="Failed", reason="OutOfcpu", message="Pod Node didn't have enough resource: cpu"
    )
    assert pod_state(pod).explanation == (
        "failed before the runner ran (OutOfcpu): Pod Node didn't have enough resource: cpu"
    )


@pytest.mark.parametrize(
    ("make", "scheduled", "started"),
    [
        (objects.succeeded_pod, 1, 20),
        (objects.running_pod, 1, 20),
        (objects.failed_pod, 1, 20),
        # On its node, the runner image not pulled yet: bound, not started.
        (objects.image_pull_pod, 1, None),
        (objects.unschedulable_pod, None, None),
    ],
    ids=lambda value: getattr(value, "__name__", str(value)),
)
def test_a_pod_says_when_it_got_its_node_and_started_its_runner(
    smoke: Obj, make: Any, scheduled: int | None, started: int | None
) -> None:
    pod = make(smoke, 3)
    start = pod_state(pod).start
    created = pod["metadata"]["creationTimestamp"]

    def after(seconds: int | None) -> datetime | None:
        moment = datetime.fromisoformat(created)
        return None if seconds is None else moment + timedelta(seconds=seconds)

    if scheduled is None:
        assert start is None, "a pod that never got a node says nothing of its start"
        return
    assert start is not None and start.created_at == instant(created)
    assert (start.scheduled_at, start.started_at) == (after(scheduled), after(started))
    assert pod_state(held_pod(pod)).start == start, "what the collector holds of a pod has it"


def test_a_finish_time_that_is_no_time_is_left_out_not_kept_as_it_is(smoke: Obj) -> None:
    """Issue #31: a `finishedAt` that is no time was stored as it was, and every report of
    the workflow raised ValueError reading it."""
    pod = objects.failed_pod(smoke, 4, "model_load", "tiny-mlp.pt2 is missing")
    pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = "soon"
    state = pod_state(pod)
    assert (state.phase, state.finished_at) == ("failed", None)
