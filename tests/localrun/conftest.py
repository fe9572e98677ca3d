"""Fixtures of the localrun tests: dist/'s cpu-smoke workflow, its config.json edited (shorter
measurement windows, so that a pod takes about as long as importing torch), in a repository
of its own, and what a try stored there."""

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO_ROOT

SMOKE = REPO_ROOT / "dist" / "us-east" / "workloads" / "cpu-smoke.yaml"
DATABASE = Path(".benchfleet", "results.sqlite")
QUICK_PHASE = {"min_iterations": 3, "min_time_s": 0.0, "max_iterations": 5, "max_time_s": 5.0}

EditConfig = Callable[[dict[str, Any]], None]


def quick(config: dict[str, Any]) -> None:
    config["warmup"] = config["measure"] = QUICK_PHASE


@pytest.fixture
def make_root(tmp_path: Path) -> Callable[[EditConfig], Path]:
    """A repository root whose dist/ holds cpu-smoke with its config.json edited."""

    def make(edit: EditConfig) -> Path:
        documents = list(yaml.safe_load_all(SMOKE.read_text(encoding="utf-8")))
        for document in documents:
            if document and document["kind"] == "ConfigMap" and "data" in document:
                config = json.loads(document["data"]["config.json"])
                edit(config)
                document["data"]["config.json"] = json.dumps(config)
        target = tmp_path / "repo" / "dist" / "us-east" / "workloads" / SMOKE.name
        target.parent.mkdir(parents=True)
        target.write_text(yaml.safe_dump_all(documents), encoding="utf-8")
        return tmp_path / "repo"

    return make


@pytest.fixture
def quick_root(make_root: Callable[[EditConfig], Path]) -> Path:
    return make_root(quick)


def stored(root: Path) -> list[tuple[str, int, str, float | None]]:
    with sqlite3.connect(root / DATABASE) as db:
        query = (
            "SELECT cluster, job_index, state, json_extract(result_json, '$.latency.p50_ms') "
            "FROM variant_runs ORDER BY job_index"
        )
        return list(db.execute(query))
