"""Gathering grouped variants whole from the lake against today's path, the pods' logs.

    eval "$(make -s lake)"; python -m bench.lake_gather [--variants 2400] [--rounds 3] [--smoke]

Needs a lake server: `make lake` and export its lines (AWS_ENDPOINT_URL, the AWS keys,
BENCHFLEET_LAKE). One Indexed Job of `--variants` finished variants in pods of 24 (the most
whose stubs keep their digests in a termination message: docs/runner.md), each result a
real runner's measurement (bench/real_results.py, samples and all) under its own variant,
written to the lake once as the runner writes it (runner/lake.py) under a fresh prefix, and
on its pod's log lines. Both sides gather the same pods from a fresh stand-in API server
(standin/api.py, in this process) into a fresh database, alternately (A B A B):
- lake: `Gatherer` with a LakeReader: every result read whole from its object, no log;
- logs: `Gatherer` without: a log read a pod, as before the lake (the message holds stubs).
The table gives medians, the per-pair ratio with its range, API requests, lake GETs, and the
peak of Python's heap (tracemalloc; the server's objects are in it on both sides).
"""

import argparse
import os
import statistics
import tempfile
import time
import tracemalloc
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

from bench.real_results import measured
from collector.gather import Gatherer, GatherOptions
from collector.kube import KubeClient
from collector.lakeread import LIMITS, LakeReader
from collector.workload import ExpectedJob, expected_from
from contract.lake import LAKE_ENV, LakeUrl, parse_lake_url
from contract.objectstore import ObjectStore
from contract.result import BenchResult, OkResult, result_line
from localcluster.results import as_variant
from runner.lake import Attempt, ResultLake
from standin import objects
from standin.api import FakeApiServer
from store.database import open_store

GROUP: Final = 24
NAMESPACE: Final = "benchfleet-dev"
Obj = dict[str, Any]


@dataclass(frozen=True)
class Run:
    """One side's measurement."""

    seconds: float
    requests: int
    log_reads: int
    lake_reads: int
    peak_heap_bytes: int
    from_lake: int


@dataclass(frozen=True)
class Workload:
    """The finished Job, its pods and their logs, and what gather expects of it."""

    job: Obj
    pods: list[Obj]
    logs: dict[str, str]
    expected: ExpectedJob


def _as_position(result: BenchResult, position: int) -> BenchResult:
    """`result` as the variant at `position` of a Job larger than cpu-smoke's six."""
    assert result.variant is not None
    variant = result.variant.model_copy(update={"index": position, "id": f"v{position:012x}"})
    return result.model_copy(update={"variant": variant})


def _workload(variants: int, real: OkResult, lake: LakeUrl, store: ObjectStore) -> Workload:
    template = objects.job("cpu-smoke", cluster="us-east")
    pods_needed = -(-variants // GROUP)
    template["spec"]["completions"] = pods_needed
    name = str(template["metadata"]["name"])
    config = objects.run_config(template).model_dump(mode="json")
    groups = {
        i: tuple(range(i * GROUP, min((i + 1) * GROUP, variants))) for i in range(pods_needed)
    }
    pods, logs = [], {}
    for index, positions in groups.items():
        pod = str(objects.pod(template, index)["metadata"]["name"])
        writer = ResultLake(
            Attempt(lake, "cpu-smoke", "us-east", name, pod), lambda: store.put_once
        )
        results = [
            writer.store(_as_position(as_variant(real, config, p % 6), p)) for p in positions
        ]
        pods.append(objects.group_pod(template, index, results))
        logs[pod] = objects.starting_log(template, 0) + "".join(map(result_line, results))
    expected = replace(expected_from("us-east", template), variants={}, groups=groups)
    return Workload(objects.complete(template), pods, logs, expected)


def _measure(workload: Workload, reader: LakeReader | None) -> Run:
    with FakeApiServer() as api, tempfile.TemporaryDirectory() as scratch:
        api.add("jobs", workload.job)
        for pod in workload.pods:
            api.add("pods", pod)
        for pod_name, text in workload.logs.items():
            api.set_log(NAMESPACE, pod_name, "runner", text)
        client = KubeClient(api.client())
        root = Path(scratch)
        options = GatherOptions(timeout_s=600, wait=False, record=False)
        tracemalloc.start()
        began = time.perf_counter()
        with open_store(root / "results.sqlite") as db:
            outcome = Gatherer(
                client, db, root, [workload.expected], options=options, lake=reader
            ).run()
        seconds = time.perf_counter() - began
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert outcome.stored_new == workload.expected.variant_count, outcome
        return Run(
            seconds,
            sum(client.requests.values()),
            sum(n for key, n in client.requests.items() if "log" in key),
            reader.reads if reader else 0,
            peak,
            outcome.lake.read,
        )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.lake_gather", description=__doc__)
    parser.add_argument("--variants", type=int, default=2400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="48 variants, one round")
    arguments = parser.parse_args()
    if arguments.smoke:
        arguments.variants, arguments.rounds = 2 * GROUP, 1
    base = parse_lake_url(os.environ[LAKE_ENV])
    lake = LakeUrl(bucket=base.bucket, prefix=base.key(f"bench-{uuid.uuid4().hex[:8]}"))
    store = ObjectStore.for_lake(lake)
    began = time.perf_counter()
    workload = _workload(arguments.variants, measured(), lake, store)
    print(f"wrote {arguments.variants} objects in {time.perf_counter() - began:.1f} s")
    lakes, logs = [], []
    for _ in range(arguments.rounds):
        lakes.append(
            _measure(workload, LakeReader(lake, ObjectStore.for_lake(lake, limits=LIMITS)))
        )
        logs.append(_measure(workload, None))
    ratios = [a.seconds / b.seconds for a, b in zip(lakes, logs, strict=True)]
    print(
        f"Gathering {arguments.variants} variants in pods of {GROUP}, "
        f"{arguments.rounds} interleaved rounds"
    )
    print(
        f"{'side':<6} {'median s':>9} {'API req':>8} {'logs':>5} {'lake GETs':>10} "
        f"{'peak heap MiB':>14} {'from lake':>10}"
    )
    for name, runs in (("lake", lakes), ("logs", logs)):
        first = runs[0]
        print(
            f"{name:<6} {statistics.median(r.seconds for r in runs):>9.2f} {first.requests:>8} "
            f"{first.log_reads:>5} {first.lake_reads:>10} "
            f"{max(r.peak_heap_bytes for r in runs) / 2**20:>14.1f} {first.from_lake:>10}"
        )
    print(
        f"lake / logs wall time: {statistics.median(ratios):.3f} "
        f"(range {min(ratios):.3f}-{max(ratios):.3f})"
    )


if __name__ == "__main__":
    main()
