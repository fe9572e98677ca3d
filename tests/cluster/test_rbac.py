"""Proof 3: least privilege, as the real RBAC authorizer decides it.

Every verb the collector uses is allowed to its ServiceAccount (what `collector gather`,
`status` and `clean` call, in each benchfleet namespace); everything else asked here is
denied. The runner's ServiceAccount may do nothing, and its pods mount no token.
"""

import pytest

from contract.layout import CLUSTER_IDENTITY
from synth.charts.rbac import COLLECTOR_RULES
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
