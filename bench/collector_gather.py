"""Gathering 1000 finished variants: `collector gather`'s list + watch against the per-Job loop
of the design note (wait for the Job, list its pods, read the log, delete the Job).

    python -m bench.collector_gather

Both talk through the real `kubernetes` client and the collector's KubeClient to the stand-in
API server of the tests (standin/api.py, in this process), and both store every
result in SQLite, so what differs is the shape of the conversation:
- gather: one Indexed Job of 1000 completions; a list and a watch of Jobs and of pods, results
  read from the pods' termination messages;
- per-Job loop: 1000 one-pod Jobs; per Job a status check (a list filtered to that Job), a
  list of its pods, its log, and a delete.
Each side runs on a fresh server holding the same finished objects, alternately (A B A B),
and the table reports medians, the per-pair ratio with its range, the API requests made and
the peak of Python's heap (tracemalloc; the server's objects are in it on both sides).
Every pod hands over a real runner's result (bench/real_results.py), samples and all.
`--smoke` gathers 20 variants once, for the test-suite (tests/bench/).
"""

import argparse
import copy
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bench.real_results import measured
from collector.gather import Gatherer, GatherOptions
from collector.kube import KubeClient
from collector.pods import read_result
from collector.workload import expected_from
from contract.records import JobIdentity, StoredVariant
from contract.result import OkResult
from localcluster.results import as_variant
from standin import objects
from standin.api import FakeApiServer
from store.database import open_store

VARIANTS: Final = 1000
ROUNDS: Final = 3
SMOKE_VARIANTS: Final = 20
NAMESPACE: Final = "benchfleet-dev"
Obj = dict[str, Any]


@dataclass(frozen=True)
class Run:
    """One side's measurement."""

    seconds: float
    requests: int
    peak_heap_bytes: int
    stored: int


def _indexed_job(variants: int, real: OkResult) -> tuple[Obj, list[Obj], list[str]]:
    template = objects.job("cpu-smoke", cluster="us-east")
    template["spec"]["completions"] = variants
    job = objects.complete(template)
    # The example Job has six variants; each pod reports one of them, which is all a result
    # needs to be read and stored.
    config = objects.run_config(template).model_dump(mode="json")
    results = [as_variant(real, config, i) for i in range(6)]
    pods = [objects.succeeded_pod(template, i, results[i % 6]) for i in range(variants)]
    logs = [objects.runner_log(template, i, results[i]) for i in range(6)]
    return job, pods, logs


def _per_job_objects(job: Obj, pods: list[Obj]) -> list[tuple[Obj, Obj]]:
    """One-pod Jobs made from the Indexed one, each with one of its pods."""
    pairs = []
    for index, pod in enumerate(pods):
        single = copy.deepcopy(job)
        name = f"cpu-smoke-single-{index:04d}"
        single["metadata"]["name"] = name
        single["metadata"]["labels"]["job"] = name
        single["spec"]["completions"] = 1
        single = objects.complete(single)
        own = copy.deepcopy(pod)
        own["metadata"]["labels"]["batch.kubernetes.io/job-name"] = name
        own["metadata"]["labels"]["job"] = name
        pairs.append((single, own))
    return pairs


def _measure(load: Callable[[FakeApiServer], None], side: Callable[[KubeClient, Path], int]) -> Run:
    with FakeApiServer() as api, tempfile.TemporaryDirectory() as scratch:
        load(api)
        client = KubeClient(api.client())
        tracemalloc.start()
        began = time.perf_counter()
        stored = side(client, Path(scratch))
        seconds = time.perf_counter() - began
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return Run(seconds, sum(client.requests.values()), peak, stored)


def _gather(job: Obj) -> Callable[[KubeClient, Path], int]:
    def side(client: KubeClient, root: Path) -> int:
        expected = [expected_from("us-east", job)]
        with open_store(root / "results.sqlite") as store:
            gatherer = Gatherer(client, store, root, expected, options=GatherOptions(timeout_s=120))
            return gatherer.run().stored_new

    return side


def _per_job_loop(pairs: list[tuple[Obj, Obj]]) -> Callable[[KubeClient, Path], int]:
    def side(client: KubeClient, root: Path) -> int:
        stored = 0
        with open_store(root / "results.sqlite") as store:
            for job, _ in pairs:
                name = job["metadata"]["name"]
                (current,) = client.list_jobs(NAMESPACE, f"job={name}").items
                assert current["status"].get("succeeded") == 1
                (pod,) = client.list_pods(NAMESPACE, f"batch.kubernetes.io/job-name={name}").items
                log = client.pod_log(NAMESPACE, pod["metadata"]["name"], "runner")
                reading = read_result(pod, log)
                identity = JobIdentity(
                    workflow="cpu-smoke",
                    cluster="us-east",
                    namespace=NAMESPACE,
                    job=name,
                    target="cpu",
                    spec_file=None,
                    spec_sha256=None,
                    image=None,
                )
                variant = StoredVariant(
                    index=0, state="succeeded", explanation="ok", result=reading.result
                )
                stored += store.add(identity, [variant]).new
                client.delete_job(NAMESPACE, name)
        return stored

    return side


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.collector_gather", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE_VARIANTS} variants, once")
    smoke = parser.parse_args().smoke
    variants, rounds = (SMOKE_VARIANTS, 1) if smoke else (VARIANTS, ROUNDS)
    job, pods, logs = _indexed_job(variants, measured())
    pairs = _per_job_objects(job, pods)

    def load_indexed(api: FakeApiServer) -> None:
        api.add("jobs", job)
        for pod in pods:
            api.add("pods", pod)

    def load_singles(api: FakeApiServer) -> None:
        for index, (single, pod) in enumerate(pairs):
            api.add("jobs", single)
            api.add("pods", pod)
            # The design note reads results from the logs.
            api.set_log(NAMESPACE, pod["metadata"]["name"], "runner", logs[index % 6])

    gathers, loops = [], []
    for _ in range(rounds):
        gathers.append(_measure(load_indexed, _gather(job)))
        loops.append(_measure(load_singles, _per_job_loop(pairs)))
    ratios = [g.seconds / loop.seconds for g, loop in zip(gathers, loops, strict=True)]
    print(f"Gathering {variants} finished variants, {rounds} interleaved rounds")
    print(f"{'side':<24} {'median s':>9} {'requests':>9} {'peak heap MiB':>14} {'stored':>7}")
    for name, runs in (("gather (list + watch)", gathers), ("per-Job loop", loops)):
        print(
            f"{name:<24} {statistics.median(r.seconds for r in runs):>9.2f} "
            f"{runs[0].requests:>9} {max(r.peak_heap_bytes for r in runs) / 2**20:>14.1f} "
            f"{runs[0].stored:>7}"
        )
    print(
        f"gather / per-Job loop wall time: {statistics.median(ratios):.3f} "
        f"(range {min(ratios):.3f}-{max(ratios):.3f})"
    )


if __name__ == "__main__":
    main()
