"""A benchfleet repository in git, served to Flux's real controllers over smart HTTP.

The test commits to a working clone and pushes to a bare repository that
localcluster/gitserver.py serves; the cluster was bootstrapped as `flux bootstrap` does it
(its files in clusters/us-east/flux-system/, applied once by hand), so from there on Flux does
every apply and prune. Reconciles are requested with the `reconcile.fluxcd.io/requestedAt`
annotation instead of waiting for intervals.
"""

import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from localcluster.gitserver import GitServer
from synth.main import synth
from tests.cluster.conftest import CLUSTER, LiveCluster, Repo, wait_for
from tests.conftest import REPO_ROOT

FLUX_NAMESPACE: Final = "flux-system"
BRANCH: Final = "main"
KUSTOMIZATIONS: Final = ("flux-system", "benchfleet-infrastructure", "benchfleet-workloads")
REQUESTED_AT: Final = "reconcile.fluxcd.io/requestedAt"
RECONCILE_EVERY_S: Final = 3.0
Obj = dict[str, Any]


def git(work: Path, *args: str) -> str:
    """Run git in `work` as a test author; its stdout."""
    identity = ["-c", "user.name=benchfleet-test", "-c", "user.email=test@example.com"]
    completed = subprocess.run(
        ["git", "-C", str(work), *identity, *args], capture_output=True, text=True, check=True
    )
    return completed.stdout.strip()


def bootstrap_files(url: str) -> dict[str, str]:
    """What `flux bootstrap git --path=clusters/us-east` commits into clusters/us-east/flux-system/.

    gotk-components.yaml holds the flux-system Namespace only: the controllers run as
    processes here (localcluster/flux.py), not as the Deployments a real bootstrap writes.
    gotk-sync.yaml is bootstrap's: a GitRepository of this repository, and a Kustomization
    applying clusters/us-east/ (where benchfleet.yaml sits beside this folder).
    """
    sync = [
        {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": "flux-system", "namespace": FLUX_NAMESPACE},
            "spec": {"interval": "1m0s", "ref": {"branch": BRANCH}, "url": url},
        },
        {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": "flux-system", "namespace": FLUX_NAMESPACE},
            "spec": {
                "interval": "10m0s",
                "path": f"./clusters/{CLUSTER}",
                "prune": True,
                "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
            },
        },
    ]
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": FLUX_NAMESPACE}}
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["gotk-components.yaml", "gotk-sync.yaml"],
    }
    return {
        "gotk-components.yaml": yaml.safe_dump(namespace, sort_keys=False),
        "gotk-sync.yaml": yaml.safe_dump_all(sync, sort_keys=False),
        "kustomization.yaml": yaml.safe_dump(kustomization, sort_keys=False),
    }


def fleet_served_from(url: str) -> str:
    """specs/clusters.yaml with its git source pointing at the test's server (no secret)."""
    fleet = yaml.safe_load((REPO_ROOT / "specs" / "clusters.yaml").read_text(encoding="utf-8"))
    fleet["git"] = {"url": url, "branch": BRANCH, "interval": "1m"}
    return yaml.safe_dump(fleet, sort_keys=False)


@dataclass
class GitOps:
    """The working clone, its server, and the cluster Flux keeps in step with it."""

    repo: Repo
    live: LiveCluster
    url: str
    server: GitServer

    @property
    def work(self) -> Path:
        return self.repo.root

    def commit(self, message: str) -> str:
        """Synthesize, commit everything and push; the new commit's sha."""
        synth(self.work)
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "--allow-empty", "-m", message)
        git(self.work, "push", "-q", "origin", f"HEAD:{BRANCH}")
        return git(self.work, "rev-parse", "HEAD")

    def reconcile(self) -> None:
        """Ask Flux to look now: the sources, then every Kustomization."""
        stamp = f"{time.time():.6f}"
        for kind, name in [
            ("gitrepository", "flux-system"),
            ("gitrepository", "benchfleet"),
            *(("kustomization", name) for name in KUSTOMIZATIONS),
        ]:
            self.live.run(
                "annotate",
                "--overwrite",
                "-n",
                FLUX_NAMESPACE,
                kind,
                name,
                f"{REQUESTED_AT}={stamp}",
            )

    def flux_object(self, kind: str, name: str) -> Obj:
        return self.live.get(kind, name, "-n", FLUX_NAMESPACE)

    def ready_at(self, name: str, sha: str) -> bool:
        """Whether Kustomization `name` is Ready with `sha` applied."""
        found = self.live.run("get", "kustomization", name, "-n", FLUX_NAMESPACE, "-o", "json")
        if found.returncode != 0:
            return False
        status = json.loads(found.stdout).get("status", {})
        ready = [c for c in status.get("conditions", []) if c["type"] == "Ready"]
        applied = status.get("lastAppliedRevision", "")
        return bool(ready) and ready[0]["status"] == "True" and applied == f"{BRANCH}@sha1:{sha}"

    def converge(self, sha: str, kustomizations: tuple[str, ...] = KUSTOMIZATIONS) -> None:
        """Request reconciles until every Kustomization is Ready at `sha`."""
        self.until(
            f"Flux to apply {sha[:8]}",
            lambda: all(self.ready_at(name, sha) for name in kustomizations),
        )

    def condition(self, name: str) -> Obj:
        """Kustomization `name`'s Ready condition."""
        status = self.flux_object("kustomization", name).get("status", {})
        (ready,) = [c for c in status.get("conditions", []) if c["type"] == "Ready"]
        condition: Obj = ready
        return condition

    def until(self, what: str, check: Callable[[], Any]) -> Any:
        """wait_for, requesting a reconcile every few seconds while it waits."""
        requested = [0.0]

        def looked() -> Any:
            if time.monotonic() - requested[0] > RECONCILE_EVERY_S:
                self.reconcile()
                requested[0] = time.monotonic()
            return check()

        return wait_for(what, looked, timeout_s=120)
