"""A benchfleet repository in git that Flux applies to a local cluster, bootstrapped as a team
bootstraps a real one.

A bare repository is served over smart HTTP (localcluster/gitserver.py); a working clone
holds specs/, models/ and what `make synth` writes, plus clusters/<cluster>/flux-system/ as
`flux bootstrap` would commit it. The bootstrap applies flux-system/ once by hand; from then
on Flux does every apply and prune. Reconciles are requested with the
`reconcile.fluxcd.io/requestedAt` annotation (what `flux reconcile` and webhook receivers
do) instead of waiting for intervals.
"""

import json
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from localcluster.controlplane import Cluster, kubectl
from localcluster.flux import FLUX_NAMESPACE
from localcluster.gitserver import GitServer
from localcluster.processes import poll_until
from synth.main import synth

BRANCH: Final = "main"
KUSTOMIZATIONS: Final = ("flux-system", "benchfleet-infrastructure", "benchfleet-workloads")
SOURCES: Final = ("flux-system", "benchfleet")
REQUESTED_AT: Final = "reconcile.fluxcd.io/requestedAt"
RECONCILE_EVERY_S: Final = 10.0
CONVERGE_TIMEOUT_S: Final = 180.0
Obj = dict[str, Any]


def git(work: Path, *args: str) -> str:
    """Run git in `work` as the repository's author; its stdout."""
    identity = ["-c", "user.name=benchfleet", "-c", "user.email=benchfleet@example.com"]
    completed = subprocess.run(
        ["git", "-C", str(work), *identity, *args], capture_output=True, text=True, check=True
    )
    return completed.stdout.strip()


def bootstrap_files(url: str, cluster: str) -> dict[str, str]:
    """What `flux bootstrap git --path=clusters/<cluster>` commits into its flux-system/.

    gotk-components.yaml holds the flux-system Namespace only: the controllers run as
    processes here (localcluster/flux.py), not as the Deployments a real bootstrap writes.
    gotk-sync.yaml is bootstrap's own: a GitRepository of this repository, and a Kustomization
    applying clusters/<cluster>/, where synth's benchfleet.yaml sits beside this folder.
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
                "path": f"./clusters/{cluster}",
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


def fleet_served_from(fleet_text: str, url: str) -> str:
    """A specs/clusters.yaml whose git source is `url` (plain HTTP on loopback: no secret)."""
    fleet = yaml.safe_load(fleet_text)
    fleet["git"] = {"url": url, "branch": BRANCH, "interval": "1m"}
    return yaml.safe_dump(fleet, sort_keys=False)


@dataclass
class FluxRepository:
    """The working clone, and the cluster Flux keeps in step with it."""

    work: Path
    cluster: Cluster
    binaries: Path

    def kubectl(self, *args: str) -> str:
        return kubectl(self.binaries, self.cluster, *args)

    def commit(self, message: str) -> str:
        """Synthesize, commit everything and push; the new commit's sha."""
        synth(self.work)
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "--allow-empty", "-m", message)
        git(self.work, "push", "-q", "origin", f"HEAD:{BRANCH}")
        return git(self.work, "rev-parse", "HEAD")

    def reconcile(self, *, kustomizations: bool = False) -> None:
        """Ask Flux to look now: the sources (the Kustomizations follow a new revision by
        themselves), and with `kustomizations` every Kustomization too (to see that a
        reconcile with nothing new changes nothing, or to correct drift)."""
        stamp = f"{time.time():.6f}"
        objects = [("gitrepository", name) for name in SOURCES]
        if kustomizations:
            objects += [("kustomization", name) for name in KUSTOMIZATIONS]
        for kind, name in objects:
            try:
                self.kubectl(
                    "annotate", "--overwrite", "-n", FLUX_NAMESPACE, kind, name,
                    f"{REQUESTED_AT}={stamp}",
                )  # fmt: skip
            except RuntimeError:
                continue  # not created yet: the one before it will create it

    def flux_object(self, kind: str, name: str) -> Obj | None:
        """A Flux object in flux-system, or None if it does not exist (yet)."""
        try:
            found: Obj = json.loads(
                self.kubectl("get", kind, name, "-n", FLUX_NAMESPACE, "-o", "json")
            )
        except RuntimeError:
            return None
        return found

    def condition(self, name: str) -> Obj | None:
        """Kustomization `name`'s Ready condition, once it has one."""
        found = self.flux_object("kustomization", name) or {}
        for condition in found.get("status", {}).get("conditions", []):
            if condition["type"] == "Ready":
                ready: Obj = condition
                return ready
        return None

    def ready_at(self, name: str, sha: str) -> bool:
        """Whether Kustomization `name` is Ready with `sha` applied."""
        ready = self.condition(name)
        found = self.flux_object("kustomization", name) or {}
        applied = found.get("status", {}).get("lastAppliedRevision", "")
        return ready is not None and ready["status"] == "True" and applied == f"{BRANCH}@sha1:{sha}"

    def until(
        self,
        what: str,
        check: Callable[[], Any],
        timeout_s: float = CONVERGE_TIMEOUT_S,
        *,
        kustomizations: bool = False,
    ) -> Any:
        """Poll `check` until it holds, requesting a reconcile now and again meanwhile (one
        may land while a source is busy and be missed)."""
        requested = [0.0]

        def looked() -> Any:
            if time.monotonic() - requested[0] > RECONCILE_EVERY_S:
                self.reconcile(kustomizations=kustomizations)
                requested[0] = time.monotonic()
            return check()

        return poll_until(what, looked, timeout_s)

    def converge(self, sha: str, kustomizations: tuple[str, ...] = KUSTOMIZATIONS) -> None:
        """Request reconciles until every Kustomization is Ready at `sha`."""
        self.until(
            f"Flux to apply {sha[:8]}",
            lambda: all(self.ready_at(name, sha) for name in kustomizations),
        )

    def bootstrap(self) -> str:
        """Commit, apply flux-system/ once by hand (what `flux bootstrap` applies), and wait
        until Flux has applied the whole commit itself; the commit's sha."""
        sha = self.commit("bootstrap")
        self.kubectl("apply", "--server-side", "-k", str(self.flux_system))
        self.converge(sha)
        return sha

    @property
    def flux_system(self) -> Path:
        return self.work / "clusters" / self.cluster.name / "flux-system"


def prepare(
    base: Path,
    cluster: Cluster,
    binaries: Path,
    *,
    server: GitServer,
    fleet_text: str,
) -> FluxRepository:
    """Create the served repository and its working clone holding the fleet and flux-system/;
    add models and specs, then call `bootstrap`.

    The working clone pushes over the file system; Flux fetches over smart HTTP.
    """
    served = server.root / "benchfleet.git"
    git(base, "init", "-q", "--bare", "-b", BRANCH, str(served))
    url = f"{server.url}/benchfleet.git"
    work = base / "work"
    git(base, "clone", "-q", str(served), str(work))
    (work / "specs" / "workflows").mkdir(parents=True)
    (work / "specs" / "clusters.yaml").write_text(fleet_served_from(fleet_text, url))
    (work / ".gitignore").write_text(".cache/\n.benchfleet/\n", encoding="utf-8")
    repository = FluxRepository(work, cluster, binaries)
    repository.flux_system.mkdir(parents=True)
    for name, text in bootstrap_files(url, cluster.name).items():
        (repository.flux_system / name).write_text(text, encoding="utf-8")
    return repository
