"""`collector gather` of the 96-variant quantization sweep against a real API server.

    python -m bench.cluster_gather      (needs `make cluster-build`)

A local cluster shaped like eu-west (localcluster/, H100 nodes of 8 GPUs each), the sweep
from specs/workflows/quantization-sweep.yaml applied as synth writes it, and its pods played
by the pod executor (H100 pods cannot run here: each hands over, after 50 ms, a real runner's
result under its own variant's identity: bench/real_results.py).
Measured:
- following: gather from the moment the Job is applied until all 96 variants are stored
  (what the cluster takes to run them dominates);
- finished: gather of the 96 finished variants into an empty database, against the design
  note's way, per pod (a list of the Job, a list of its pods, then per pod its log, parsed
  and stored), alternately (A B A B), with the median per side, the per-pair ratio and its
  range, and the API requests each made.
`--smoke` compares the two once, for the test-suite (tests/bench/, marked `cluster`).
"""

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Final

import yaml
from kubernetes import config
from kubernetes.client import ApiClient

from bench.real_results import measured
from collector.gather import Gatherer, GatherOptions
from collector.kube import KubeClient
from collector.pods import read_result
from collector.workload import ExpectedJob, expected_jobs
from contract.layout import INFRASTRUCTURE, cluster_dist, workload_file
from contract.records import StoredVariant
from localcluster.build import binary_dir, is_built
from localcluster.controlplane import kubectl, start_cluster
from localcluster.podexecutor import Pod, Succeed, job_index, running_executor
from localcluster.results import as_variant
from store.database import open_store
from synth.load import load_specs
from synth.main import synth

CLUSTER: Final = "eu-west"
WORKFLOW: Final = "quantization-sweep"
ROUNDS: Final = 5
GPUS_PER_NODE: Final = 8
REPO_ROOT: Final = Path(__file__).resolve().parent.parent


def _repo(root: Path) -> Path:
    (root / "specs" / "workflows").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "specs" / "clusters.yaml", root / "specs")
    shutil.copy(
        REPO_ROOT / "specs" / "workflows" / f"{WORKFLOW}.yaml", root / "specs" / "workflows"
    )
    # A copy, not a symlink: synth reads nothing a symlink leads to outside the repository.
    shutil.copytree(REPO_ROOT / "models" / "examples", root / "models" / "examples")
    synth(root)
    return root


def _config(workload: Path) -> dict[str, object]:
    documents = [d for d in yaml.safe_load_all(workload.read_text()) if d]
    (job,) = [d for d in documents if d["kind"] == "Job"]
    (configmap,) = [
        d for d in documents
        if d["kind"] == "ConfigMap" and d["metadata"]["name"] == job["metadata"]["name"]
    ]  # fmt: skip
    loaded: dict[str, object] = json.loads(configmap["data"]["config.json"])
    return loaded


def _gather(client: KubeClient, root: Path, expected: list[ExpectedJob], db: Path) -> int:
    with open_store(db) as store:
        options = GatherOptions(timeout_s=600, record=False)
        return Gatherer(client, store, root, expected, options=options).run().stored_new


def _per_pod(client: KubeClient, expected: list[ExpectedJob], db: Path) -> int:
    (job,) = expected
    identity = job.identity
    stored = 0
    with open_store(db) as store:
        client.list_jobs(identity.namespace, f"job={identity.job}")
        pods = client.list_pods(identity.namespace, f"job={identity.job}").items
        for pod in pods:
            log = client.pod_log(identity.namespace, pod["metadata"]["name"], "runner")
            reading = read_result(pod, log)
            index = job_index(pod)[1]
            variant = StoredVariant(
                index=index, state="succeeded", explanation="ok", result=reading.result
            )
            stored += store.add(identity, [variant]).new
    return stored


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.cluster_gather", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="one round")
    rounds = 1 if parser.parse_args().smoke else ROUNDS
    if not is_built():
        raise SystemExit("the local cluster is not built: run `make cluster-build` first")
    binaries = binary_dir()
    fleet = load_specs(REPO_ROOT).fleet
    with tempfile.TemporaryDirectory() as scratch:
        root = _repo(Path(scratch) / "repo")
        workload = root / workload_file(CLUSTER, WORKFLOW)
        settings = _config(workload)
        real = measured()

        def rule(pod: Pod) -> Succeed:
            return Succeed(as_variant(real, settings, job_index(pod)[1]), seconds=0.05)

        cluster = start_cluster(
            CLUSTER, Path(scratch) / "cluster", binaries, fleet,
            gpus_per_node=GPUS_PER_NODE,
        )  # fmt: skip
        try:
            with running_executor(cluster.kubeconfig, Path(scratch) / "executor", rule):
                kubectl(binaries, cluster, "apply", "--server-side", "-k",
                        str(root / cluster_dist(CLUSTER) / INFRASTRUCTURE))  # fmt: skip
                api = config.new_client_from_config(str(cluster.kubeconfig))  # type: ignore[no-untyped-call]
                expected = expected_jobs(root, WORKFLOW, CLUSTER)
                began = time.perf_counter()
                kubectl(binaries, cluster, "apply", "--server-side", "-f", str(workload))
                follower = KubeClient(api)
                stored = _gather(follower, root, expected, Path(scratch) / "follow.sqlite")
                following = time.perf_counter() - began
                print(f"{WORKFLOW}: {stored} variants run and stored in {following:.1f} s "
                      f"following the Job, {sum(follower.requests.values())} API requests "
                      f"{dict(sorted(follower.requests.items()))}")  # fmt: skip
                _compare(api, root, expected, Path(scratch), rounds)
        finally:
            cluster.stop()


def _compare(
    api: ApiClient, root: Path, expected: list[ExpectedJob], scratch: Path, rounds: int
) -> None:
    sides: dict[str, list[tuple[float, int]]] = {"gather (list + watch)": [], "per pod": []}
    for round_ in range(rounds):
        for name, runs in sides.items():
            client = KubeClient(api)
            db = scratch / f"{round_}-{len(name)}.sqlite"
            began = time.perf_counter()
            if name.startswith("gather"):
                stored = _gather(client, root, expected, db)
            else:
                stored = _per_pod(client, expected, db)
            seconds = time.perf_counter() - began
            assert stored == expected[0].completions, (name, stored)
            runs.append((seconds, sum(client.requests.values())))
    gather, per_pod = sides.values()
    ratios = [g[0] / p[0] for g, p in zip(gather, per_pod, strict=True)]
    print(f"\nGathering {expected[0].completions} finished variants, {rounds} interleaved rounds")
    print(f"{'side':<24} {'median s':>9} {'requests':>9}")
    for name, runs in sides.items():
        print(f"{name:<24} {statistics.median(s for s, _ in runs):>9.3f} {runs[0][1]:>9}")
    print(f"gather / per pod: {statistics.median(ratios):.3f} "
          f"(range {min(ratios):.3f}-{max(ratios):.3f})")  # fmt: skip


if __name__ == "__main__":
    main()
