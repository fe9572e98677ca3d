"""Proof 2: cpu-smoke end to end on the real Job controller and scheduler, gathered by the
collector authenticated as its own ServiceAccount; and proof 6, the content-hash lifecycle.

The pods run the real runner (localcluster/podexecutor.py runs them through localrun).
"""

import json
from datetime import datetime

import pytest

from collector.pods import condition, runner_container, runner_terminated
from contract.layout import record_path
from contract.quantity import parse_quantity
from contract.records import JobRecord, read_record
from synth.load import load_specs
from tests.cluster.conftest import (
    NAMESPACE,
    LiveCluster,
    PodObserver,
    Repo,
    job_condition,
    wait_for,
)

pytestmark = pytest.mark.cluster

WORKFLOW = "cpu-smoke"


@pytest.fixture
def smoke(repo: Repo) -> Repo:
    repo.add_example(WORKFLOW)
    repo.synth()
    return repo


def test_cpu_smoke_runs_is_gathered_once_and_cleaned(
    live: LiveCluster, smoke: Repo, collector_kubeconfig: str
) -> None:
    (job,) = smoke.job_names(WORKFLOW)
    with PodObserver(live, f"job={job}") as observer:
        live.kubectl("apply", "--server-side", "-f", str(smoke.workload(WORKFLOW)))
        gathered = smoke.collector(
            "gather", "--workflow", WORKFLOW, "--cluster", "us-east", "--timeout", "5m",
            kubeconfig=collector_kubeconfig,
        )  # fmt: skip
    assert gathered.exit_code == 0, gathered.output
    assert "stored 6 variant runs (0 were stored before)" in gathered.output
    assert job_condition(live, job) == "Complete"
    parallelism = live.job(job)["spec"]["parallelism"]
    assert 1 < observer.most_active <= parallelism == 3
    assert len(observer.seen) == 6
    record = read_record(record_path(smoke.root, WORKFLOW, "us-east", job))
    assert record.outcome == "complete"
    assert [v.result.status for v in record.variants if v.result] == ["ok"] * 6
    # What each variant held, read from its real pod: PodScheduled to the runner's end, times
    # the CPUs it requested (a CPU target's pod holds no GPU).
    pods = observer.by_index()
    for variant in record.variants:
        (pod,) = pods[variant.index]
        scheduled = condition(pod, "PodScheduled") or {}
        span = datetime.fromisoformat(runner_terminated(pod)["finishedAt"]) - (
            datetime.fromisoformat(scheduled["lastTransitionTime"])
        )
        container = runner_container(pod) or {}
        cpus = float(parse_quantity(container["resources"]["requests"]["cpu"]))
        held = variant.allocation
        assert held is not None and held.estimate == ()
        assert (held.seconds, held.devices, held.unit) == (span.total_seconds(), cpus, "cpu")
        assert (held.device_type, held.capacity, held.attempts) == ("cpu", "on-demand", 1)
    # When each pod got its node (the scheduler's PodScheduled) and started its runner (the
    # executor's startedAt), in the order they happen.
    starts = [v.pod_start for v in record.variants]
    assert all(s and s.starting_s is not None and s.waited_s is not None for s in starts)
    report = smoke.collector(
        "report", "--workflow", WORKFLOW, "--cluster", "us-east", kubeconfig=collector_kubeconfig
    )
    assert report.exit_code == 0, report.output
    assert "Start-up on cpu (us-east): 6 pods, measurement" in report.output
    assert_priced(smoke, collector_kubeconfig, record)

    again = smoke.collector(
        "gather", "--workflow", WORKFLOW, "--cluster", "us-east", kubeconfig=collector_kubeconfig
    )
    assert again.exit_code == 0, again.output
    assert "stored 6 variant runs" not in again.output

    # dist/ still holds the Job: clean must leave it alone.
    kept = smoke.collector("clean", "--cluster", "us-east", kubeconfig=collector_kubeconfig)
    assert kept.exit_code == 0, kept.output
    assert live.job(job)["metadata"]["name"] == job

    smoke.synth()  # the record makes synth drop the Job
    assert smoke.job_names(WORKFLOW) == []
    cleaned = smoke.collector("clean", "--cluster", "us-east", kubeconfig=collector_kubeconfig)
    assert cleaned.exit_code == 0, cleaned.output
    wait_for("the Job and its pods to be gone", lambda: not live.pods(f"job={job}"))
    assert job not in live.kubectl("get", "jobs", "-n", NAMESPACE, "-o", "name")


def assert_priced(smoke: Repo, kubeconfig: str, record: JobRecord) -> None:
    """The report prices what the variants held by the example fleet's table (a CPU-hour on
    demand), per variant and per target."""
    priced = smoke.collector(
        "report", "--workflow", WORKFLOW, "--cluster", "us-east", "--format", "json",
        kubeconfig=kubeconfig,
    )  # fmt: skip
    assert priced.exit_code == 0, priced.output
    found = json.loads(priced.stdout)["costs"]
    prices = load_specs(smoke.root).fleet.prices_in("us-east")
    assert prices is not None and found["currency"] == prices.currency
    cpu_hour = prices.per_hour["cpu"].on_demand
    assert cpu_hour is not None
    held_s = sum(v.allocation.device_seconds or 0 for v in record.variants if v.allocation)
    (target,) = found["targets"]
    assert (target["target"], target["unit"], target["variants"]) == ("cpu", "cpu", 6)
    assert target["device_seconds"] == pytest.approx(held_s)
    assert target["cost"] == pytest.approx(held_s * cpu_hour / 3600)
    assert len(found["variants"]) == 6
    assert all(v["cost_per_1000"] and v["cost_per_1000"] > 0 for v in found["variants"])
