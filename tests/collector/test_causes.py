"""Why a variant waited outlives the gather that saw it: a later gather, which finds the pod
gone and the Job failed at its deadline, still explains the failure with it."""

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from standin import objects
from standin.api import FakeApiServer
from tests.collector.gathering import NAMESPACE, Collect, Obj


def _unschedulable(job: Obj) -> tuple[Obj, Obj, str]:
    """A pod whose condition has no message: the scheduler's verdict is in its event."""
    pod = objects.unschedulable_pod(job, 5, message=None)
    return pod, objects.failed_scheduling_event(pod), "3 Insufficient nvidia.com/gpu"


def _image_not_found(job: Obj) -> tuple[Obj, Obj, str]:
    """A pod backing off its image pull, whose message says only that it backs off: why the
    pull failed is in the kubelet's event."""
    pod = objects.image_pull_pod(job, 5, reason="ImagePullBackOff")
    waiting = pod["status"]["containerStatuses"][0]["state"]["waiting"]
    waiting["message"] = objects.back_off_message(pod)
    return pod, objects.image_pull_failed_event(pod), ": not found"


@pytest.mark.parametrize("waiting", [_unschedulable, _image_not_found])
def test_a_later_gather_explains_the_failure_with_the_cause_an_earlier_one_saw(
    collector: Collect,
    api: FakeApiServer,
    repo: Path,
    job: Obj,
    waiting: Callable[[Obj], tuple[Obj, Obj, str]],
) -> None:
    """The defect: the cause lived in one gather's memory; the gather that stored the
    failure had never seen the pod, and said only "deadline exceeded"."""
    for index in range(5):
        api.add("pods", objects.succeeded_pod(job, index))
    pod, event, cause = waiting(job)
    api.add("pods", pod)
    api.add("events", event)
    api.add("jobs", objects.job_status(job, active=1, completed=range(5)))
    first = collector("gather", "--timeout", "2s")
    assert first.exit_code == 1 and cause in first.stdout
    api.delete("pods", NAMESPACE, pod["metadata"]["name"])
    api.update("jobs", objects.failed_job(job, "DeadlineExceeded", completed=range(5), failed=1))
    second = collector("gather", "--timeout", "1m")
    assert second.exit_code == 1
    with sqlite3.connect(repo / ".benchfleet" / "results.sqlite") as db:
        ((state, reason, explanation),) = db.execute(
            "SELECT state, reason, explanation FROM variant_runs WHERE job_index = 5"
        )
    assert (state, reason) == ("failed", "DeadlineExceeded")
    assert "; it had been waiting: " in explanation and cause in explanation
    assert cause in second.stdout
