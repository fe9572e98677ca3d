"""Flux's real controllers on a local cluster: from `git push` to a Job's first pod, and what
reconciling a dist/ of 1000 models costs.

    python -m bench.flux_reconcile      (needs `make cluster-build`)

A us-east twin with source-controller and kustomize-controller (localcluster/flux.py),
bootstrapped from a repository served over smart HTTP (localcluster/gitops.py). Pods are
never started (the pod executor keeps them waiting): what is timed is Flux and the API.
- push -> first pod, with a reconcile requested at once (what `flux reconcile` or a webhook
  receiver does), ROUNDS times; then once relying on the GitRepository's interval alone;
- the stress set of bench/synth_speed.py (20 workflows of 50 distinct models, real archives
  of about 8 KiB) committed at once: time until the workloads Kustomization is Ready at that
  commit, its inventory size, and the time of a reconcile with nothing changed.

`--smoke` pushes once with a reconcile requested (not waiting out the 1 m interval) and
commits 2 models, for the test-suite (tests/bench/, marked `cluster`).
"""

import argparse
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from bench.synth_speed import write_stress
from localcluster.build import binary_dir, is_built
from localcluster.controlplane import Cluster, kubectl, start_cluster
from localcluster.flux import FLUX_NAMESPACE, start_flux
from localcluster.gitops import REQUESTED_AT, FluxRepository, prepare
from localcluster.gitserver import GitServer
from localcluster.podexecutor import NeverStart, Pod, running_executor
from localcluster.processes import poll_until
from synth.load import load_specs

CLUSTER: Final = "us-east"
REPO_ROOT: Final = Path(__file__).resolve().parent.parent
WORKFLOW: Final = """\
id: {workflow}
description: one CPU variant, to time Flux
owner: bench
clusters: [us-east]
models: [{{name: tiny-mlp, file: models/examples/tiny-mlp.pt2, inputs: [{{shape: [64]}}]}}]
targets: [{{gpu_type: cpu}}]
"""


def _never_start(pod: Pod) -> NeverStart:
    return NeverStart()


def _first_pod(binaries: Path, cluster: Cluster, workflow: str) -> bool:
    listed = kubectl(
        binaries, cluster, "get", "pods", "-A", "-l", f"workflow={workflow}", "-o", "name"
    )
    return bool(listed.strip())


def _push_to_first_pod(
    flux: FluxRepository, binaries: Path, workflow: str, *, request: bool
) -> float:
    (flux.work / "specs" / "workflows" / f"{workflow}.yaml").write_text(
        WORKFLOW.format(workflow=workflow), encoding="utf-8"
    )
    flux.commit(workflow)
    began = time.perf_counter()
    if request:
        flux.reconcile()
    poll_until(f"{workflow}'s first pod", lambda: _first_pod(binaries, flux.cluster, workflow), 180)
    return time.perf_counter() - began


def _noop_reconcile(flux: FluxRepository) -> float:
    stamp = f"{time.time():.6f}"
    began = time.perf_counter()
    flux.kubectl("annotate", "--overwrite", "-n", FLUX_NAMESPACE, "kustomization",
                 "benchfleet-workloads", f"{REQUESTED_AT}={stamp}")  # fmt: skip

    def handled() -> bool:
        found = flux.flux_object("kustomization", "benchfleet-workloads") or {}
        return bool(found.get("status", {}).get("lastHandledReconcileAt") == stamp)

    poll_until("the reconcile", handled, 300)
    return time.perf_counter() - began


@dataclass(frozen=True)
class Scale:
    """How much the bench runs: `--smoke` runs its steps at a size of seconds."""

    rounds: int
    interval: bool
    """Whether to time a push that waits for the GitRepository's interval (a minute)."""
    stress: tuple[int, int]
    """Workflows and models of each."""


FULL = Scale(rounds=3, interval=True, stress=(20, 50))
SMOKE = Scale(rounds=1, interval=False, stress=(1, 2))


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.flux_reconcile", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="every step, at a tiny size")
    scale = SMOKE if parser.parse_args().smoke else FULL
    if not is_built():
        raise SystemExit("the local cluster is not built: run `make cluster-build` first")
    binaries = binary_dir()
    fleet = load_specs(REPO_ROOT).fleet
    fleet_text = (REPO_ROOT / "specs" / "clusters.yaml").read_text(encoding="utf-8")
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch)
        (base / "served").mkdir()
        cluster = start_cluster(CLUSTER, base / "cluster", binaries, fleet)
        try:
            with (
                running_executor(cluster.kubeconfig, base / "executor", _never_start),
                GitServer(base / "served") as server,
            ):
                start_flux(cluster, binaries)
                flux = prepare(base, cluster, binaries, server=server, fleet_text=fleet_text)
                # Committed, as in a real repository: synth reads nothing a symlink
                # leads to outside the repository.
                shutil.copytree(
                    REPO_ROOT / "models" / "examples", flux.work / "models" / "examples"
                )
                flux.bootstrap()
                _report_push(flux, binaries, scale)
                _report_stress(flux, scale)
        finally:
            cluster.stop()


def _report_push(flux: FluxRepository, binaries: Path, scale: Scale) -> None:
    requested = [
        _push_to_first_pod(flux, binaries, f"push-{n}", request=True) for n in range(scale.rounds)
    ]
    print("git push -> the Job's first pod")
    print(f"  reconcile requested at once: median {statistics.median(requested):.1f} s "
          f"(range {min(requested):.1f}-{max(requested):.1f}, {scale.rounds} pushes)")  # fmt: skip
    if scale.interval:
        interval = _push_to_first_pod(flux, binaries, "push-interval", request=False)
        print(f"  GitRepository interval (1m) alone: {interval:.1f} s (one push)")


def _report_stress(flux: FluxRepository, scale: Scale) -> None:
    workflows, models = scale.stress
    write_stress(flux.work, workflows, models)
    sha = flux.commit(f"{workflows * models} models")
    began = time.perf_counter()
    flux.converge(sha, ("benchfleet-workloads",))
    applied = time.perf_counter() - began
    found = flux.flux_object("kustomization", "benchfleet-workloads") or {}
    entries = len(found.get("status", {}).get("inventory", {}).get("entries", []))
    noop = [_noop_reconcile(flux) for _ in range(scale.rounds)]
    print(f"a dist/ of {workflows * models} models ({workflows} workflows x {models} models, "
          "real archives of about 8 KiB), committed at once")  # fmt: skip
    print(f"  push -> workloads Kustomization Ready at that commit: {applied:.1f} s")
    print(f"  its inventory: {entries} objects")
    print(f"  a reconcile with nothing changed: median {statistics.median(noop):.1f} s "
          f"(range {min(noop):.1f}-{max(noop):.1f})")  # fmt: skip


if __name__ == "__main__":
    main()
