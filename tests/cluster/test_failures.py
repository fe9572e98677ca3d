"""Proof 4: failure semantics as the real Job controller applies synth's podFailurePolicy.

The pods are GPU pods: they cannot run here, so the executor plays each attempt's end as
the test's rules say (exit code, eviction, never starting). The Job controller, the
Eviction API and the collector's reading of the result are all real.
"""

import pytest
from kubernetes import client

from contract.layout import record_path
from contract.records import JobRecord, read_record
from contract.result import compact
from localcluster.podexecutor import Exit, NeverStart, Succeed
from localcluster.results import error_result, ok_result
from tests.cluster.conftest import (
    NAMESPACE,
    LiveCluster,
    PodObserver,
    Repo,
    job_condition,
    wait_for,
)

pytestmark = pytest.mark.cluster

FAILURES = """\
id: e2e-failures
description: one variant per way a variant can end, on a T4 that exists only as a rule
owner: ml-platform@example.com
models: [{name: tiny-mlp, file: models/examples/tiny-mlp.pt2, inputs: [{shape: [64]}]}]
targets: [{gpu_type: nvidia-t4}]
sweep:
  matrix:
    batch_size: [1, 2, 3, 4, 5, 6]
scheduling:
  max_parallel: 1
  retries: 1
"""


def _running_pod(observer: PodObserver, index: int) -> str | None:
    for pod in observer.by_index().get(index, []):
        if pod.get("status", {}).get("phase") == "Running":
            return str(pod["metadata"]["name"])
    return None


def _record(repo: Repo, workflow: str, job: str) -> JobRecord:
    return read_record(record_path(repo.root, workflow, "us-east", job))


def test_each_exit_code_is_retried_or_not_as_the_policy_says(
    live: LiveCluster, repo: Repo, collector_kubeconfig: str
) -> None:
    repo.write_workflow("e2e-failures", FAILURES)
    repo.synth()
    (job,) = repo.job_names("e2e-failures")
    config = repo.config("e2e-failures", job)
    rules = live.rules
    bad_config = error_result(config, 0, "bad_config", "input shape [64] does not fit")
    rules.set("e2e-failures", 0, Exit(2, compact(bad_config)))  # bad config: FailIndex
    rules.set("e2e-failures", 1, Exit(4, reason="OOMKilled"))  # out of memory: FailIndex
    rules.set("e2e-failures", 2, Exit(6))  # unsupported variant: FailIndex
    rules.set("e2e-failures", 3, Exit(3))  # model load: retried once, failing both times
    # Evicted while running, then run again: a disruption spends no retry.
    rules.set(
        "e2e-failures", 4, Succeed(ok_result(config, 4), seconds=120), Succeed(ok_result(config, 4))
    )
    rules.set("e2e-failures", 5, Succeed(ok_result(config, 5)))

    with PodObserver(live, f"job={job}") as observer:
        live.kubectl("apply", "--server-side", "-f", str(repo.workload("e2e-failures")))
        pod = wait_for("index 4 to run", lambda: _running_pod(observer, 4))
        eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name=pod, namespace=NAMESPACE))
        client.CoreV1Api(live.api).create_namespaced_pod_eviction(pod, NAMESPACE, eviction)
        assert wait_for("the Job to end", lambda: job_condition(live, job)) == "Failed"

    assert live.job(job)["spec"]["backoffLimitPerIndex"] == 1  # retries: 1
    status = live.job(job)["status"]
    assert status["completedIndexes"] == "4,5"
    assert status["failedIndexes"] == "0-3"
    attempts = {index: len(pods) for index, pods in observer.by_index().items()}
    assert attempts == {0: 1, 1: 1, 2: 1, 3: 2, 4: 2, 5: 1}
    evicted = observer.by_index()[4][0]
    conditions = {c["type"]: c for c in evicted["status"]["conditions"]}
    assert conditions["DisruptionTarget"]["reason"] == "EvictionByEvictionAPI"
    assert evicted["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 143

    gathered = repo.collector(
        "gather", "--workflow", "e2e-failures", "--cluster", "us-east", "--timeout", "2m",
        kubeconfig=collector_kubeconfig,
    )  # fmt: skip
    assert gathered.exit_code == 1, gathered.output  # variants failed: gather says so
    assert "4 variants failed" in gathered.output
    record = _record(repo, "e2e-failures", job)
    by_index = {v.index: v for v in record.variants}
    assert [by_index[i].state for i in range(6)] == ["failed"] * 4 + ["succeeded"] * 2
    assert by_index[1].reason == "OOMKilled"
    assert by_index[3].attempts == 2
    assert by_index[4].preemptions == 1
    assert by_index[4].result is not None and by_index[4].result.variant is not None
    assert by_index[4].result.variant.batch_size == 5
    explanations = [by_index[index].explanation for index in range(4)]
    assert "podFailurePolicy FailIndex" in explanations[0]
    assert "input shape [64] does not fit" in explanations[0]
    assert "OOMKilled" in explanations[1]
    assert "exit 6" in explanations[2]
    assert explanations[3].startswith("retries exhausted after 2 attempts")


DEADLINE = """\
id: e2e-deadline
description: a variant that never starts, so the Job's deadline ends it
owner: ml-platform@example.com
models: [{name: tiny-mlp, file: models/examples/tiny-mlp.pt2, inputs: [{shape: [64]}]}]
targets: [{gpu_type: nvidia-t4}]
scheduling:
  deadline: 8s
"""


def test_the_deadline_ends_the_job_and_the_collector_says_so(
    live: LiveCluster, repo: Repo, collector_kubeconfig: str
) -> None:
    repo.write_workflow("e2e-deadline", DEADLINE)
    repo.synth()
    (job,) = repo.job_names("e2e-deadline")
    live.rules.defaults["e2e-deadline"] = NeverStart()
    live.kubectl("apply", "--server-side", "-f", str(repo.workload("e2e-deadline")))
    assert wait_for("the Job to end", lambda: job_condition(live, job)) == "Failed"
    (failed,) = [
        c for c in live.job(job)["status"]["conditions"] if c["type"] == "Failed"
    ]  # fmt: skip
    assert failed["reason"] == "DeadlineExceeded"
    wait_for("the pod to be deleted", lambda: not live.pods(f"job={job}"))

    gathered = repo.collector(
        "gather", "--workflow", "e2e-deadline", "--cluster", "us-east", "--timeout", "1m",
        kubeconfig=collector_kubeconfig,
    )  # fmt: skip
    assert gathered.exit_code == 1, gathered.output
    record = _record(repo, "e2e-deadline", job)
    assert record.outcome == "failed"
    assert record.failure is not None and "deadline" in record.failure.lower()
