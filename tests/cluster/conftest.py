"""Fixtures for the tests against a real control plane (marker `cluster`).

One cluster per session, shaped like us-east in specs/clusters.yaml: the real etcd,
kube-apiserver, kube-controller-manager and kube-scheduler, kwok's nodes, and the pod
executor (localcluster/podexecutor.py) in this process. CPU pods run the real runner; GPU
pods cannot run here, and take their outcome from the rules a test sets in `rules`.

Each test synthesizes its own workflows (ids unique to the test) into a repository of its
own, so tests share the cluster and its namespaces but no Jobs.
"""

import base64
import contextlib
import json
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import urllib3
import yaml
from click.testing import CliRunner, Result
from kubernetes import client, config, watch

from benchfleet.collector import cli as collector_cli
from localcluster.build import binary_dir
from localcluster.controlplane import Cluster, kubectl, start_cluster
from localcluster.podexecutor import (
    Outcome,
    Pod,
    PodExecutor,
    Succeed,
    job_index,
    running_executor,
)
from localcluster.processes import poll_until
from localcluster.results import group_results
from synth.load import load_specs
from synth.main import synth
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.cluster

CLUSTER = "us-east"
NAMESPACE = "benchfleet-dev"
WAIT_S = 180.0

Obj = dict[str, Any]


@dataclass
class Rules:
    """Outcomes for GPU pods by (workflow, index), one per attempt: each new pod of an index
    takes the next, and the last repeats (None: that attempt runs the real runner). Indexes
    without a rule take the workflow's default; without that, the pod runs the real runner."""

    outcomes: dict[tuple[str, int], list[Outcome | None]] = field(default_factory=dict)
    defaults: dict[str, Outcome] = field(default_factory=dict)

    def set(self, workflow: str, index: int, *attempts: Outcome | None) -> None:
        self.outcomes[(workflow, index)] = list(attempts)

    def __call__(self, pod: Pod) -> Outcome | None:
        workflow = pod["metadata"].get("labels", {}).get("workflow", "")
        _, index = job_index(pod)
        attempts = self.outcomes.get((workflow, index))
        if not attempts:
            return self.defaults.get(workflow)
        return attempts.pop(0) if len(attempts) > 1 else attempts[0]


@dataclass
class LiveCluster:
    """The session's cluster, its binaries, its pod executor and the rules that executor
    follows for GPU pods."""

    cluster: Cluster
    binaries: Path
    executor: PodExecutor
    rules: Rules
    api: client.ApiClient

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        """kubectl's stdout; raises if it fails."""
        return kubectl(self.binaries, self.cluster, *args, stdin=stdin)

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        """kubectl as admin, whatever its exit status; stderr carries the server's warnings."""
        command = [str(self.binaries / "kubectl"), "--kubeconfig", str(self.cluster.kubeconfig)]
        return subprocess.run(
            [*command, *args], input=stdin, capture_output=True, text=True, check=False
        )

    def get(self, *args: str) -> Obj:
        loaded: Obj = json.loads(self.kubectl("get", *args, "-o", "json"))
        return loaded

    def apply_secret(self, namespace: str, name: str, data: dict[str, str]) -> None:
        """Create or update Secret `namespace`/`name` to hold `data` (plain values)."""
        encoded = {key: base64.b64encode(value.encode()).decode() for key, value in data.items()}
        manifest = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "data": encoded,
        }
        self.kubectl("apply", "-f", "-", stdin=json.dumps(manifest))

    def pods(self, selector: str, namespace: str = NAMESPACE) -> list[Obj]:
        items: list[Obj] = self.get("pods", "-n", namespace, "-l", selector)["items"]
        return items

    def pods_anywhere(self, workflow: str) -> list[Obj]:
        items: list[Obj] = self.get("pods", "-A", "-l", f"workflow={workflow}")["items"]
        return items

    def job(self, name: str, namespace: str = NAMESPACE) -> Obj:
        return self.get("job", name, "-n", namespace)


def wait_for(what: str, check: Callable[[], Any], timeout_s: float = WAIT_S) -> Any:
    """Poll `check` until it returns something truthy; that value."""
    return poll_until(what, check, timeout_s)


def job_condition(live: LiveCluster, name: str) -> str | None:
    """'Complete' or 'Failed' once the Job has finished, else None."""
    for condition in live.job(name).get("status", {}).get("conditions", []):
        if condition["type"] in ("Complete", "Failed") and condition["status"] == "True":
            return str(condition["type"])
    return None


@contextlib.contextmanager
def running_cluster(
    name: str, directory: Path, *, apply_infrastructure: bool = True
) -> Iterator[LiveCluster]:
    """A cluster shaped like fleet cluster `name`, its pod executor running in this process,
    and (unless Flux is to do it) its infrastructure from the committed dist/ applied."""
    binaries = binary_dir()
    fleet = load_specs(REPO_ROOT).fleet
    cluster = start_cluster(name, directory, binaries, fleet)
    rules = Rules()
    try:
        with running_executor(cluster.kubeconfig, directory / "executor", rules) as executor:
            api = config.new_client_from_config(str(cluster.kubeconfig))  # type: ignore[no-untyped-call]
            live = LiveCluster(cluster, binaries, executor, rules, api)
            if apply_infrastructure:
                infrastructure = REPO_ROOT / "dist" / name / "infrastructure"
                live.kubectl("apply", "--server-side", "-k", str(infrastructure))
            yield live
            assert not executor.problems, executor.problems
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCluster]:
    """The session's cluster: us-east."""
    with running_cluster(CLUSTER, tmp_path_factory.mktemp("cluster") / CLUSTER) as cluster:
        yield cluster


@dataclass
class Repo:
    """A repository of one test's own: the real fleet, the example models, its workflows."""

    root: Path
    workflows: list[str] = field(default_factory=list)

    def write_workflow(self, name: str, text: str) -> None:
        (self.root / "specs" / "workflows" / f"{name}.yaml").write_text(text, encoding="utf-8")
        self.workflows.append(name)

    def add_example(self, name: str) -> None:
        """Copy the committed spec `name` into the repository."""
        self.write_workflow(name, (REPO_ROOT / "specs" / "workflows" / f"{name}.yaml").read_text())

    def synth(self) -> None:
        synth(self.root)

    def workload(self, workflow: str, cluster: str = CLUSTER) -> Path:
        return self.root / "dist" / cluster / "workloads" / f"{workflow}.yaml"

    def documents(self, workflow: str, cluster: str = CLUSTER) -> list[Obj]:
        """The workflow's objects in dist/ (none once every Job of it is recorded)."""
        if not self.workload(workflow, cluster).exists():
            return []
        text = self.workload(workflow, cluster).read_text(encoding="utf-8")
        return [d for d in yaml.safe_load_all(text) if d]

    def job_names(self, workflow: str, cluster: str = CLUSTER) -> list[str]:
        documents = self.documents(workflow, cluster)
        return [d["metadata"]["name"] for d in documents if d["kind"] == "Job"]

    def config(self, workflow: str, job: str) -> Obj:
        """config.json of `job`, as synth wrote it into the Job's ConfigMap."""
        (configmap,) = [
            d for d in self.documents(workflow)
            if d["kind"] == "ConfigMap" and d["metadata"]["name"] == job
        ]  # fmt: skip
        loaded: Obj = json.loads(configmap["data"]["config.json"])
        return loaded

    def collector(self, *arguments: str, kubeconfig: str) -> Result:
        """`collector --root REPO ARGUMENTS` with `kubeconfig` as its only credential."""
        return CliRunner().invoke(
            collector_cli,
            ["--root", str(self.root), *arguments],
            env={"BENCHFLEET_K8S_KUBECONFIG": kubeconfig, "KUBECONFIG": "/nonexistent"},
        )


def short_cpu_spec(workflow: str, batch_sizes: str, clusters: str = "[us-east]") -> str:
    """A workflow of one-second CPU variants of tiny-mlp, one per batch size."""
    return f"""\
id: {workflow}
description: short CPU variants of tiny-mlp
owner: ml-platform@example.com
clusters: {clusters}
models: [{{name: tiny-mlp, file: models/examples/tiny-mlp.pt2, inputs: [{{shape: [64]}}]}}]
benchmark:
  warmup: {{min_iterations: 1, min_time: 0s}}
  measure: {{min_iterations: 5, min_time: 0s, max_time: 1s}}
targets:
  - gpu_type: cpu
    resources: {{requests: {{cpu: 1, memory: 1Gi}}, limits: {{cpu: 1, memory: 1Gi}}}}
sweep:
  matrix:
    batch_size: {batch_sizes}
"""


def succeed_quickly(live: LiveCluster, repo: Repo, workflow: str) -> None:
    """Let every pod of `workflow`'s Jobs hand over a valid result at once, instead of running
    the runner: for tests about Kubernetes and Flux, not about measuring."""
    for job in repo.job_names(workflow):
        config = repo.config(workflow, job)
        for index in range(len(config.get("groups") or config["variants"])):
            live.rules.set(workflow, index, Succeed(group_results(config, index)))


def _no_pods(live: LiveCluster, workflow: str) -> bool:
    return not live.pods_anywhere(workflow)


@pytest.fixture
def repo(tmp_path: Path, live: LiveCluster) -> Iterator[Repo]:
    """The test's repository; its workflows' Jobs are deleted from the cluster afterwards,
    so that no test's pods hold a node another test needs."""
    (tmp_path / "specs" / "workflows").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "specs" / "clusters.yaml", tmp_path / "specs" / "clusters.yaml")
    shutil.copytree(REPO_ROOT / "models", tmp_path / "models")
    repo = Repo(tmp_path)
    yield repo
    for workflow in repo.workflows:
        live.run("delete", "jobs", "-A", "-l", f"workflow={workflow}", "--wait=true")
        wait_for(f"{workflow}'s pods to go", partial(_no_pods, live, workflow))


def service_account_kubeconfig(
    *clusters: "LiveCluster", account: str = "benchfleet-collector"
) -> str:
    """A kubeconfig with a context per cluster, named like it, each holding a token the
    cluster's TokenRequest API issued for `account` in benchfleet-dev; the first is current."""
    entries, users, contexts = [], [], []
    for live in clusters:
        name = live.cluster.name
        token = live.kubectl("create", "token", account, "-n", NAMESPACE, "--duration=1h")
        entries.append(
            {
                "name": name,
                "cluster": {
                    "server": live.cluster.server,
                    "certificate-authority": str(live.cluster.pki.ca_cert),
                },
            }
        )
        users.append({"name": f"{name}-{account}", "user": {"token": token.strip()}})
        contexts.append({"name": name, "context": {"cluster": name, "user": f"{name}-{account}"}})
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": entries,
            "users": users,
            "contexts": contexts,
            "current-context": contexts[0]["name"],
        }
    )


@pytest.fixture
def collector_kubeconfig(live: LiveCluster) -> str:
    """The collector's own credential: its ServiceAccount's token, not admin."""
    return service_account_kubeconfig(live)


class PodObserver:
    """Watches a Job's pods: every pod ever created (as last seen, deleted ones too) and the
    most that were active at once."""

    def __init__(self, live: LiveCluster, selector: str, namespace: str = NAMESPACE) -> None:
        self._core = client.CoreV1Api(live.api)
        self._selector, self._namespace = selector, namespace
        self._active: set[str] = set()
        self.seen: dict[str, Obj] = {}
        self.most_active = 0
        self._watch = watch.Watch()  # type: ignore[no-untyped-call]
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "PodObserver":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._watch.stop()  # type: ignore[no-untyped-call]
        self._thread.join(timeout=10)

    def _run(self) -> None:
        # Stopping the watch may cut its response mid-chunk: that ends the observation too.
        with contextlib.suppress(urllib3.exceptions.ProtocolError):
            self._observe()

    def _observe(self) -> None:
        for event in self._watch.stream(  # type: ignore[no-untyped-call]
            self._core.list_namespaced_pod, self._namespace, label_selector=self._selector
        ):
            pod = event["raw_object"]
            name = pod["metadata"]["name"]
            self.seen[name] = pod
            phase = pod.get("status", {}).get("phase")
            gone = event["type"] == "DELETED" or phase in ("Succeeded", "Failed")
            if gone:
                self._active.discard(name)
            else:
                self._active.add(name)
            self.most_active = max(self.most_active, len(self._active))

    def by_index(self) -> dict[int, list[Obj]]:
        """Every pod seen, by completion index, in order of creation."""
        pods: dict[int, list[Obj]] = {}
        for pod in sorted(self.seen.values(), key=lambda p: p["metadata"]["creationTimestamp"]):
            pods.setdefault(job_index(pod)[1], []).append(pod)
        return pods
