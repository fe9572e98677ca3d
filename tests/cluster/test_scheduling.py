"""Proof 5: scheduling by the real scheduler: a GPU nobody has waits with the scheduler's own
words, and a high-priority workflow preempts a low-priority one on a full node.

The GPU pods' runs are rules (no GPU here); where they are placed, who is preempted and what
the Job controller does about it is all the real scheduler and controller.
"""

import copy
from collections.abc import Iterator

import pytest
import yaml

from collector.indexes import IGNORED_COUNT_KEY
from contract.layout import HOSTNAME_LABEL, record_path
from contract.records import read_record
from localcluster.nodes import node_manifests, node_name
from localcluster.podexecutor import Succeed, job_index
from localcluster.results import ok_result
from synth.load import load_specs
from tests.cluster.conftest import (
    LiveCluster,
    PodObserver,
    Repo,
    job_condition,
    short_cpu_spec,
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


@pytest.fixture
def second_cpu_node(live: LiveCluster) -> Iterator[str]:
    """us-east with a second on-demand CPU node for the test (removed afterwards)."""
    fleet = load_specs(REPO_ROOT).fleet
    (node,) = [
        node
        for node in node_manifests(fleet.cluster("us-east"))
        if node["metadata"]["name"] == node_name("cpu")
    ]
    twin = copy.deepcopy(node)
    name = "cpu-1"
    twin["metadata"]["name"] = twin["metadata"]["labels"][HOSTNAME_LABEL] = name
    live.kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(twin))
    wait_for("the second CPU node to be Ready", lambda: _ready(live, [twin]))
    yield name
    live.kubectl("delete", "node", name)


def test_the_repeats_of_a_variant_run_on_different_nodes(
    live: LiveCluster, repo: Repo, second_cpu_node: str
) -> None:
    """Two repeats of two variants on two nodes: the scheduler may put any two pods on a node,
    but the anti-affinity keeps each index's two repeats apart. (Without it, the scheduler's
    spreading by allocation alone put both repeats of each index on one node in one of three
    tries: this test catches its loss only sometimes.)"""
    spec = short_cpu_spec("e2e-repeats", "[1, 2]")
    measure = "  measure: {min_iterations: 5, min_time: 0s, max_time: 1s}\n"
    repo.write_workflow("e2e-repeats", spec.replace(measure, f"{measure}  repeats: 2\n"))
    repo.synth()
    first, second = repo.job_names("e2e-repeats")
    config = repo.config("e2e-repeats", first)
    assert config["variants"] == repo.config("e2e-repeats", second)["variants"]
    for index in range(2):
        # Long enough that every pod still runs when the last is scheduled.
        live.rules.set("e2e-repeats", index, Succeed(ok_result(config, index), seconds=30))
    live.kubectl("apply", "--server-side", "-f", str(repo.workload("e2e-repeats")))

    def placed() -> dict[int, list[str]] | None:
        pods = live.pods("workflow=e2e-repeats")
        nodes = [pod["spec"].get("nodeName") for pod in pods]
        if len(pods) < 4 or not all(nodes):
            return None
        by_index: dict[int, list[str]] = {}
        for pod, node in zip(pods, nodes, strict=True):
            by_index.setdefault(job_index(pod)[1], []).append(node)
        return by_index

    by_index = wait_for("the four pods to be scheduled", placed)
    assert {index: len(set(nodes)) for index, nodes in by_index.items()} == {0: 2, 1: 2}
    assert {node for nodes in by_index.values() for node in nodes} == {"cpu-0", second_cpu_node}
