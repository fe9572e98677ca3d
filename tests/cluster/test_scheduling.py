"""Proof 5: scheduling by the real scheduler: a GPU nobody has waits with the scheduler's own
words, and a high-priority workflow preempts a low-priority one on a full node.

The GPU pods' runs are rules (no GPU here); where they are placed, who is preempted and what
the Job controller does about it is all the real scheduler and controller.
"""

from collections.abc import Iterator

import pytest
import yaml

from collector.indexes import IGNORED_COUNT_KEY
from contract.layout import record_path
from contract.records import read_record
from localcluster.nodes import node_manifests
from localcluster.podexecutor import Succeed
from localcluster.results import ok_result
from synth.load import load_specs
from tests.cluster.conftest import (
    LiveCluster,
    PodObserver,
    Repo,
    job_condition,
    wait_for,
)
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.cluster


def _workflow(workflow: str, gpu: str, priority: str) -> str:
    return f"""\
id: {workflow}
description: one {priority}-priority variant on {gpu}
owner: ml-platform@example.com
clusters: [us-east]
models: [{{name: tiny-mlp, file: models/examples/tiny-mlp.pt2, inputs: [{{shape: [64]}}]}}]
targets: [{{gpu_type: {gpu}}}]
scheduling:
  priority: {priority}
"""


@pytest.fixture
def no_v100(live: LiveCluster) -> Iterator[None]:
    """us-east without its V100 nodes for the test (the nodes come back afterwards)."""
    fleet = load_specs(REPO_ROOT).fleet
    nodes = [
        node
        for node in node_manifests(fleet.cluster("us-east"))
        if node["metadata"]["labels"].get("gpu-type") == "nvidia-v100"
    ]
    for node in nodes:
        live.kubectl("delete", "node", node["metadata"]["name"])
    yield
    live.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump_all(nodes))
    wait_for("the V100 nodes to be Ready", lambda: _ready(live, nodes))


def _ready(live: LiveCluster, nodes: list[dict[str, object]]) -> bool:
    for node in nodes:
        conditions = live.get("node", str(node["metadata"]["name"]))["status"].get("conditions", [])  # type: ignore[index]
        if not any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
            return False
    return True


def test_a_gpu_no_node_has_waits_and_status_quotes_the_scheduler(
    live: LiveCluster, repo: Repo, collector_kubeconfig: str, no_v100: None
) -> None:
    repo.write_workflow("e2e-no-gpu", _workflow("e2e-no-gpu", "nvidia-v100", "low"))
    repo.synth()
    (job,) = repo.job_names("e2e-no-gpu")
    live.kubectl("apply", "--server-side", "-f", str(repo.workload("e2e-no-gpu")))

    def scheduler_said() -> str | None:
        for pod in live.pods(f"job={job}"):
            for condition in pod.get("status", {}).get("conditions", []):
                if condition["type"] == "PodScheduled" and condition.get("message"):
                    return str(condition["message"])
        return None

    said = wait_for("the scheduler to give up on the pod", scheduler_said)
    assert "didn't match Pod's node affinity/selector" in said
    status = repo.collector(
        "status", "--workflow", "e2e-no-gpu", "--cluster", "us-east",
        kubeconfig=collector_kubeconfig,
    )  # fmt: skip
    assert status.exit_code == 0, status.output
    assert "unschedulable" in status.output
    assert "didn't match Pod's node affinity/selector" in status.output


def test_high_priority_preempts_low_and_the_low_variant_is_retried_not_failed(
    live: LiveCluster, repo: Repo, collector_kubeconfig: str
) -> None:
    repo.write_workflow("e2e-low", _workflow("e2e-low", "nvidia-a100", "low"))
    repo.write_workflow("e2e-high", _workflow("e2e-high", "nvidia-a100", "high"))
    repo.synth()
    (low,) = repo.job_names("e2e-low")
    (high,) = repo.job_names("e2e-high")
    low_config = repo.config("e2e-low", low)
    # The low variant would hold the node's one GPU for minutes; its second attempt is quick.
    live.rules.set(
        "e2e-low",
        0,
        Succeed(ok_result(low_config, 0), seconds=300),
        Succeed(ok_result(low_config, 0)),
    )
    live.rules.set("e2e-high", 0, Succeed(ok_result(repo.config("e2e-high", high), 0)))

    with PodObserver(live, f"job={low}") as observer:
        live.kubectl("apply", "--server-side", "-f", str(repo.workload("e2e-low")))
        wait_for("the low variant to run", lambda: _phases(observer) == ["Running"])
        live.kubectl("apply", "--server-side", "-f", str(repo.workload("e2e-high")))
        assert wait_for("the high Job", lambda: job_condition(live, high)) == "Complete"
        assert wait_for("the low Job", lambda: job_condition(live, low)) == "Complete"

    first, second = observer.by_index()[0]
    conditions = {c["type"]: c for c in first["status"]["conditions"]}
    assert conditions["DisruptionTarget"]["reason"] == "PreemptionByScheduler"
    assert second["metadata"]["annotations"][IGNORED_COUNT_KEY] == "1"
    assert live.job(low)["status"].get("failed", 0) == 0

    gathered = repo.collector(
        "gather", "--workflow", "e2e-low", "--cluster", "us-east", kubeconfig=collector_kubeconfig
    )
    assert gathered.exit_code == 0, gathered.output
    (variant,) = read_record(record_path(repo.root, "e2e-low", "us-east", low)).variants
    assert (variant.state, variant.preemptions) == ("succeeded", 1)


def _phases(observer: PodObserver) -> list[str]:
    return [pod.get("status", {}).get("phase", "") for pod in observer.seen.values()]
