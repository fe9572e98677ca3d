"""`collector gather` of 1,000, 5,000 and 10,000 finished variants from a real API server.

    python -m bench.cluster_gather_scale [--smoke]     (needs `make cluster-build`)

(`--smoke`: 2 Jobs of 2 and of 3 completions, one round, for the test-suite's tests/bench/.)

A local cluster shaped like eu-west (localcluster/: kube-apiserver, etcd, the controller
manager's Job controller, kube-scheduler, kwok nodes, the pod executor playing each H100 pod
as a run that hands over, at once, a real runner's result under its own variant's identity:
bench/real_results.py). Its Jobs come from synth: the quantization
sweep with a 13th batch size (104 variants), synthesized, and its Job and config.json
ConfigMap copied 100 times per size under new names, with 10, 50 and 100 completions (the
first variants of config.json), into one workflow per size. Everything else is synth's.

The harness's controller manager runs here with --kube-api-qps 500 --kube-api-burst 1000
(its client's defaults, 20 and 30, would cap the Job controller's pod creates, status
updates and finalizer removals at 20 requests a second; not measured at the defaults), and
--terminated-pod-gc-threshold 50000 keeps the pod garbage collector from deleting finished
pods past 12,500 (all three sizes are 16,000). The H100 node gets room for every pod at once
(its 32 CPUs would run 4 of these pods at a time).

Once every Job has completed and the executor has stopped, each size is gathered into an
empty database by `collector gather`'s Gatherer (record=False, as in bench/cluster_gather.py),
in a fresh interpreter per measurement, sizes interleaved per round: one run for API requests,
wall time and peak RSS growth (VmHWM less VmRSS before gathering), one under tracemalloc for
the peak of Python's heap. Then, at 10k: where the heap is at the end of gather's first step
(everything stored, by file and line), and how the list's page size (limit) changes a list
of the 10,000 pods alone.

Measured 2026-12-05, 21:38 UTC, with real results (2 shared cores under load, 3 rounds,
medians; the 16,000 pods ran in 18 min, the API server peaking at 3.14 GiB RSS, etcd at
0.94 GiB):

    variants  requests  s      heap peak MiB  KiB/variant  RSS growth MiB
       1,000         6   1.28           39.8         40.8              44
       5,000        13   7.07           77.0         15.8              96
      10,000        24  14.14          150.2         15.4             182

Earlier the same day, with made-up results (no samples), with the collector before (commit
40610a9) -> after cutting what it holds per variant (docs/collector.md, Scale):

    variants  requests  s             heap peak MiB    KiB/variant    RSS growth MiB
       1,000         6  1.38 -> 1.63   55.2 ->  36.9    56.5 -> 37.8    64 ->  44
       5,000        13  6.63 -> 7.05  261.1 ->  74.8    53.5 -> 15.3   280 -> 108
      10,000        24 11.44 -> 13.56 518.6 -> 146.0    53.1 -> 14.9   563 -> 181

Letting go of the pods before the records are built then took 5,000 variants from 74.8 to
67.6 MiB of heap and from 99 to 80 MiB of RSS growth (same day, a second cluster).
Requests are pages only (a list of Jobs, pods in pages of 500, a watch of each); the time,
about 1.4 s per 1,000 variants, is mostly the API server's list (the 10,000 pods alone:
13.2 s in pages of 100, 13.1 s of 500, 12.6 s of 2,000, 10.2 s in one request).
"""

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml
from kubernetes import config

from bench.real_results import measured
from collector.gather import Counts, Gatherer, GatherOptions
from collector.indexes import job_finished
from collector.kube import KubeClient
from collector.running import RunningView
from collector.workload import expected_jobs, label_selector
from contract.dist import Manifest, read_workload
from contract.layout import (
    INFRASTRUCTURE,
    WORKFLOW_LABEL,
    cluster_dist,
    workload_file,
)
from localcluster.build import binary_dir, is_built
from localcluster.controlplane import Cluster, kubectl, start_cluster
from localcluster.nodes import node_name
from localcluster.podexecutor import Pod, Succeed, job_index, running_executor
from localcluster.results import as_variant
from store.database import open_store
from synth.load import load_specs
from synth.main import synth

CLUSTER: Final = "eu-west"
SPEC: Final = "quantization-sweep"
SWEEP: Final = "scale-sweep"
NAMESPACE: Final = "benchfleet-dev"


@dataclass(frozen=True)
class Scale:
    """How much the bench runs: `--smoke` runs every step at a size of seconds."""

    jobs: int
    completions: tuple[int, ...]
    """Of each Job, one workflow per size."""
    rounds: int
    page_sizes: tuple[int, ...]
    poll_s: float
    """The wait between counts of the completed Jobs: 15 s where they run for minutes, 1 s
    in the smoke run, whose Jobs finish in seconds (it slept 15 s of its 40)."""


FULL: Final = Scale(
    jobs=100,
    completions=(10, 50, 100),
    rounds=3,
    page_sizes=(100, 500, 2000, 10000),
    poll_s=15,
)
SMOKE: Final = Scale(jobs=2, completions=(2, 3), rounds=1, page_sizes=(2, 10), poll_s=1)
CONTROLLER_MANAGER_FLAGS: Final = (
    "--kube-api-qps=500",
    "--kube-api-burst=1000",
    "--terminated-pod-gc-threshold=50000",
)
ROOM: Final = {"cpu": "100000", "memory": "100000Gi", "pods": "100000", "nvidia.com/gpu": "100000"}
RUN_TIMEOUT_S: Final = 3600.0
TOP_LINES: Final = 15
REPO_ROOT: Final = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Measurement:
    """One gather of one size in a fresh interpreter."""

    variants: int
    requests: dict[str, int]
    seconds: float
    rss_growth_kib: int
    heap_peak_bytes: int | None
    """Under tracemalloc (a run of its own: tracing slows the run it measures)."""


def workflow_of(scale: Scale, completions: int) -> str:
    """The workflow holding the size of `completions` per Job."""
    return f"scale-{scale.jobs * completions}"


def _repo(root: Path, scale: Scale) -> Path:
    """A repository with synth's output for the sweep, plus one workflow per size."""
    (root / "specs" / "workflows").mkdir(parents=True)
    (root / "specs" / "clusters.yaml").write_text(
        (REPO_ROOT / "specs" / "clusters.yaml").read_text()
    )
    spec = yaml.safe_load((REPO_ROOT / "specs" / "workflows" / f"{SPEC}.yaml").read_text())
    spec["id"] = SWEEP
    spec["sweep"]["matrix"]["batch_size"].append(3)
    (root / "specs" / "workflows" / f"{SWEEP}.yaml").write_text(yaml.safe_dump(spec))
    models = root / "models" / "examples"
    models.mkdir(parents=True)
    for model in (REPO_ROOT / "models" / "examples").iterdir():
        if model.is_file():
            (models / model.name).write_bytes(model.read_bytes())
    synth(root)
    workload = read_workload(root / workload_file(CLUSTER, SWEEP))
    (job,) = workload.jobs
    job_config = workload.configmaps[job["metadata"]["name"]]
    shared = [m for name, m in workload.configmaps.items() if name != job["metadata"]["name"]]
    for completions in scale.completions:
        workflow = workflow_of(scale, completions)
        copies = [
            _copy(job, job_config, workflow, number, completions) for number in range(scale.jobs)
        ]
        documents = shared + [m for pair in copies for m in pair]
        path = root / workload_file(CLUSTER, workflow)
        path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return root


def _copy(
    job: Manifest, job_config: Manifest, workflow: str, number: int, completions: int
) -> tuple[Manifest, Manifest]:
    """Job `number` of `workflow`: synth's Job and ConfigMap renamed, with `completions`."""
    old_name, name = job["metadata"]["name"], f"{workflow}-h100-{number:03d}"
    job, job_config = copy.deepcopy(job), copy.deepcopy(job_config)
    for labels in (
        job["metadata"]["labels"],
        job["spec"]["template"]["metadata"]["labels"],
        job_config["metadata"]["labels"],
    ):
        labels |= {WORKFLOW_LABEL: workflow, "app.kubernetes.io/instance": workflow, "job": name}
    job["metadata"]["name"] = job_config["metadata"]["name"] = name
    job["metadata"]["annotations"]["benchfleet.io/variants"] = str(completions)
    job["spec"]["completions"] = completions
    pod = job["spec"]["template"]["spec"]
    for env in pod["containers"][0]["env"]:
        if env["name"] == "WORKFLOW_ID":
            env["value"] = workflow
    for volume in pod["volumes"]:
        if volume.get("configMap", {}).get("name") == old_name:
            volume["configMap"]["name"] = name
    settings = json.loads(job_config["data"]["config.json"])
    settings["workflow"] = workflow
    settings["variants"] = settings["variants"][:completions]
    job_config["data"]["config.json"] = json.dumps(settings, indent=2, sort_keys=True)
    return job, job_config


def _configs(root: Path, scale: Scale) -> dict[str, dict[str, Any]]:
    """config.json of every Job, by Job name."""
    found = {}
    for completions in scale.completions:
        workload = read_workload(root / workload_file(CLUSTER, workflow_of(scale, completions)))
        for job in workload.jobs:
            name = job["metadata"]["name"]
            found[name] = json.loads(workload.configmaps[name]["data"]["config.json"])
    return found


def _rss_kib(field: str, pid: int | str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise LookupError(field)


def _client(kubeconfig: Path) -> KubeClient:
    return KubeClient(config.new_client_from_config(str(kubeconfig)))  # type: ignore[no-untyped-call]


def _run_all(binaries: Path, cluster: Cluster, root: Path, scratch: Path, scale: Scale) -> None:
    """Apply every size and play its pods until every Job has completed."""
    configs = _configs(root, scale)
    real = measured()

    def rule(pod: Pod) -> Succeed:
        job, index = job_index(pod)
        return Succeed(as_variant(real, configs[job], index), seconds=0)

    kubectl(binaries, cluster, "apply", "--server-side", "-k",
            str(root / cluster_dist(CLUSTER) / INFRASTRUCTURE))  # fmt: skip
    room = json.dumps({"status": {"capacity": ROOM, "allocatable": ROOM}})
    kubectl(binaries, cluster, "patch", "node", node_name("nvidia-h100"),
            "--subresource=status", "--type=merge", "-p", room)  # fmt: skip
    client = _client(cluster.kubeconfig)
    with running_executor(cluster.kubeconfig, scratch / "executor", rule):
        began = time.monotonic()
        for completions in scale.completions:
            path = root / workload_file(CLUSTER, workflow_of(scale, completions))
            kubectl(binaries, cluster, "apply", "--server-side", "-f", str(path))
        total = len(configs)
        while True:
            jobs = client.list_jobs(NAMESPACE, "app=benchfleet").items
            done = sum(job_finished(job) for job in jobs)
            succeeded = sum(job.get("status", {}).get("succeeded", 0) for job in jobs)
            elapsed = time.monotonic() - began
            print(f"  {elapsed:6.0f} s: {done}/{total} Jobs complete, {succeeded} pods succeeded, "
                  f"{_memory(cluster)}", flush=True)  # fmt: skip
            if done == total:
                break
            if elapsed > RUN_TIMEOUT_S:
                raise SystemExit(f"not every Job completed within {RUN_TIMEOUT_S:g} s")
            time.sleep(scale.poll_s)
    print(f"every pod ran and every Job completed in {time.monotonic() - began:.0f} s")


def _memory(cluster: Cluster) -> str:
    """RSS now (and at its peak) of the API server and etcd."""
    parts = []
    for process in cluster.processes:
        if process.name in ("kube-apiserver", "etcd"):
            now, peak = _rss_kib("VmRSS", process.pid), _rss_kib("VmHWM", process.pid)
            parts.append(f"{process.name} {now / 2**20:.2f} GiB (peak {peak / 2**20:.2f})")
    return ", ".join(parts)


def measure(kubeconfig: Path, root: Path, workflow: str, mode: str) -> Measurement:
    """Gather `workflow` into an empty database in this interpreter: `mode` time, heap or top
    (the heap by line at the end of the first step, printed)."""
    client = _client(kubeconfig)
    expected = expected_jobs(root, workflow, CLUSTER)
    on_progress: Callable[[Counts, RunningView | None], None] = lambda *shown: None  # noqa: E731
    if mode == "top":
        on_progress = _print_top
    with tempfile.TemporaryDirectory() as scratch, open_store(Path(scratch) / "db") as store:
        options = GatherOptions(timeout_s=600, record=False)
        gatherer = Gatherer(client, store, root, expected, options=options, on_progress=on_progress)
        baseline = _rss_kib("VmRSS")
        if mode != "time":
            tracemalloc.start()
        began = time.perf_counter()
        stored = gatherer.run().stored_new
        seconds = time.perf_counter() - began
        peak = tracemalloc.get_traced_memory()[1] if mode != "time" else None
        tracemalloc.stop()
    assert stored == sum(job.completions for job in expected), stored
    return Measurement(
        stored, dict(sorted(client.requests.items())), seconds, _rss_kib("VmHWM") - baseline, peak
    )


def _print_top(counts: Counts, running: RunningView | None) -> None:
    if not tracemalloc.is_tracing():
        return
    snapshot = tracemalloc.take_snapshot()
    tracemalloc.stop()
    held = snapshot.statistics("lineno")
    total = sum(stat.size for stat in held)
    print(f"heap held at the end of the first step ({counts}): {total / 2**20:.1f} MiB")
    for stat in held[:TOP_LINES]:
        frame = stat.traceback[0]
        where = f"{os.path.relpath(frame.filename, REPO_ROOT)}:{frame.lineno}"
        print(f"  {stat.size / 2**20:7.1f} MiB {stat.count:>8} blocks  {where}")


def _measured(kubeconfig: Path, root: Path, workflow: str, mode: str) -> Measurement:
    """`measure` in a fresh interpreter, so that no run inherits another's heap or RSS peak."""
    command = [
        sys.executable,
        "-m",
        "bench.cluster_gather_scale",
        "--measure",
        mode,
        "--kubeconfig",
        str(kubeconfig),
        "--root",
        str(root),
        "--workflow",
        workflow,
    ]
    completed = subprocess.run(command, capture_output=True, text=True, check=True, cwd=REPO_ROOT)
    *printed, last = completed.stdout.splitlines()
    if printed:
        print("\n".join(printed))
    return Measurement(**json.loads(last))


def _table(runs: dict[int, list[tuple[Measurement, Measurement]]], scale: Scale) -> None:
    print(f"\nGathering finished variants of {scale.jobs} Jobs into an empty database, "
          f"{scale.rounds} interleaved rounds (medians)")  # fmt: skip
    print(f"{'variants':>8} {'jobs':>5} {'requests':>9} {'s':>7} {'s/1k':>6} "
          f"{'heap MiB':>9} {'KiB/var':>8} {'RSS+ MiB':>9}  requests by kind")  # fmt: skip
    for variants, pairs in runs.items():
        timed = [t for t, _ in pairs]
        heap = statistics.median(h.heap_peak_bytes or 0 for _, h in pairs)
        seconds = statistics.median(t.seconds for t in timed)
        rss = statistics.median(t.rss_growth_kib for t in timed)
        print(
            f"{variants:>8} {scale.jobs:>5} {sum(timed[0].requests.values()):>9} {seconds:>7.2f} "
            f"{seconds / variants * 1000:>6.2f} {heap / 2**20:>9.1f} "
            f"{heap / 1024 / variants:>8.1f} {rss / 1024:>9.1f}  {timed[0].requests}"
        )


def _page_sizes(kubeconfig: Path, workflow: str, page_sizes: tuple[int, ...]) -> None:
    print(f"\nListing the {workflow} pods alone, by page size (limit)")
    for page_size in page_sizes:
        client = _client(kubeconfig)
        began = time.perf_counter()
        listed = client.list_pods(NAMESPACE, label_selector(workflow), page_size=page_size)
        seconds = time.perf_counter() - began
        print(f"  limit {page_size:>5}: {len(listed.items)} pods, "
              f"{client.requests['list pods']} requests, {seconds:.2f} s")  # fmt: skip


def main(scale: Scale) -> None:
    if not is_built():
        raise SystemExit("the local cluster is not built: run `make cluster-build` first")
    binaries = binary_dir()
    fleet = load_specs(REPO_ROOT).fleet
    with tempfile.TemporaryDirectory() as scratch:
        root = _repo(Path(scratch) / "repo", scale)
        cluster = start_cluster(
            CLUSTER, Path(scratch) / "cluster", binaries, fleet,
            controller_manager_flags=CONTROLLER_MANAGER_FLAGS,
        )  # fmt: skip
        try:
            _run_all(binaries, cluster, root, Path(scratch), scale)
            runs: dict[int, list[tuple[Measurement, Measurement]]] = {
                scale.jobs * c: [] for c in scale.completions
            }
            for _ in range(scale.rounds):
                for completions in scale.completions:
                    workflow = workflow_of(scale, completions)
                    runs[scale.jobs * completions].append(
                        (
                            _measured(cluster.kubeconfig, root, workflow, "time"),
                            _measured(cluster.kubeconfig, root, workflow, "heap"),
                        )
                    )
            _table(runs, scale)
            largest = workflow_of(scale, scale.completions[-1])
            print()
            _measured(cluster.kubeconfig, root, largest, "top")
            _page_sizes(cluster.kubeconfig, largest, scale.page_sizes)
            print(f"\nafter gathering: {_memory(cluster)}")
        finally:
            cluster.stop()


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--measure", choices=("time", "heap", "top"), help=argparse.SUPPRESS)
    parser.add_argument("--kubeconfig", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--workflow", help=argparse.SUPPRESS)
    parser.add_argument("--smoke", action="store_true", help="2 Jobs of 2 and 3, one round")
    return parser.parse_args()


if __name__ == "__main__":
    arguments = _arguments()
    if arguments.measure is None:
        main(SMOKE if arguments.smoke else FULL)
    else:
        gathered = measure(arguments.kubeconfig, arguments.root, arguments.workflow,
                           arguments.measure)  # fmt: skip
        print(json.dumps(vars(gathered)))
