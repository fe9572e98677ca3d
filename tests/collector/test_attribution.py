"""Issue 15's attribution defects: what gather does after reading must never file a number
under the wrong variant, store a variant before it has ended, misread why nothing came back,
or count one variant two ways. Jobs and pods are shaped as Kubernetes 1.33 returns them
(standin/objects.py), served by the stand-in API server through the real client."""

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchfleet.collector import cli
from collector.harvest import WRONG_VARIANT
from contract.records import read_record
from contract.result import compact
from standin import objects
from standin.api import FakeApiServer
from tests.collector.gathering import (
    COLLECTOR,
    NAMESPACE,
    Collect,
    Obj,
    kubeconfig,
    record_of,
    rows,
)


def stored(repo: Path) -> dict[int, tuple[str, str | None, str]]:
    """index: (state, reason, explanation) of every stored variant run."""
    with sqlite3.connect(repo / ".benchfleet" / "results.sqlite") as db:
        query = "SELECT job_index, state, reason, explanation FROM variant_runs"
        return {index: (state, reason, why) for index, state, reason, why in db.execute(query)}


def test_a_result_naming_another_variant_is_stored_as_an_error_saying_what_arrived(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """The defect: index 0's pod handed over index 1's result; it was filed under variant 1,
    giving two rows of variant 1 and none of variant 0."""
    config = objects.run_config(job)
    for index in range(6):
        result = objects.ok_result(job, 1 if index == 0 else index)
        api.add("pods", objects.succeeded_pod(job, index, result))
    api.add("jobs", objects.complete(job))
    run = collector("gather")
    assert run.exit_code == 1
    record = read_record(record_of(repo, job))
    first = record.variants[0]
    assert (first.state, first.reason) == ("failed", WRONG_VARIANT)
    assert first.variant is not None and first.variant.id == config.variants[0].id
    assert f"the result is for variant {config.variants[1].id} (index 1: " in first.explanation
    assert f"config.json runs variant {config.variants[0].id} (index 0: " in first.explanation
    assert first.result is not None, "what arrived is kept"
    succeeded = [v.variant.id for v in record.variants if v.state == "succeeded" and v.variant]
    assert sorted(succeeded) == sorted(v.id for v in config.variants[1:])


def test_at_failure_target_a_running_variant_is_not_stored_until_its_pod_or_the_job_ends(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """The defect: at the Job's FailureTarget, indexes whose pods still ran were stored as
    final, with a stale "running" explanation."""
    pods = [objects.succeeded_pod(job, index) for index in range(4)]
    pods += [objects.deadline_killed_pod(job, index, terminated=False) for index in (4, 5)]
    for pod in pods:
        api.add("pods", pod)
    failing = objects.failed_job(
        job, "DeadlineExceeded", terminating=2, completed=range(4), active=2
    )
    api.add("jobs", failing)
    early = collector("gather", "--no-wait")
    assert early.exit_code == 1
    assert sorted(stored(repo)) == [0, 1, 2, 3]
    assert "index 4: running:" in early.stdout
    assert not record_of(repo, job).exists()

    for index in (4, 5):
        api.update("pods", objects.deadline_killed_pod(job, index))
    api.update("jobs", objects.failed_job(job, "DeadlineExceeded", completed=range(4), failed=2))
    final = collector("gather", "--no-wait")
    assert final.exit_code == 1
    for index in (4, 5):
        state, reason, explanation = stored(repo)[index]
        assert (state, reason) == ("failed", "DeadlineExceeded")
        assert explanation.startswith("deadline exceeded: activeDeadlineSeconds=1800 passed")
        assert "running on" not in explanation
    assert read_record(record_of(repo, job)).outcome == "failed"


def test_a_job_failed_while_its_pod_was_shown_running_is_not_explained_as_running(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """The Job's own Failed condition ends the index; its pod's last news (running) is stale."""
    for index in range(5):
        api.add("pods", objects.succeeded_pod(job, index))
    api.add("pods", objects.deadline_killed_pod(job, 5, terminated=False))
    api.add("jobs", objects.failed_job(job, "DeadlineExceeded", completed=range(5), failed=1))
    collector("gather", "--no-wait")
    state, reason, explanation = stored(repo)[5]
    assert (state, reason) == ("failed", "DeadlineExceeded")
    assert explanation == (
        "deadline exceeded: activeDeadlineSeconds=1800 passed before this variant finished"
    )


def test_a_result_that_fails_validation_is_failed_in_progress_status_and_record_alike(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """The defect: "succeeded" in progress and status, "failed" in the record."""
    for index in range(6):
        api.add("pods", objects.succeeded_pod(job, index))
    broken = objects.with_termination_message(
        objects.succeeded_pod(job, 2), '{"schema_version": 1, "status": "ok"}'
    )
    api.update("pods", broken)
    api.set_log(NAMESPACE, broken["metadata"]["name"], "runner", objects.starting_log(job, 2))
    api.add("jobs", objects.complete(job))
    status = collector("status")
    assert "pending 0  running 0  succeeded 5  failed 1  preempted 0" in status.stdout
    assert "index 2: failed: the pod succeeded but left no usable result" in status.stdout
    run = collector("gather", "--keep")
    assert "6/6 done  pending 0  running 0  succeeded 5  failed 1" in run.stderr
    assert stored(repo)[2][0] == "failed"
    assert "index 2: the pod succeeded but left no usable result" in run.stdout


def test_a_truncated_termination_message_whose_log_has_the_result_is_a_plain_success(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """The defect: stored as "succeeded without a readable result"."""
    for index in range(6):
        api.add("pods", objects.succeeded_pod(job, index))
    result = objects.ok_result(job, 3)
    cut = objects.with_termination_message(objects.succeeded_pod(job, 3), compact(result)[:200])
    api.update("pods", cut)
    api.set_log(NAMESPACE, cut["metadata"]["name"], "runner", objects.runner_log(job, 3, result))
    api.add("jobs", objects.complete(job))
    run = collector("gather")
    assert run.exit_code == 0, run.output
    state, reason, explanation = stored(repo)[3]
    assert (state, reason) == ("succeeded", None)
    assert explanation.startswith("succeeded (result read from the log: the termination message")
    assert "without a readable result" not in explanation
    assert (3, "succeeded", "log") in rows(repo)


def test_a_log_that_keeps_failing_does_not_hold_up_the_watch_or_the_timeout(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """The defect: a log read retried through 500s inline (about 15 s of backoff) stalled the
    loop that applies watch events; --timeout passed unnoticed, finished pods showed running."""
    crashed = objects.crashed_pod(job, 0, exit_code=1, log="")
    api.add("pods", crashed)
    for index in range(1, 6):
        api.add("pods", objects.running_pod(job, index))
    api.add("jobs", objects.job_status(job, active=5, failed=1, failed_indexes=[0]))
    api.fail_next(1000, 500, path_contains="/log")
    began = time.monotonic()
    run = collector("gather", "--timeout", "3s")
    assert time.monotonic() - began < 10, "the log's retries ran past --timeout"
    assert run.exit_code == 1
    assert "index 0: failed: ended, but its log could not be read within --timeout" in run.stdout
    assert 0 not in stored(repo), "stored without what its log would have said"


@pytest.mark.slow
def test_an_unreachable_api_server_is_named_not_taken_for_flux_not_having_applied(
    collector: Collect, repo: Path, job: Obj
) -> None:
    """Also the defect where confirming the cluster retried past --timeout (six attempts and
    their backoff, 17 s a cluster against `--timeout 2s`): it now stops at the deadline."""
    with FakeApiServer() as gone:
        address = gone.url
    run = collector_against(repo, address, "gather", "--timeout", "2s")
    assert run.returncode == 1
    assert "Flux has not applied" not in run.stderr + run.stdout
    assert f"API server at {address}" in run.stderr
    assert "ConnectionRefusedError" in run.stderr or "Connection refused" in run.stderr


def test_confirming_a_cluster_that_does_not_answer_ends_within_the_timeout(
    repo: Path, job: Obj
) -> None:
    """The defect: confirming the cluster retried as always (six attempts, 15.5 s of backoff a
    cluster) whatever --timeout said. With the client's own retry policy, the gather's one
    deadline now ends it after fewer attempts."""
    with FakeApiServer() as gone:
        address = gone.url
    run = CliRunner().invoke(
        cli,
        ["--root", str(repo), "gather", "--workflow", "cpu-smoke", "--timeout", "1s"],
        env={"BENCHFLEET_K8S_KUBECONFIG": kubeconfig(address)},
    )
    assert run.exit_code == 1
    assert "reading ConfigMap benchfleet-dev/benchfleet-cluster: not done in time" in run.output
    assert "gave up after" not in run.output


def test_lists_that_never_answer_by_the_timeout_are_named_not_taken_for_flux(
    collector: Collect, api: FakeApiServer, job: Obj
) -> None:
    """The identity ConfigMap was read, then every list failed until --timeout: gather said
    Flux had not applied the Jobs, which it could not know."""
    api.add("jobs", objects.complete(job))
    api.fail_next(1000, 503, path_contains="/jobs")
    run = collector("gather", "--timeout", "2s")
    assert run.exit_code == 1
    assert "Flux has not applied" not in run.output
    assert f"from the API server at {api.url} within --timeout (2 s)" in run.stderr
    assert "503 Service Unavailable" in run.stderr


def collector_against(
    repo: Path, server: str, command: str, *arguments: str
) -> subprocess.CompletedProcess[str]:
    """The collector as a process, its client retrying every failure as often as always but
    0.01 s apart, not 0.5 s doubling (15.5 s against a server that is gone): what it says
    of a failure does not depend on how long it waited."""
    return subprocess.run(
        [
            *QUICK_RETRIES,
            "--root",
            str(repo),
            command,
            "--workflow",
            "cpu-smoke",
            "--cluster",
            "us-east",
            *arguments,
        ],
        env={**os.environ, "BENCHFLEET_K8S_KUBECONFIG": kubeconfig(server)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


QUICK_RETRIES = [
    sys.executable,
    "-c",
    "import functools; from collector import kube; "
    "kube.RetryPolicy = functools.partial(kube.RetryPolicy, base_delay_s=0.01); "
    "from benchfleet.collector import cli; cli()",
]


def _stored_so_far(repo: Path) -> int:
    """Rows gather has stored; 0 before its database, or its table, exists (gather creates
    the file before the table: reading between the two raised)."""
    if not (repo / ".benchfleet" / "results.sqlite").exists():
        return 0
    try:
        return len(rows(repo))
    except sqlite3.OperationalError:
        return 0


def test_sigterm_ends_gather_like_an_interrupt(api: FakeApiServer, repo: Path, job: Obj) -> None:
    for index in range(3):
        api.add("pods", objects.succeeded_pod(job, index))
    for index in range(3, 6):
        api.add("pods", objects.running_pod(job, index))
    api.add("jobs", objects.job_status(job, active=3, completed=range(3)))
    gather = subprocess.Popen(
        [*COLLECTOR, "--root", str(repo), "gather", "--workflow", "cpu-smoke"],
        env={**os.environ, "BENCHFLEET_K8S_KUBECONFIG": kubeconfig(api.url)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _stored_so_far(repo) < 3:
        time.sleep(0.1)
    gather.send_signal(signal.SIGTERM)
    _, stderr = gather.communicate(timeout=30)
    assert gather.returncode == 1
    assert "interrupted (SIGTERM): 3 variant runs were stored; run gather again" in stderr


def test_an_unschedulable_cause_reaches_the_record_when_the_deadline_takes_the_pod(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """The defect: the record said only "deadline exceeded" once the pod was gone, though
    gather had seen why the variant never started."""
    for index in range(5):
        api.add("pods", objects.succeeded_pod(job, index))
    waiting = objects.unschedulable_pod(job, 5)
    api.add("pods", waiting)
    api.add("jobs", objects.job_status(job, active=1, completed=range(5)))

    def fail_later() -> None:
        time.sleep(1.5)
        api.delete("pods", NAMESPACE, waiting["metadata"]["name"])
        api.update(
            "jobs", objects.failed_job(job, "DeadlineExceeded", completed=range(5), failed=1)
        )

    threading.Thread(target=fail_later, daemon=True).start()
    run = collector("gather", "--timeout", "20s")
    assert run.exit_code == 1
    state, reason, explanation = stored(repo)[5]
    assert (state, reason) == ("failed", "DeadlineExceeded")
    # Said as its last attempt, or as why it had been waiting when its pod was gone first.
    assert "unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu" in explanation
