"""Start and stop one cluster: etcd, kube-apiserver, kube-controller-manager, kube-scheduler
and kwok, as processes on loopback, with the nodes of a fleet cluster.

All of it is upstream code at the versions in localcluster/components.py. What is not real
is below the API: kwok plays the kubelets (node status, heartbeats, leases, the log
endpoint), and localcluster/podexecutor.py plays what a kubelet does with a pod.
"""

import json
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from localcluster.build import data_dir
from localcluster.components import KUBERNETES_VERSION, KUEUE, KWOK, Component
from localcluster.monitoring import monitoring_documents
from localcluster.nodes import GPUS_PER_NODE, node_manifests
from localcluster.pki import Pki, make_pki
from localcluster.processes import Started, start, stop, wait_ready
from localrun.ports import free_port
from synth.fleet import Fleet

START_TIMEOUT_S = 60.0
STATE_FILE = "cluster.json"
SERVICE_CIDR = "10.0.0.0/24"
# The controllers a benchmark cluster's lifecycle needs: Jobs and their pods, ownership and
# deletion, namespaces, ServiceAccounts with their tokens and CA bundle, RBAC aggregation,
# CronJobs (an in-cluster collector), and node lifecycle, which lifts the not-ready taint
# that admission puts on every new node once kwok reports it Ready.
CONTROLLERS = (
    "node-lifecycle-controller",
    "job-controller",
    "cronjob-controller",
    "garbage-collector-controller",
    "ttl-after-finished-controller",
    "namespace-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "clusterrole-aggregation-controller",
    "pod-garbage-collector-controller",
    "disruption-controller",
)


@dataclass
class Cluster:
    """A running (or stopped) local cluster and where its files are."""

    name: str
    directory: Path
    server: str = ""
    processes: list[Started] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def pki(self) -> Pki:
        return Pki(self.directory / "pki")

    @property
    def kubeconfig(self) -> Path:
        return self.directory / "kubeconfig"

    @property
    def logs(self) -> Path:
        return self.directory / "logs"

    def save(self) -> None:
        state = {
            "name": self.name,
            "server": self.server,
            "processes": [[p.name, p.pid, str(p.log)] for p in self.processes],
            "timings": self.timings,
        }
        (self.directory / STATE_FILE).write_text(json.dumps(state, indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path) -> "Cluster":
        state = json.loads((directory / STATE_FILE).read_text())
        processes = [Started(name, pid, Path(log)) for name, pid, log in state["processes"]]
        return cls(state["name"], directory, state["server"], processes, state["timings"])

    def stop(self) -> None:
        """Stop every process, the last started first."""
        for process in reversed(self.processes):
            stop(process.pid)
        self.processes = []
        if (self.directory / STATE_FILE).exists():
            self.save()


def _https_context(pki: Pki, verify: bool = True) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(pki.ca_cert))
    if not verify:
        # The controller-manager and scheduler serve health on self-signed certificates.
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    context.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
    return context


def _get(url: str, context: ssl.SSLContext | None = None) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _is_ok(url: str, context: ssl.SSLContext | None = None) -> bool:
    return _get(url, context)[0] == 200


def write_kubeconfig(cluster: Cluster) -> None:
    """The admin kubeconfig, with a context named like the fleet's cluster."""
    pki = cluster.pki
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": cluster.name,
                "cluster": {"server": cluster.server, "certificate-authority": str(pki.ca_cert)},
            }
        ],
        "users": [
            {
                "name": "admin",
                "user": {
                    "client-certificate": str(pki.admin_cert),
                    "client-key": str(pki.admin_key),
                },
            }
        ],
        "contexts": [{"name": cluster.name, "context": {"cluster": cluster.name, "user": "admin"}}],
        "current-context": cluster.name,
    }
    cluster.kubeconfig.write_text(yaml.safe_dump(kubeconfig, sort_keys=False))
    cluster.kubeconfig.chmod(0o600)


def kubectl(binaries: Path, cluster: Cluster, *args: str, stdin: str | None = None) -> str:
    """Run the built kubectl against `cluster` as admin; its stdout."""
    completed = subprocess.run(
        [str(binaries / "kubectl"), "--kubeconfig", str(cluster.kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)}: {completed.stderr.strip()}")
    return completed.stdout


def _timed_start(
    cluster: Cluster,
    name: str,
    command: Sequence[str],
    ready_url: str,
    context: ssl.SSLContext | None = None,
) -> None:
    started = start(name, command, cluster.logs / f"{name}.log")
    cluster.processes.append(started)
    cluster.save()
    cluster.timings[name] = round(
        wait_ready(started, lambda: _is_ok(ready_url, context), START_TIMEOUT_S), 2
    )


def _start_etcd(cluster: Cluster, binaries: Path) -> str:
    client, peer = free_port(), free_port()
    client_url, peer_url = f"http://127.0.0.1:{client}", f"http://127.0.0.1:{peer}"
    command = [
        str(binaries / "etcd"),
        "--name=node0",
        f"--data-dir={cluster.directory / 'etcd'}",
        f"--listen-client-urls={client_url}",
        f"--advertise-client-urls={client_url}",
        f"--listen-peer-urls={peer_url}",
        f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=node0={peer_url}",
        # A test cluster's data need not survive a power cut; fsync would dominate its writes.
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]
    _timed_start(cluster, "etcd", command, f"{client_url}/health")
    return client_url


def _start_apiserver(cluster: Cluster, binaries: Path, etcd: str) -> None:
    pki, port = cluster.pki, free_port()
    cluster.server = f"https://127.0.0.1:{port}"
    command = [
        str(binaries / "kube-apiserver"),
        f"--etcd-servers={etcd}",
        "--bind-address=127.0.0.1",
        "--advertise-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={cluster.directory / 'apiserver-certs'}",
        f"--tls-cert-file={pki.admin_cert}",
        f"--tls-private-key-file={pki.admin_key}",
        f"--client-ca-file={pki.ca_cert}",
        f"--service-account-key-file={pki.service_account_key}",
        f"--service-account-signing-key-file={pki.service_account_key}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--authorization-mode=Node,RBAC",
        # As kubeadm and managed clusters run it: privileged pods are PodSecurity's to refuse.
        "--allow-privileged=true",
        # pods/log is proxied to kwok's kubelet endpoint on the node's InternalIP.
        "--kubelet-preferred-address-types=InternalIP",
        f"--kubelet-client-certificate={pki.admin_cert}",
        f"--kubelet-client-key={pki.admin_key}",
        "--endpoint-reconciler-type=none",
        "--profiling=false",
    ]
    _timed_start(
        cluster, "kube-apiserver", command, f"{cluster.server}/readyz", _https_context(pki)
    )
    status, body = _get(f"{cluster.server}/version", _https_context(pki))
    version = json.loads(body).get("gitVersion") if status == 200 else None
    if version != KUBERNETES_VERSION:
        raise RuntimeError(f"/version says {version}, not {KUBERNETES_VERSION}")


def _start_controller_manager(
    cluster: Cluster, binaries: Path, extra_flags: Sequence[str] = ()
) -> None:
    pki, port = cluster.pki, free_port()
    kubeconfig = str(cluster.kubeconfig)
    command = [
        str(binaries / "kube-controller-manager"),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--service-account-private-key-file={pki.service_account_key}",
        f"--root-ca-file={pki.ca_cert}",
        "--use-service-account-credentials",
        "--leader-elect=false",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={cluster.directory / 'controller-manager-certs'}",
        f"--controllers={','.join(CONTROLLERS)}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        *extra_flags,
    ]
    context = _https_context(pki, verify=False)
    _timed_start(
        cluster, "kube-controller-manager", command, f"https://127.0.0.1:{port}/healthz", context
    )


def _start_scheduler(cluster: Cluster, binaries: Path) -> None:
    pki, port = cluster.pki, free_port()
    config = cluster.directory / "scheduler.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "clientConnection": {"kubeconfig": str(cluster.kubeconfig)},
                "leaderElection": {"leaderElect": False},
            }
        )
    )
    kubeconfig = str(cluster.kubeconfig)
    command = [
        str(binaries / "kube-scheduler"),
        f"--config={config}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        "--bind-address=127.0.0.1",
        f"--secure-port={port}",
        f"--cert-dir={cluster.directory / 'scheduler-certs'}",
    ]
    context = _https_context(pki, verify=False)
    _timed_start(cluster, "kube-scheduler", command, f"https://127.0.0.1:{port}/healthz", context)


def _kwok_config(binaries: Path, path: Path) -> None:
    """kwok's Stages: node initialisation and heartbeats with leases, from the built version.

    No pod Stages: kwok leaves pods alone, and the pod executor does a kubelet's pod work.
    """
    stages = data_dir(binaries, KWOK)
    documents = [
        yaml.safe_load((stages / name).read_text())
        for name in ("node-initialize.yaml", "node-heartbeat-with-lease.yaml")
    ]
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))


def _start_kwok(cluster: Cluster, binaries: Path, nodes: list[dict[str, Any]]) -> None:
    pki, port = cluster.pki, free_port()
    config = cluster.directory / "kwok.yaml"
    _kwok_config(binaries, config)
    command = [
        str(binaries / "kwok"),
        f"--kubeconfig={cluster.kubeconfig}",
        f"--config={config}",
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
        "--node-ip=127.0.0.1",
        f"--node-port={port}",
        f"--server-address=127.0.0.1:{port}",
        f"--tls-cert-file={pki.admin_cert}",
        f"--tls-private-key-file={pki.admin_key}",
        "--node-lease-duration-seconds=40",
        "--enable-crds=Logs",
    ]
    started = start(
        "kwok", command, cluster.logs / "kwok.log", env={"HOME": str(cluster.directory)}
    )
    cluster.processes.append(started)
    cluster.save()
    names = [node["metadata"]["name"] for node in nodes]
    cluster.timings["kwok"] = round(
        wait_ready(started, lambda: _nodes_ready(binaries, cluster, names), START_TIMEOUT_S), 2
    )


def _nodes_ready(binaries: Path, cluster: Cluster, names: list[str]) -> bool:
    listed = json.loads(kubectl(binaries, cluster, "get", "nodes", "-o", "json"))
    ready = {
        node["metadata"]["name"]
        for node in listed["items"]
        for condition in node.get("status", {}).get("conditions", [])
        if condition["type"] == "Ready" and condition["status"] == "True"
    }
    return set(names) <= ready


def apply_documents(binaries: Path, cluster: Cluster, documents: list[dict[str, Any]]) -> None:
    """Server-side apply of `documents` as admin."""
    kubectl(
        binaries, cluster, "apply", "--server-side", "--field-manager=localcluster", "-f", "-",
        stdin=yaml.safe_dump_all(documents),
    )  # fmt: skip


def _wait_for_default_service_account(binaries: Path, cluster: Cluster) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            kubectl(binaries, cluster, "get", "serviceaccount", "default", "-n", "default")
            return
        except RuntimeError:
            time.sleep(0.2)
    raise RuntimeError("the serviceaccount controller made no `default` ServiceAccount")


def crd_documents(binaries: Path, components: Sequence[Component]) -> list[dict[str, Any]]:
    """The CRDs shipped with `components` (copied beside the binaries at build time)."""
    documents = []
    for component in components:
        for path in sorted(data_dir(binaries, component).glob("*.yaml")):
            loaded = yaml.safe_load(path.read_text())
            if loaded.get("kind") == "CustomResourceDefinition":
                documents.append(loaded)
    return documents


def start_cluster(
    name: str,
    directory: Path,
    binaries: Path,
    fleet: Fleet,
    *,
    crds_of: Sequence[Component] = (KWOK, KUEUE),
    gpus_per_node: int = GPUS_PER_NODE,
    controller_manager_flags: Sequence[str] = (),
) -> Cluster:
    """Start a fresh cluster in `directory` (emptied first) with the nodes of the fleet's
    cluster `name`, and what its `monitoring` needs there (localcluster/monitoring.py).

    `controller_manager_flags` go after the harness's own: a benchmark of thousands of pods
    raises the client's --kube-api-qps and --kube-api-burst (20 and 30 by default, which pace
    the Job controller's pod creation) and --terminated-pod-gc-threshold (12500)."""
    if directory.exists():
        subprocess.run(["rm", "-rf", str(directory)], check=True)
    directory.mkdir(parents=True)
    cluster = Cluster(name, directory)
    began = time.monotonic()
    try:
        make_pki(directory / "pki")
        etcd = _start_etcd(cluster, binaries)
        _start_apiserver(cluster, binaries, etcd)
        write_kubeconfig(cluster)
        monitoring = monitoring_documents(fleet.monitoring_of(fleet.cluster(name)))
        apply_documents(binaries, cluster, crd_documents(binaries, crds_of) + monitoring)
        kubectl(binaries, cluster, "wait", "--for=condition=Established", "crd", "--all")
        _start_controller_manager(cluster, binaries, controller_manager_flags)
        _start_scheduler(cluster, binaries)
        nodes = node_manifests(fleet.cluster(name), gpus_per_node)
        apply_documents(binaries, cluster, nodes)
        _start_kwok(cluster, binaries, nodes)
        _wait_for_default_service_account(binaries, cluster)
    except BaseException:
        cluster.stop()
        raise
    cluster.timings["total"] = round(time.monotonic() - began, 2)
    cluster.save()
    return cluster
