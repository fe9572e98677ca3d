"""Proof 7: two clusters, us-east and eu-west, each its own control plane; the collector
stores each cluster's results under that cluster's name, and a credential that reaches only
one of them records nothing under the other (collector/identity.py). The pods run the real
runner in both clusters.
"""

from collections.abc import Iterator
from functools import partial

import pytest

from contract.layout import record_path
from contract.records import read_record
from tests.cluster.conftest import (
    LiveCluster,
    Repo,
    job_condition,
    running_cluster,
    service_account_kubeconfig,
    short_cpu_spec,
    wait_for,
)

pytestmark = pytest.mark.cluster

WORKFLOW = "e2e-regions"
SPEC = short_cpu_spec(WORKFLOW, "[1, 2]", clusters="[us-east, eu-west]")


@pytest.fixture(scope="module")
def eu_west(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCluster]:
    """A second control plane, shaped like eu-west."""
    with running_cluster("eu-west", tmp_path_factory.mktemp("cluster") / "eu-west") as cluster:
        yield cluster


def _pod_names(live: LiveCluster, job: str) -> set[str]:
    return {pod["metadata"]["name"] for pod in live.pods(f"job={job}")}


def test_each_cluster_is_recorded_under_its_own_name_and_one_credential_reaches_one(
    live: LiveCluster, eu_west: LiveCluster, repo: Repo
) -> None:
    repo.write_workflow(WORKFLOW, SPEC)
    repo.synth()
    jobs = {}
    for cluster in (live, eu_west):
        name = cluster.cluster.name
        (jobs[name],) = repo.job_names(WORKFLOW, name)
        cluster.kubectl("apply", "--server-side", "-f", str(repo.workload(WORKFLOW, name)))
    for cluster in (live, eu_west):
        job = jobs[cluster.cluster.name]
        assert wait_for(job, partial(job_condition, cluster, job)) == "Complete"

    us_east_only = service_account_kubeconfig(live)
    refused = repo.collector(
        "gather", "--workflow", WORKFLOW, "--cluster", "eu-west", kubeconfig=us_east_only
    )
    assert refused.exit_code == 1
    assert "reach cluster 'us-east'" in refused.output
    assert not (repo.root / "results" / WORKFLOW / "eu-west").exists()

    first = repo.collector("gather", "--workflow", WORKFLOW, kubeconfig=us_east_only)
    assert first.exit_code == 0, first.output
    assert "eu-west: skipped:" in first.output
    assert "us-east: stored 2 variant runs" in first.output
    assert sorted(p.name for p in (repo.root / "results" / WORKFLOW).iterdir()) == ["us-east"]

    both = service_account_kubeconfig(live, eu_west)
    second = repo.collector("gather", "--workflow", WORKFLOW, kubeconfig=both)
    assert second.exit_code == 0, second.output
    assert "eu-west: stored 2 variant runs" in second.output
    for cluster in (live, eu_west):
        name = cluster.cluster.name
        record = read_record(record_path(repo.root, WORKFLOW, name, jobs[name]))
        assert record.cluster == name
        assert {v.pod for v in record.variants} == _pod_names(cluster, jobs[name])
        assert all(v.result is not None and v.result.status == "ok" for v in record.variants)
