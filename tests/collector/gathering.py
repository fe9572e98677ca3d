"""What the collector's end-to-end tests share: the checkout's paths, a kubeconfig for the
stand-in, and readers of what gather wrote (the fixtures are in conftest.py)."""

import copy
import sqlite3
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from click.testing import Result

from collector.gather import Gatherer, GatherOptions, GatherOutcome
from collector.kube import KubeClient
from collector.workload import ExpectedJob, expected_from
from contract.layout import record_path
from standin import objects
from standin.api import FakeApiServer
from store.database import Store

WORKLOAD = Path("dist", "us-east", "workloads", "cpu-smoke.yaml")
NAMESPACES = Path("dist", "us-east", "infrastructure", "namespaces.yaml")
NAMESPACE = "benchfleet-dev"

Obj = dict[str, Any]
GROUPS = ((0, 1, 2), (3, 4, 5))
"""cpu-smoke's six variants as two pods of three."""


def grouped_job(groups: tuple[tuple[int, ...], ...] = GROUPS) -> tuple[Obj, ExpectedJob]:
    """cpu-smoke's Job with its six variants in `groups`, as gather expects it."""
    job = copy.deepcopy(objects.job("cpu-smoke", cluster="us-east"))
    job["spec"]["completions"] = len(groups)
    config = objects.run_config(job).model_copy(update={"groups": groups})
    return job, expected_from("us-east", job, config.model_dump_json())


def stopped_mid_group(api: FakeApiServer, job: Obj) -> tuple[Obj, Obj]:
    """`job` (grouped_job's) running, its index 1 done and index 0's first attempt OOMKilled
    after measuring variants 0 and 1: the Job and that attempt's pod, as added to `api`."""
    running = api.add("jobs", objects.job_status(job, active=1, completed=[1]))
    first = objects.group_pod(
        job,
        0,
        [objects.ok_result(job, 0), objects.ok_result(job, 1)],
        exit_code=137,
        reason="OOMKilled",
    )
    api.add("pods", first)
    api.add("pods", objects.group_pod(job, 1, [objects.ok_result(job, i) for i in GROUPS[1]]))
    return running, first


def gather_once(
    api: FakeApiServer, store: Store, root: Path, expected: ExpectedJob
) -> GatherOutcome:
    """One gather that looks once (no watch), as `collector gather --no-wait --keep` does."""
    options = GatherOptions(timeout_s=30, wait=False, record=False)
    return Gatherer(KubeClient(api.client()), store, root, [expected], options=options).run()


def older_revision(job: Obj, name: str = "cpu-smoke-cpu-0f1d2e3c4b") -> Obj:
    """`job` as an older spec revision made it: another name (and uid), which dist/ no longer
    holds; its pods mount the same config.json."""
    old = copy.deepcopy(job)
    uid = f"0f1d2e3c-0000-4000-8000-{len(name):012d}"
    old["metadata"].update(name=name, uid=uid)
    old["metadata"]["labels"]["job"] = name
    labels = old["spec"]["template"]["metadata"]["labels"]
    for key in ("job", "job-name", "batch.kubernetes.io/job-name"):
        labels[key] = name
    for key in ("controller-uid", "batch.kubernetes.io/controller-uid"):
        labels[key] = uid
    old["spec"]["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    return old


def kubeconfig(server: str) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "us-east", "cluster": {"server": server}}],
            "users": [{"name": "collector", "user": {"token": "t0ken"}}],
            "contexts": [
                {"name": "us-east", "context": {"cluster": "us-east", "user": "collector"}}
            ],
            "current-context": "us-east",
        }
    )


Collect = Callable[..., Result]
COLLECTOR = [sys.executable, "-c", "from benchfleet.collector import cli; cli()"]
"""The `collector` command, run as a process of its own."""


def rows(repo: Path) -> list[tuple[int, str, str | None]]:
    with sqlite3.connect(repo / ".benchfleet" / "results.sqlite") as db:
        query = "SELECT job_index, state, result_source FROM variant_runs ORDER BY job_index"
        return list(db.execute(query))


def record_of(repo: Path, job: Obj) -> Path:
    return record_path(repo, "cpu-smoke", "us-east", job["metadata"]["name"])


def requests(api: FakeApiServer) -> Counter[str]:
    return Counter(
        f"{'watch' if r.is_watch else r.method} {r.path.rsplit('/', 1)[-1]}" for r in api.requests
    )


def finish_all(api: FakeApiServer, job: Obj) -> None:
    for index in range(6):
        api.add("pods", objects.succeeded_pod(job, index))
    api.add("jobs", objects.complete(job))
