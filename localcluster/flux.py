"""Flux's source-controller and kustomize-controller, run as processes against a local cluster.

The product uses a GitRepository and Kustomizations, so these two controllers are all it
needs. Left out: helm-controller (no Helm releases), notification-controller (no alerts or
receivers; `--events-addr` stays empty so the controllers send no events to it), and the
image automation controllers (the runner image is pinned by digest in specs/, not by Flux).
Both run as the admin identity of the cluster (a real bootstrap gives them cluster-admin
through their ServiceAccounts), with their CRDs from the very module versions built.
"""

import os
import urllib.request
from functools import partial
from pathlib import Path

from localcluster.components import KUSTOMIZE_CONTROLLER, SOURCE_CONTROLLER
from localcluster.controlplane import (
    START_TIMEOUT_S,
    Cluster,
    apply_documents,
    crd_documents,
    kubectl,
)
from localcluster.processes import start, wait_ready
from localrun.ports import free_port

FLUX_NAMESPACE = "flux-system"
# How soon a Kustomization waiting on another looks again (Flux's default: 30 s). Users keep
# the default; the tests would otherwise spend most of their time waiting on it.
REQUEUE_DEPENDENCY = "2s"
FLUX_COMPONENTS = (SOURCE_CONTROLLER, KUSTOMIZE_CONTROLLER)


def _ready(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=5) as response:
        return bool(response.status == 200)


def start_flux(cluster: Cluster, binaries: Path) -> None:
    """Install Flux's CRDs and namespace, start both controllers and wait until they are ready."""
    documents = crd_documents(binaries, FLUX_COMPONENTS)
    documents.append(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": FLUX_NAMESPACE}}
    )
    apply_documents(binaries, cluster, documents)
    # A controller started before its kinds are served exits ("no matches for kind"): under
    # load the API server takes a moment to establish a CRD it has accepted.
    kubectl(binaries, cluster, "wait", "--for=condition=Established", "crd", "--all")
    environment = {
        **os.environ,
        "KUBECONFIG": str(cluster.kubeconfig),
        "RUNTIME_NAMESPACE": FLUX_NAMESPACE,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    storage = free_port()
    artifacts = cluster.directory / "flux-artifacts"
    artifacts.mkdir(exist_ok=True)
    controllers = {
        "source-controller": [
            f"--storage-path={artifacts}",
            f"--storage-addr=127.0.0.1:{storage}",
            f"--storage-adv-addr=127.0.0.1:{storage}",
        ],
        "kustomize-controller": [f"--requeue-dependency={REQUEUE_DEPENDENCY}"],
    }
    for name, flags in controllers.items():
        health, metrics = free_port(), free_port()
        command = [
            str(binaries / name),
            *flags,
            f"--health-addr=127.0.0.1:{health}",
            f"--metrics-addr=127.0.0.1:{metrics}",
            "--watch-all-namespaces",
            "--log-level=info",
        ]
        started = start(name, command, cluster.logs / f"{name}.log", env=environment)
        cluster.processes.append(started)
        cluster.save()
        url = f"http://127.0.0.1:{health}/readyz"
        seconds = wait_ready(started, partial(_ready, url), START_TIMEOUT_S)
        cluster.timings[name] = round(seconds, 2)
    cluster.save()
