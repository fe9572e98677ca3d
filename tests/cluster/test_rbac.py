"""Proof 3: least privilege, as the real RBAC authorizer decides it.

Every verb the collector uses is allowed to its ServiceAccount (what `collector gather`,
`status` and `clean` call, in each benchfleet namespace); everything else asked here is
denied. The runner's ServiceAccount may do nothing, and its pods mount no token.
"""

import json
import uuid

import pytest

from contract.layout import CLUSTER_IDENTITY
from synth.charts.rbac import COLLECTOR_RULES, CONFIGMAP_POLICY
from tests.cluster.conftest import NAMESPACE, LiveCluster, PodObserver, Repo, wait_for

pytestmark = pytest.mark.cluster

COLLECTOR = "system:serviceaccount:benchfleet-dev:benchfleet-collector"
RUNNER = "system:serviceaccount:benchfleet-dev:benchfleet-runner"
NAMESPACES = ("benchfleet-dev", "benchfleet-prod")


def can(
    live: LiveCluster, user: str, verb: str, resource: str, namespace: str | None, name: str = ""
) -> bool:
    """`kubectl auth can-i --as USER`: a SubjectAccessReview answered by the API server.

    `resource` may name a subresource (pods/log); `name` asks about one object.
    """
    where = ["-n", namespace] if namespace else ["--all-namespaces"]
    resource, _, subresource = resource.partition("/")
    if subresource:
        where.append(f"--subresource={subresource}")
    target = f"{resource}/{name}" if name else resource
    answer = live.run("auth", "can-i", verb, target, "--as", user, *where)
    assert answer.stdout.strip() in ("yes", "no"), answer.stderr
    return answer.stdout.strip() == "yes"


def _granted() -> list[tuple[str, str, str]]:
    return [
        (verb, f"{resource}.{rule['apiGroups'][0]}" if rule["apiGroups"][0] else resource, name)
        for rule in COLLECTOR_RULES
        for resource in rule["resources"]
        for verb in rule["verbs"]
        for name in rule.get("resourceNames", [""])
    ]


@pytest.mark.parametrize("namespace", NAMESPACES)
@pytest.mark.parametrize(("verb", "resource", "name"), _granted())
def test_the_collector_may_do_what_it_does(
    live: LiveCluster, verb: str, resource: str, name: str, namespace: str
) -> None:
    assert can(live, COLLECTOR, verb, resource, namespace, name)


def test_the_collector_reads_no_configmap_but_the_cluster_identity(live: LiveCluster) -> None:
    assert can(live, COLLECTOR, "get", "configmaps", NAMESPACE, CLUSTER_IDENTITY)
    assert not can(live, COLLECTOR, "get", "configmaps", NAMESPACE, "e2e-some-job-config")
    assert not can(live, COLLECTOR, "list", "configmaps", NAMESPACE)


def _apply_configmap_as_collector(live: LiveCluster, name: str, owner: str | None) -> str:
    """Server-side apply a ConfigMap as the collector's ServiceAccount, as gather does; the
    API server's words ("" when it was allowed)."""
    metadata: dict[str, object] = {"name": name, "namespace": NAMESPACE}
    if owner is not None:
        metadata["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": owner, "uid": str(uuid.uuid4())}
        ]
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"0": "v1\n"}}
    answer = live.run(
        "apply", "--server-side", "--as", COLLECTOR, "-f", "-", stdin=json.dumps(body)
    )
    return "" if answer.returncode == 0 else answer.stderr


def test_the_collector_writes_only_a_jobs_reported_configmap(live: LiveCluster) -> None:
    """RBAC lets the collector create and patch any ConfigMap (gather's hand-back to retried
    groups needs both, and names cannot narrow `create`); the ValidatingAdmissionPolicy that
    synth writes beside the Role narrows it to `<job>-reported`, owned by that Job."""
    denied = wait_for(
        "the admission policy to be in force",
        lambda: _apply_configmap_as_collector(live, "e2e-anything", owner=None),
    )
    assert CONFIGMAP_POLICY in denied and "owned by that Job" in denied
    assert _apply_configmap_as_collector(live, "e2e-job-reported", owner=None)
    assert _apply_configmap_as_collector(live, "e2e-other-reported", owner="e2e-job")
    assert _apply_configmap_as_collector(live, "e2e-job-reported", owner="e2e-job") == ""
    assert _apply_configmap_as_collector(live, CLUSTER_IDENTITY, owner=None), "refused"
    live.run("delete", "configmap", "e2e-job-reported", "-n", NAMESPACE)


@pytest.mark.parametrize(
    ("verb", "resource", "namespace"),
    [
        ("create", "pods", NAMESPACE),
        ("delete", "pods", NAMESPACE),
        ("create", "jobs.batch", NAMESPACE),
        ("patch", "jobs.batch", NAMESPACE),
        ("get", "secrets", NAMESPACE),
        ("list", "secrets", NAMESPACE),
        ("list", "configmaps", NAMESPACE),
        ("create", "pods/exec", NAMESPACE),
        ("create", "serviceaccounts/token", NAMESPACE),
        ("list", "jobs.batch", "kube-system"),
        ("list", "pods", "default"),
        ("list", "nodes", None),
        ("list", "namespaces", None),
        ("list", "jobs.batch", None),
    ],
)
def test_the_collector_may_do_nothing_else(
    live: LiveCluster, verb: str, resource: str, namespace: str | None
) -> None:
    assert not can(live, COLLECTOR, verb, resource, namespace)


@pytest.mark.parametrize(
    ("verb", "resource"),
    [("get", "pods"), ("list", "pods"), ("get", "configmaps"), ("get", "secrets"),
     ("list", "jobs.batch"), ("create", "pods"), ("get", "pods/log")],
)  # fmt: skip
def test_the_runner_may_do_nothing(live: LiveCluster, verb: str, resource: str) -> None:
    assert not can(live, RUNNER, verb, resource, NAMESPACE)


def test_runner_pods_mount_no_service_account_token(live: LiveCluster, repo: Repo) -> None:
    repo.write_workflow(
        "e2e-rbac",
        """\
id: e2e-rbac
description: one variant whose pod is inspected for credentials
owner: ml-platform@example.com
models: [{name: tiny-mlp, file: models/examples/tiny-mlp.pt2, inputs: [{shape: [64]}]}]
benchmark:
  warmup: {min_iterations: 1, min_time: 0s}
  measure: {min_iterations: 5, min_time: 0s, max_time: 1s}
targets: [{gpu_type: cpu}]
""",
    )
    repo.synth()
    (job,) = repo.job_names("e2e-rbac")
    with PodObserver(live, f"job={job}"):
        live.kubectl("apply", "--server-side", "-f", str(repo.workload("e2e-rbac")))
        (pod,) = wait_for("the runner pod", lambda: live.pods(f"job={job}"))
    spec = pod["spec"]
    assert spec["serviceAccountName"] == "benchfleet-runner"
    assert spec["automountServiceAccountToken"] is False
    projected = [v for v in spec.get("volumes", []) if "projected" in v]
    tokens = [
        source
        for volume in projected
        for source in volume["projected"]["sources"]
        if "serviceAccountToken" in source
    ]
    assert tokens == []
    mounts = [m["mountPath"] for m in spec["containers"][0].get("volumeMounts", [])]
    assert "/var/run/secrets/kubernetes.io/serviceaccount" not in mounts
