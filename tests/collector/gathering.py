"""What the collector's end-to-end tests share: the checkout's paths, a kubeconfig for the
stand-in, and readers of what gather wrote (the fixtures are in conftest.py)."""

import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from click.testing import Result

from contract.layout import record_path
from standin import objects
from standin.api import FakeApiServer

WORKLOAD = Path("dist", "us-east", "workloads", "cpu-smoke.yaml")
NAMESPACES = Path("dist", "us-east", "infrastructure", "namespaces.yaml")
NAMESPACE = "benchfleet-dev"

Obj = dict[str, Any]


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
