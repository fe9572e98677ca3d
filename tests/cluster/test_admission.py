"""Proof 1: the real API server admits every object synth writes, and enforces what they ask.

The API server's own validation, defaulting and admission run here, not a copy of a schema:
infrastructure is applied for real (the session fixture), every workloads file of every
cluster with a server-side dry run, which runs all of admission without creating anything.
"""

import subprocess

import pytest
import yaml

from tests.cluster.conftest import NAMESPACE, LiveCluster
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.cluster

CLUSTERS = sorted(path.name for path in (REPO_ROOT / "dist").iterdir() if path.is_dir())


def _apply(live: LiveCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return live.run("apply", "--server-side", *args)


def test_the_infrastructure_is_applied_with_no_warning(live: LiveCluster) -> None:
    applied = _apply(live, "-k", str(REPO_ROOT / "dist" / "us-east" / "infrastructure"))
    assert applied.returncode == 0, applied.stderr
    assert applied.stderr == ""
    names = live.kubectl("get", "namespaces", "-l", "app.kubernetes.io/managed-by=benchfleet",
                         "-o", "name").split()  # fmt: skip
    assert names == ["namespace/benchfleet-dev", "namespace/benchfleet-prod"]


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_workload_of_every_cluster_is_admitted(live: LiveCluster, cluster: str) -> None:
    """eu-west's workloads too: admission does not depend on the cluster's nodes."""
    folder = REPO_ROOT / "dist" / cluster / "workloads"
    applied = _apply(live, "--dry-run=server", "-k", str(folder))
    assert applied.returncode == 0, applied.stderr
    assert applied.stderr == ""
    objects = [line for line in applied.stdout.splitlines() if "(server dry run)" in line]
    expected = sum(
        1 for path in folder.glob("*.yaml") if path.name != "kustomization.yaml"
        for document in yaml.safe_load_all(path.read_text()) if document
    )  # fmt: skip
    assert len(objects) == expected


def _pod(security: dict[str, object]) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "not-restricted", "namespace": NAMESPACE},
            "spec": {
                "containers": [{"name": "c", "image": "busybox", "securityContext": security}]
            },
        }
    )


@pytest.mark.parametrize(
    ("security", "violation"),
    [({}, "runAsNonRoot != true"), ({"privileged": True}, 'privileged (container "c" must not')],
)
def test_pod_security_restricted_is_enforced_in_the_namespaces(
    live: LiveCluster, security: dict[str, object], violation: str
) -> None:
    refused = live.run("apply", "-f", "-", stdin=_pod(security))
    assert refused.returncode != 0
    assert 'violates PodSecurity "restricted:v1.33"' in refused.stderr
    assert violation in refused.stderr


def test_a_runner_pod_as_the_job_controller_makes_it_is_admitted(live: LiveCluster) -> None:
    """The Job's pod template, as a bare pod, passes the same PodSecurity check."""
    workload = REPO_ROOT / "dist" / "us-east" / "workloads" / "cpu-smoke.yaml"
    (job,) = [d for d in yaml.safe_load_all(workload.read_text()) if d and d["kind"] == "Job"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "runner-template", "namespace": NAMESPACE},
        "spec": job["spec"]["template"]["spec"],
    }
    admitted = live.run("create", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump(pod))
    assert admitted.returncode == 0, admitted.stderr
    assert admitted.stderr == ""
