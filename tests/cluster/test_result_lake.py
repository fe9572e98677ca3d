"""#35's "Done when", through the cluster harness: a fleet whose results store is the real S3
server (SeaweedFS on loopback, tests/lakeserver.py), a workflow of 24 variants in groups of
six run by the real runner in the executor's pods, each writing its variants' whole results
to the store with the credentials the pod executor reads from the namespace's Secret, as a
kubelet does. `collector gather` takes every whole result from the store the fleet names,
with no log read (the collector's own count of its API requests), and every sample is
stored; once the Job is deleted as Flux prunes it, the samples are still in the local store
and in the lake, and `collector sync` publishes every one of them there. A second machine's
collector (a root of its own) gathers the same Job at the same time and syncs it without a
second copy; a third, a clone with no database, reports it from the lake as the first does.
"""

import ast
import io
import json
import os
import re
import secrets
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from benchfleet.collector import cli as collector_cli
from contract.lake import (
    CREDENTIAL_KEYS,
    ENDPOINT_ENV,
    LAKE_ENV,
    RESULT_SUFFIX,
    raw_prefix,
    runs_prefix,
)
from contract.layout import STORE_DIR
from contract.objectstore import Listed
from contract.options import DEFAULT_DATABASE
from contract.result import OkResult, parse_result
from localcluster.podexecutor import TERMINATION_MESSAGE_LIMIT
from store.database import open_store
from store.published import EXTENSIONS
from tests.cluster.conftest import NAMESPACE, LiveCluster, Repo, job_condition, wait_for
from tests.collector.gathering import COLLECTOR
from tests.lake.fleet import reported_alike
from tests.lakeserver import Lake

pytestmark = pytest.mark.cluster

WORKFLOW = "e2e-result-lake"
VARIANTS = 24
PER_POD = 6
SPEC = f"""\
id: {WORKFLOW}
description: 24 short CPU variants of tiny-mlp, six a pod, each result whole in the lake
owner: ml-platform@example.com
clusters: [us-east]
models: [{{name: tiny-mlp, file: models/examples/tiny-mlp.pt2, inputs: [{{shape: [64]}}]}}]
benchmark:
  warmup: {{min_iterations: 1, min_time: 0s}}
  measure: {{min_iterations: 20, min_time: 0s, max_time: 1s}}
targets:
  - gpu_type: cpu
    resources: {{requests: {{cpu: 1, memory: 1Gi}}, limits: {{cpu: 1, memory: 1Gi}}}}
sweep:
  matrix:
    batch_size: {list(range(1, VARIANTS + 1))}
scheduling:
  variants_per_pod: {PER_POD}
"""


def _store_fleet(repo: Repo, lake: Lake, secret: str) -> None:
    """The repository's fleet with a results store for every cluster: the session's server."""
    fleet = repo.root / "specs" / "clusters.yaml"
    store = {
        "url": str(lake.url),
        "endpoint": lake.server.endpoint,
        "region": "us-east-1",
        "credentials_secret": secret,
        "endpoint_cidrs": ["127.0.0.1/32"],
    }
    text = fleet.read_text(encoding="utf-8") + f"results_store: {json.dumps(store)}\n"
    fleet.write_text(text, encoding="utf-8")


@pytest.fixture
def credentials(live: LiveCluster, lake: Lake) -> Iterator[str]:
    """The namespace's Secret of the store's credentials: the workflow's writer, which may
    write only under the lake's raw/<workflow>/. Deleted afterwards."""
    name = f"lake-{secrets.token_hex(4)}"
    writer = lake.server.env(lake.writer_for(WORKFLOW))
    live.apply_secret(NAMESPACE, name, {key: writer[key] for key in CREDENTIAL_KEYS})
    yield name
    live.run("delete", "secret", name, "-n", NAMESPACE)


def _gather_arguments(root: Path) -> list[str]:
    """`collector gather` of the workflow, with no progress shown, since that reads the
    running pods' log tails: then any log read is one for a result."""
    return ["--root", str(root), "gather", "--workflow", WORKFLOW, "--cluster", "us-east",
            "--timeout", "8m", "--no-progress"]  # fmt: skip


def _gather_env(lake: Lake, kubeconfig: str) -> dict[str, str | None]:
    """Reading the store the fleet names (its URL and endpoint: no `--lake`, no
    `AWS_ENDPOINT_URL`) with the admin's keys, a reader's."""
    admin = lake.server.env()
    return {
        "BENCHFLEET_K8S_KUBECONFIG": kubeconfig,
        "KUBECONFIG": "/nonexistent",
        ENDPOINT_ENV: None,
        LAKE_ENV: None,
        **{key: admin[key] for key in CREDENTIAL_KEYS},
    }


def _gather(repo: Repo, lake: Lake, kubeconfig: str) -> Result:
    return CliRunner().invoke(
        collector_cli, _gather_arguments(repo.root), env=_gather_env(lake, kubeconfig)
    )


def _other_machine(repo: Repo, lake: Lake, kubeconfig: str, root: Path) -> subprocess.Popen[str]:
    """A second machine's collector: a checkout of its own at `root` (its own SQLite), its
    gather of the same workflow started now, as a process beside this one."""
    shutil.copytree(repo.root, root, symlinks=True)
    env = {**os.environ, **_gather_env(lake, kubeconfig)}
    return subprocess.Popen(
        [*COLLECTOR, *_gather_arguments(root)],
        env={name: value for name, value in env.items() if value is not None},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _collector(root: Path, lake: Lake, *arguments: str) -> Result:
    return CliRunner().invoke(collector_cli, ["--root", str(root), *arguments], env=lake.env())


def _api_requests(result: Result) -> dict[str, int]:
    """The collector's own count of its API requests, by kind, from its summary line."""
    found = re.search(r"us-east: API requests (\{[^}]*\})", result.output)
    assert found, result.output
    counted: dict[str, int] = ast.literal_eval(found.group(1))
    return counted


def _lake_results(lake: Lake) -> dict[str, tuple[OkResult, Listed]]:
    """Every whole result the runners wrote, by variant id, with its object's key and size."""
    store = lake.store()
    found: dict[str, tuple[OkResult, Listed]] = {}
    for listed in store.list(raw_prefix(lake.url, WORKFLOW)):
        assert listed.key.endswith(RESULT_SUFFIX), listed.key
        result = parse_result(store.get(listed.key, listed.bytes).decode())
        assert isinstance(result, OkResult) and result.variant is not None, listed.key
        found[result.variant.id] = (result, listed)
    return found


def _published_samples(lake: Lake, job: str) -> dict[str, list[int]]:
    """Each variant's sample durations in the Job's published samples table, in order."""
    store = lake.store()
    (listed,) = [
        found
        for found in store.list(runs_prefix(lake.url, WORKFLOW, "us-east"))
        if found.key.endswith(f"/{job}.samples.parquet")
    ]
    table = pq.read_table(io.BytesIO(store.get(listed.key, listed.bytes))).to_pylist()
    samples: dict[str, list[int]] = {}
    for row in sorted(table, key=lambda row: (row["variant_id"], row["iteration"])):
        samples.setdefault(row["variant_id"], []).append(row["duration_ns"])
    return samples


def _reports_alike(first: Path, third: Path, lake: Lake) -> None:
    """A third machine, a clone of the repository (its specs and prices, dist/, results/)
    with no database, reports every run from the lake as the first one does."""
    shutil.copytree(first, third, symlinks=True, ignore=shutil.ignore_patterns(STORE_DIR))
    reported_alike(first, third, lake, WORKFLOW)


def _published_files(lake: Lake) -> dict[str, bytes]:
    """Every published file of the workflow, by key."""
    store = lake.store()
    return {
        listed.key: store.get(listed.key, listed.bytes)
        for listed in store.list(runs_prefix(lake.url, WORKFLOW))
    }


def _stored_samples(repo: Repo) -> dict[str, Any]:
    with open_store(repo.root / DEFAULT_DATABASE) as store:
        runs = store.runs(WORKFLOW)
        unread = store.samples_unread(WORKFLOW)
    assert unread == [], "no sample is left for `collector samples`"
    return {
        run.variant.result.variant.id: (run.variant.result_source, run.variant.result.samples)
        for run in runs
        if isinstance(run.variant.result, OkResult) and run.variant.result.variant is not None
    }


def test_grouped_whole_results_are_gathered_from_the_lake_and_outlive_the_job(
    live: LiveCluster,
    repo: Repo,
    lake: Lake,
    credentials: str,
    collector_kubeconfig: str,
    tmp_path: Path,
) -> None:
    _store_fleet(repo, lake, credentials)
    repo.write_workflow(WORKFLOW, SPEC)
    repo.synth()
    (job,) = repo.job_names(WORKFLOW)
    assert len(repo.config(WORKFLOW, job)["groups"]) == VARIANTS // PER_POD
    live.kubectl("apply", "--server-side", "-f", str(repo.workload(WORKFLOW)))

    other = _other_machine(repo, lake, collector_kubeconfig, tmp_path / "other")
    gathered = _gather(repo, lake, collector_kubeconfig)
    other_said = other.communicate(timeout=600)
    assert other.returncode == 0, other_said
    assert gathered.exit_code == 0, gathered.output
    assert f"stored {VARIANTS} variant runs (0 were stored before)" in other_said[0]
    assert f"stored {VARIANTS} variant runs (0 were stored before)" in gathered.output
    assert job_condition(live, job) == "Complete"
    requests = _api_requests(gathered)
    assert not {kind for kind in requests if "log" in kind}, requests
    assert f"lake objects read {VARIANTS}" in gathered.output

    written = _lake_results(lake)
    assert len(written) == VARIANTS
    # Real results larger than a termination message: each pod's six whole results are
    # compacted in its message, so before the lake every pod took a log read.
    per_pod: Counter[str] = Counter()
    for _, listed in written.values():
        per_pod[PurePosixPath(listed.key).stem] += listed.bytes
    assert len(per_pod) == VARIANTS // PER_POD
    assert min(per_pod.values()) > TERMINATION_MESSAGE_LIMIT, per_pod
    stored = _stored_samples(repo)
    assert stored == {variant: ("lake", result.samples) for variant, (result, _) in written.items()}
    assert all(result.samples for result, _ in written.values())

    # Flux prunes a recorded Job with its pods (background deletion): their logs and
    # termination messages go with them.
    live.kubectl("delete", "job", job, "-n", NAMESPACE, "--cascade=background")
    wait_for("the Job's pods to go", lambda: not live.pods(f"job={job}"))
    assert _stored_samples(repo) == stored
    assert {v: r.samples for v, (r, _) in _lake_results(lake).items()} == {
        v: r.samples for v, (r, _) in written.items()
    }
    again = _gather(repo, lake, collector_kubeconfig)
    assert again.exit_code == 0, again.output
    assert f"nothing new to gather of {WORKFLOW}" in again.output

    # Published after the prune, from the store alone: every sample in the lake's runs too.
    # The second machine's sync finds the same run there and publishes nothing twice.
    synced = _collector(repo.root, lake, "sync", "--lake", str(lake.url))
    assert synced.exit_code == 0, synced.output
    assert "published 1 Job, 0 there already" in synced.output
    assert _published_samples(lake, job) == {
        variant: result.samples.durations_ns()
        for variant, (result, _) in written.items()
        if result.samples is not None
    }
    published = _published_files(lake)
    assert len(published) == len(EXTENSIONS), published  # the Job's files, one a format
    synced = _collector(tmp_path / "other", lake, "sync", "--lake", str(lake.url))
    assert synced.exit_code == 0, synced.output
    # Its copy is the same run: byte for byte where both gathered within the same second
    # (put once, the same bytes), else the same content under other gather times.
    assert re.search(r"published (1 Job, 0|0 Jobs, 1) there already", synced.output), synced
    assert _published_files(lake) == published

    _reports_alike(repo.root, tmp_path / "third", lake)
