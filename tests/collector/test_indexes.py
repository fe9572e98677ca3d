"""One Job's variants: every completion index's state over all its attempts, as the Job
controller of Kubernetes 1.33 reports them."""

from collections.abc import Callable

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from collector.indexes import (
    IndexState,
    SummaryCounts,
    index_states,
    job_failure,
    job_finished,
    parse_indexes,
    summary_counts,
)
from standin import objects
from standin.objects import Obj

DEADLINE = "deadline exceeded: activeDeadlineSeconds=1800 passed before this variant finished"


@pytest.fixture(scope="module")
def smoke() -> Obj:
    """cpu-smoke's Job: six variants, backoffLimitPerIndex 2, activeDeadlineSeconds 1800."""
    return objects.job()


def state_of(job: Obj, pods: list[Obj], index: int) -> IndexState:
    return index_states(job, pods)[index]


def test_the_job_factories_build_jobs_the_1_33_api_schema_accepts(smoke: Obj) -> None:
    jobs = [
        smoke,
        objects.job_status(
            smoke, active=3, ready=2, completed={0, 1}, failed_indexes={2}, failed=1
        ),
        objects.complete(smoke),
        objects.failed_job(smoke, "DeadlineExceeded", completed={0}, failed=2),
        objects.failed_job(smoke, "FailedIndexes", terminating=1, failed_indexes={4}),
        objects.suspended(objects.job("nightly-spot", target="cpu-spot")),
    ]
    for job in jobs:
        kubernetes_validate.validate(job, "1.33.0", strict=True)


# parse_indexes


@pytest.mark.parametrize(
    ("text", "indexes"),
    [
        (None, set()),
        ("", set()),
        ("0", {0}),
        ("1,3-5", {1, 3, 4, 5}),
        ("0,1,6-7,9", {0, 1, 6, 7, 9}),
        ("12-14", {12, 13, 14}),
    ],
)
def test_index_intervals_read_as_sets(text: str | None, indexes: set[int]) -> None:
    assert parse_indexes(text) == indexes


def test_the_factories_write_intervals_as_the_job_controller_does() -> None:
    assert objects.intervals({5, 0, 1, 3, 4, 6, 9}) == "0,1,3-6,9"
    assert parse_indexes(objects.intervals({0, 1, 3, 4, 5, 9})) == {0, 1, 3, 4, 5, 9}


@pytest.mark.parametrize("text", ["a", "1,,2", "-1", "1-", "3-1", " 1", "1-2-3", "1;2", "0x1"])
def test_malformed_index_intervals_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="is not a list of index intervals"):
        parse_indexes(text)


# job_finished and job_failure


@pytest.mark.parametrize(
    ("build", "finished"),
    [
        (lambda job: job, False),
        (objects.complete, True),
        (lambda job: objects.failed_job(job, "DeadlineExceeded"), True),
        # FailureTarget alone: the controller still waits for pods to terminate.
        (lambda job: objects.failed_job(job, "DeadlineExceeded", terminating=2), False),
        (objects.suspended, False),
    ],
    ids=["started", "complete", "failed", "failing", "suspended"],
)
def test_a_job_is_finished_once_complete_or_failed(
    smoke: Obj, build: Callable[[Obj], Obj], finished: bool
) -> None:
    assert job_finished(build(smoke)) is finished


def test_a_jobs_failure_is_told_in_words(smoke: Obj) -> None:
    assert job_failure(smoke) is None
    assert job_failure(objects.complete(smoke)) is None
    assert job_failure(objects.failed_job(smoke, "DeadlineExceeded", terminating=1)) == (
        "deadline exceeded: Job was active longer than specified deadline "
        "(activeDeadlineSeconds=1800)"
    )
    assert job_failure(objects.failed_job(smoke, "FailedIndexes")) == (
        "FailedIndexes: Job has failed indexes"
    )


# index_states


def test_every_index_gets_a_state_and_those_without_a_pod_have_not_started(smoke: Obj) -> None:
    running = objects.job_status(smoke, active=1, ready=1)
    states = index_states(running, [objects.running_pod(running, 1)])
    assert [state.index for state in states] == list(range(6))
    assert [state.explanation for state in states] == [
        "not started",
        f"running on {objects.NODE}",
        *["not started"] * 4,
    ]
    assert (states[0].phase, states[0].attempts, states[0].pod) == ("pending", 0, None)


def test_a_suspended_job_waits_for_kueue_to_admit_it() -> None:
    held = objects.suspended(objects.job("nightly-spot", target="cpu-spot"))
    assert {state.explanation for state in index_states(held, [])} == {
        "not started: the Job is suspended until Kueue admits it from queue nightly"
    }


def test_a_succeeded_index_points_at_its_succeeded_pod(smoke: Obj) -> None:
    done = objects.job_status(smoke, completed={3})
    succeeded = objects.succeeded_pod(done, 3)
    state = state_of(done, [succeeded], 3)
    assert (state.phase, state.explanation, state.attempts) == ("succeeded", "succeeded", 1)
    assert state.pod is not None and state.pod.name == succeeded["metadata"]["name"]
    assert state.manifest == succeeded


def test_a_succeeded_pod_counts_before_the_job_status_does(smoke: Obj) -> None:
    assert state_of(smoke, [objects.succeeded_pod(smoke, 2)], 2).phase == "succeeded"


def test_a_completed_index_whose_pod_is_gone_still_succeeded(smoke: Obj) -> None:
    state = state_of(objects.job_status(smoke, completed={0}), [], 0)
    assert (state.phase, state.explanation, state.pod) == (
        "succeeded",
        "succeeded (its pod is gone)",
        None,
    )


@pytest.mark.parametrize("visible", ["all", "last"])
def test_an_index_preempted_twice_then_successful_counts_every_attempt(
    smoke: Obj, visible: str
) -> None:
    # Preempted pods are deleted and vanish once the Job controller has counted them: only the
    # ignored-failure-count annotation of the last pod may remember them.
    done = objects.job_status(smoke, completed={4})
    attempts = [
        objects.preempted_pod(done, 4),
        objects.preempted_pod(done, 4, ignored=1),
        objects.succeeded_pod(done, 4, ignored=2),
    ]
    state = state_of(done, attempts if visible == "all" else attempts[-1:], 4)
    assert (state.phase, state.explanation) == ("succeeded", "succeeded")
    assert (state.attempts, state.preemptions) == (3, 2)
    assert state.pod is not None and state.pod.name == attempts[-1]["metadata"]["name"]


def test_a_preempted_index_waits_for_its_replacement(smoke: Obj) -> None:
    failing_over = objects.job_status(smoke, terminating=1)
    state = state_of(failing_over, [objects.preempted_pod(failing_over, 0)], 0)
    assert (state.phase, state.attempts, state.preemptions) == ("preempted", 1, 1)
    assert state.explanation.endswith("the Job retries it without spending a retry")


@pytest.mark.parametrize("listed", [True, False], ids=["in-failedIndexes", "status-behind"])
def test_a_runner_exit_the_policy_names_fails_the_index_at_once(smoke: Obj, listed: bool) -> None:
    job = objects.job_status(smoke, failed_indexes={1} if listed else (), failed=1)
    pod = objects.failed_pod(job, 1, "bad_config", "no variant at index 1")
    state = state_of(job, [pod], 1)
    assert (state.phase, state.attempts, state.preemptions) == ("failed", 1, 0)
    assert state.explanation == (
        "failed at once: the runner's exit 2 is not retried (podFailurePolicy FailIndex): "
        "runner error bad_config (exit 2): no variant at index 1"
    )


def test_an_index_fails_when_its_retries_are_exhausted(smoke: Obj) -> None:
    job = objects.job_status(smoke, failed_indexes={5}, failed=3)
    pods = [objects.oom_killed_pod(job, 5, failures=count) for count in range(3)]
    state = state_of(job, pods, 5)
    assert (state.phase, state.attempts) == ("failed", 3)
    assert state.explanation == (
        "retries exhausted after 3 attempts: "
        "OOMKilled: the container exceeded its memory limit of 8Gi (exit 137)"
    )
    assert state.pod is not None and state.pod.name == pods[-1]["metadata"]["name"]


def test_an_exhausted_index_counts_preemptions_apart(smoke: Obj) -> None:
    job = objects.job_status(smoke, failed_indexes={5}, failed=3)
    last = objects.failed_pod(
        job, 5, "model_load", "tiny-mlp.pt2 is missing", failures=2, ignored=1
    )
    state = state_of(job, [last], 5)
    assert (state.attempts, state.preemptions) == (4, 1)
    assert state.explanation == (
        "retries exhausted after 3 attempts (and 1 preempted): "
        "runner error model_load (exit 3): tiny-mlp.pt2 is missing"
    )


def test_a_failed_attempt_with_retries_left_waits_for_the_next(smoke: Obj) -> None:
    job = objects.job_status(smoke, failed=1)
    state = state_of(job, [objects.failed_pod(job, 2, "model_load", "download timed out")], 2)
    assert (state.phase, state.attempts) == ("pending", 1)
    assert state.explanation == (
        "waiting to retry after failed attempt 1 of 3: "
        "runner error model_load (exit 3): download timed out"
    )


def test_the_retry_of_a_failed_attempt_is_the_state_of_its_index(smoke: Obj) -> None:
    job = objects.job_status(smoke, active=1, failed=1)
    pods = [
        objects.running_pod(job, 2, failures=1),
        objects.failed_pod(job, 2, "device_missing", "no CUDA device"),
    ]
    state = state_of(job, pods, 2)
    assert (state.phase, state.explanation, state.attempts) == (
        "running",
        f"running on {objects.NODE}",
        2,
    )


def test_a_deadline_exceeded_job_fails_every_unfinished_index(smoke: Obj) -> None:
    # The controller deletes the active pods; a killed one lingers until its finalizer goes.
    job = objects.failed_job(smoke, "DeadlineExceeded", completed={0, 1}, failed=2)
    pods = [
        objects.succeeded_pod(job, 0),
        objects.succeeded_pod(job, 1),
        objects.deadline_killed_pod(job, 2),
    ]
    states = index_states(job, pods)
    assert [state.phase for state in states] == ["succeeded"] * 2 + ["failed"] * 4
    assert states[2].explanation == (
        f"{DEADLINE}; its last attempt: killed by SIGKILL (exit 137) after the pod was deleted"
    )
    assert {state.explanation for state in states[3:]} == {DEADLINE}


def test_a_job_that_failed_otherwise_names_its_failure_for_unfinished_indexes(smoke: Obj) -> None:
    message = (
        "Container runner for pod benchfleet-dev/x failed with exit code 9 matching FailJob rule"
    )
    job = objects.failed_job(smoke, "PodFailurePolicy", message=message)
    assert state_of(job, [], 0).explanation == (
        f"the Job failed (PodFailurePolicy: {message}) before this variant finished"
    )


def test_pending_indexes_are_explained_with_their_events(smoke: Obj) -> None:
    job = objects.job_status(smoke, active=1)
    pod = objects.unschedulable_pod(job, 0, message=None)
    events = [objects.failed_scheduling_event(pod, "0/3 nodes are available: 3 Insufficient cpu.")]
    assert index_states(job, [pod], events)[0].explanation == (
        "unschedulable: 0/3 nodes are available: 3 Insufficient cpu"
    )


def test_pods_of_an_earlier_job_of_the_same_name_are_left_out(smoke: Obj) -> None:
    stale = objects.succeeded_pod(smoke, 0)
    stale["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] = "an-earlier-job"
    assert state_of(smoke, [stale], 0).explanation == "not started"


def test_the_states_count_up_for_a_progress_bar(smoke: Obj) -> None:
    job = objects.job_status(smoke, active=3, completed={0}, failed_indexes={1}, failed=1)
    pods = [
        objects.succeeded_pod(job, 0),
        objects.failed_pod(job, 1, "unsupported_variant", "bf16 is not supported here"),
        objects.running_pod(job, 2),
        objects.unschedulable_pod(job, 3),
        objects.preempted_pod(job, 4),
    ]
    counts = summary_counts(index_states(job, pods))
    assert counts == SummaryCounts(pending=2, running=1, succeeded=1, failed=1, preempted=1)
    assert counts.total == 6


def test_a_failed_index_the_status_lists_is_failed_whatever_its_pods_say(smoke: Obj) -> None:
    job = objects.job_status(smoke, failed_indexes={0, 1}, failed=3)
    states = index_states(job, [objects.crashed_pod(job, 1, failures=2)])
    assert states[0].explanation == "failed (the Job lists it in failedIndexes); its pods are gone"
    assert states[1].explanation.startswith("retries exhausted after 3 attempts: exit 1 with no")


def test_a_pod_still_terminating_after_its_preemption_counts_as_preempted(smoke: Obj) -> None:
    pod = objects.running_pod(smoke, 0)
    preempted = objects.preempted_pod(smoke, 0)
    pod["status"]["conditions"].insert(0, preempted["status"]["conditions"][0])
    pod["metadata"]["deletionTimestamp"] = preempted["metadata"]["deletionTimestamp"]
    state = state_of(smoke, [pod], 0)
    assert (state.phase, state.preemptions, state.attempts) == ("preempted", 1, 1)
