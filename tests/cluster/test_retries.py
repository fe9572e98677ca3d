"""A grouped pod that dies mid-group, retried by the real Job controller: gather, following
the Job, stores what the first attempt measured and hands the ids back in a ConfigMap the Job
owns (contract/reported.py); the retry, the real runner, runs only the variant left, and the
garbage collector deletes the ConfigMap with the Job."""

import pytest

from contract.layout import record_path
from contract.records import read_record
from contract.reported import reported_configmap
from contract.result import result_line, termination_message
from localcluster.podexecutor import Exit
from localcluster.results import group_results
from tests.cluster.conftest import NAMESPACE, LiveCluster, PodObserver, Repo, wait_for

pytestmark = pytest.mark.cluster

GROUPED = """\
id: e2e-retry
description: three CPU variants in one pod, whose first attempt dies after two
owner: ml-platform@example.com
clusters: [us-east]
models: [{name: tiny-mlp, file: models/examples/tiny-mlp.pt2, inputs: [{shape: [64]}]}]
benchmark:
  warmup: {min_iterations: 1, min_time: 0s}
  measure: {min_iterations: 5, min_time: 0s, max_time: 1s}
targets:
  - gpu_type: cpu
    resources: {requests: {cpu: 1, memory: 1Gi}, limits: {cpu: 1, memory: 1Gi}}
sweep:
  matrix:
    batch_size: [1, 2, 4]
scheduling:
  variants_per_pod: 3
  retries: 1
"""


def test_a_retried_group_runs_only_what_its_first_attempt_did_not_report(
    live: LiveCluster, repo: Repo, collector_kubeconfig: str
) -> None:
    repo.write_workflow("e2e-retry", GROUPED)
    repo.synth()
    (job,) = repo.job_names("e2e-retry")
    config = repo.config("e2e-retry", job)
    assert config["groups"] == [[0, 1, 2]]
    measured = list(group_results(config, 0)[:2])
    # Killed by the kernel after handing over two results: a retry is due (exit 137 is no
    # FailIndex code), and the real runner plays it.
    killed = Exit(
        137,
        message=termination_message(measured),
        output="".join(result_line(result) for result in measured),
        reason="OOMKilled",
        seconds=0.5,
    )
    live.rules.set("e2e-retry", 0, killed, None)

    with PodObserver(live, f"job={job}") as observer:
        live.kubectl("apply", "--server-side", "-f", str(repo.workload("e2e-retry")))
        # Following the Job from its start: the retry is created some 10 s after the first
        # attempt fails (the Job controller's back-off), by which time gather has told it.
        gathered = repo.collector(
            "gather", "--workflow", "e2e-retry", "--cluster", "us-east", "--timeout", "3m",
            kubeconfig=collector_kubeconfig,
        )  # fmt: skip
    assert gathered.exit_code == 0, gathered.output

    first, retry = (pod["metadata"]["name"] for pod in observer.by_index()[0])
    record = read_record(record_path(repo.root, "e2e-retry", "us-east", job))
    assert [(v.index, v.state, v.pod) for v in record.variants] == [
        (0, "succeeded", first),
        (1, "succeeded", first),
        (2, "succeeded", retry),
    ]
    retry_log = live.kubectl("logs", retry, "-n", NAMESPACE)
    assert retry_log.count("BENCH_RESULT ") == 1, retry_log
    assert retry_log.count("not run again") == 2, retry_log

    handed = live.get("configmap", reported_configmap(job), "-n", NAMESPACE)
    ids = sorted(variant["id"] for variant in config["variants"][:2])
    assert handed["data"] == {"0": "".join(f"{variant_id}\n" for variant_id in ids)}
    (owner,) = handed["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("Job", job)
    live.kubectl("delete", "job", job, "-n", NAMESPACE, "--wait=true")
    wait_for(
        "the garbage collector to delete the ConfigMap with its Job",
        lambda: (
            live.run("get", "configmap", reported_configmap(job), "-n", NAMESPACE).returncode != 0
        ),
    )
