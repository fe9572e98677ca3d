"""`collector gather` taking each variant's whole result from the lake: the real S3 server
(SeaweedFS on loopback, tests/lakeserver.py), each object written as the runner writes it
(runner/lake.py, with a workflow's prefix-scoped writer identity), pods and logs from the
stand-in API. Every fault falls back to the pod's copy, stores once, and says what
happened per variant."""

import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from collector.gather import Gatherer, GatherOptions, GatherOutcome
from collector.kube import KubeClient
from collector.lakeread import LIMITS, LakeReader
from collector.pods import message_reading
from collector.workload import ExpectedJob
from contract.lake import (
    ACCESS_KEY_ENV,
    ENDPOINT_ENV,
    LAKE_ENV,
    SECRET_KEY_ENV,
    StoredObject,
    raw_key,
    sha256_of,
)
from contract.objectstore import Limits
from contract.result import (
    RESULT_SCHEMA_VERSION,
    BenchResult,
    OkResult,
    result_json,
    result_line,
)
from localcluster.lake import Identity
from runner.lake import Attempt, ResultLake
from standin import objects
from standin.api import FakeApiServer
from store.database import Store, open_store
from tests.collector.gathering import (
    COLLECTOR,
    GROUPS,
    NAMESPACE,
    Collect,
    Obj,
    grouped_job,
    kubeconfig,
    requests,
    rows,
)
from tests.lakeserver import Lake

Odd = Callable[[Lake, Obj, int, BenchResult], BenchResult]
"""Writes index 0's object otherwise than the runner would, and the result its termination
message then holds."""

WORKFLOW = "cpu-smoke"
CLUSTER = "us-east"
QUICK = Limits(connect_s=1.0, read_s=2.0, attempts=1)
"""One short attempt: a test of a hanging store need not wait out gather's own limits."""


def _pod_name(job: Obj, index: int) -> str:
    return str(objects.pod(job, index)["metadata"]["name"])


def _written(lake: Lake, job: Obj, index: int, results: list[BenchResult]) -> list[BenchResult]:
    """`results` written to the lake as the runner of `job`'s pod at `index` writes them
    (its workflow's writer identity), each with its reference (`stored`)."""
    store = lake.store(lake.writer_for(WORKFLOW))
    name = str(job["metadata"]["name"])
    attempt = Attempt(lake.url, WORKFLOW, CLUSTER, name, _pod_name(job, index))
    writer = ResultLake(attempt, lambda: store.put_once)
    return [writer.store(result) for result in results]


def _log(job: Obj, index: int, results: list[BenchResult]) -> str:
    return objects.starting_log(job, index) + "".join(result_line(r) for r in results)


def _finished_groups(
    api: FakeApiServer, lake: Lake, groups: tuple[tuple[int, ...], ...] = GROUPS
) -> tuple[Obj, ExpectedJob, list[list[BenchResult]]]:
    """grouped_job's pods (two of three variants by default), finished, each result written
    to the lake and on its log's lines: a group of three whole results is compacted in its
    termination message, so that before the lake, each pod took a log read."""
    job, expected = grouped_job(groups)
    handed: list[list[BenchResult]] = []
    for index, group in enumerate(groups):
        results = _written(lake, job, index, [objects.ok_result(job, i) for i in group])
        pod = objects.group_pod(job, index, results)
        api.add("pods", pod)
        api.set_log(NAMESPACE, pod["metadata"]["name"], "runner", _log(job, index, results))
        handed.append(results)
    api.add("jobs", objects.complete(job))
    return job, expected, handed


def _gather(
    api: FakeApiServer, store: Store, root: Path, expected: ExpectedJob, reader: LakeReader | None
) -> GatherOutcome:
    options = GatherOptions(timeout_s=60, wait=False, record=False)
    client = KubeClient(api.client())
    return Gatherer(client, store, root, [expected], options=options, lake=reader).run()


def _reader(lake: Lake, limits: Limits = LIMITS, identity: Identity | None = None) -> LakeReader:
    """A reader of `lake` as the collector (the admin), or as `identity`."""
    return LakeReader(lake.url, lake.store(identity, limits))


def _log_reads(api: FakeApiServer) -> int:
    return requests(api)["GET log"]


def test_grouped_whole_results_come_from_the_lake_with_every_sample_and_no_log_read(
    api: FakeApiServer, lake: Lake, tmp_path: Path
) -> None:
    _, expected, handed = _finished_groups(api, lake)
    reader = _reader(lake)
    with open_store(tmp_path / "results.sqlite") as store:
        outcome = _gather(api, store, tmp_path, expected, reader)
        runs = store.runs(WORKFLOW)
        assert store.samples_unread(WORKFLOW) == [], "no sample is left for `collector samples`"
    assert _log_reads(api) == 0, "no pod's log is read"
    assert reader.reads == 6
    assert (outcome.stored_new, outcome.lake.read, outcome.lake.missed) == (6, 6, [])
    written = {r.variant.index: r for group in handed for r in group if r.variant}
    for run in runs:
        result, whole = run.variant.result, written[run.variant.index]
        assert isinstance(result, OkResult) and isinstance(whole, OkResult)
        assert whole.stored is not None
        assert (run.variant.result_source, run.variant.result_object) == ("lake", whole.stored)
        assert result.samples == whole.samples and result.samples is not None
        assert run.variant.explanation == "succeeded"


def test_a_groups_stubs_are_read_from_the_lake_by_their_digest_at_their_attempts_key(
    api: FakeApiServer, lake: Lake, tmp_path: Path
) -> None:
    """Six results in one pod: the termination message has room for stubs only for the later
    ones, each with its object's digest and size but not its key (docs/runner.md). They are
    read whole from the lake all the same: no log read."""
    job, expected, _ = _finished_groups(api, lake, ((0, 1, 2, 3, 4, 5),))
    pod = api.get("pods", NAMESPACE, _pod_name(job, 0))
    assert pod is not None
    stubs = message_reading(pod).omitted
    assert stubs and all(stub.sha256 for stub in stubs)
    with open_store(tmp_path / "results.sqlite") as store:
        outcome = _gather(api, store, tmp_path, expected, _reader(lake))
        runs = store.runs(WORKFLOW)
    assert [(r.variant.index, r.variant.result_source) for r in runs] == [
        (i, "lake") for i in range(6)
    ]
    assert (outcome.lake.read, _log_reads(api)) == (6, 0)


def test_without_the_lake_the_same_groups_take_a_log_read_each(
    api: FakeApiServer, lake: Lake, tmp_path: Path
) -> None:
    """Today's path, the baseline the lake removes: and each variant says why it was not
    read from the lake its runner wrote to."""
    _, expected, _ = _finished_groups(api, lake)
    with open_store(tmp_path / "results.sqlite") as store:
        outcome = _gather(api, store, tmp_path, expected, None)
    assert _log_reads(api) == 2
    assert len(outcome.lake.missed) == 6
    assert all("given no lake to read it from" in v.explanation for _, v in outcome.lake.missed)


def _single(api: FakeApiServer, job: Obj, index: int, result: BenchResult) -> None:
    """`job`'s pod at `index` succeeded with `result` (which carries its reference) in its
    termination message, compacted as the runner writes it, and whole on its log line."""
    pod = objects.succeeded_pod(job, index, result)
    api.add("pods", pod)
    api.set_log(NAMESPACE, pod["metadata"]["name"], "runner", _log(job, index, [result]))


def _finished_singles(api: FakeApiServer, lake: Lake, job: Obj, odd: Odd | None = None) -> None:
    """cpu-smoke's six pods of one variant each, finished, each result written to the lake
    as the runner writes it; index 0's written by `odd` instead, where given."""
    for index in range(6):
        whole = objects.ok_result(job, index)
        result = odd(lake, job, index, whole) if odd and index == 0 else None
        _single(api, job, index, result or _written(lake, job, index, [whole])[0])
    api.add("jobs", objects.complete(job))


def _admin_put(lake: Lake, job: Obj, index: int, whole: BenchResult, data: bytes) -> StoredObject:
    """`data` put where the runner of `job`'s pod at `index` writes `whole`."""
    assert whole.variant is not None
    key = raw_key(
        lake.url,
        workflow=WORKFLOW,
        cluster=CLUSTER,
        job=str(job["metadata"]["name"]),
        variant=whole.variant.id,
        attempt=_pod_name(job, index),
    )
    return lake.store().put_once(key, data)


def _other_digest(lake: Lake, job: Obj, index: int, whole: BenchResult) -> BenchResult:
    """The object at the key holds other bytes (one changed) than its reference says."""
    data = result_json(whole).encode()
    stored = _admin_put(lake, job, index, whole, data.replace(b"0.", b"1.", 1))
    real = stored.model_copy(update={"sha256": sha256_of(data)})
    return whole.model_copy(update={"stored": real})


def _partial(lake: Lake, job: Obj, index: int, whole: BenchResult) -> BenchResult:
    """The object at the key is cut short: its first half, its reference the whole's."""
    data = result_json(whole).encode()
    stored = _admin_put(lake, job, index, whole, data[: len(data) // 2])
    real = stored.model_copy(update={"sha256": sha256_of(data), "bytes": len(data)})
    return whole.model_copy(update={"stored": real})


def _newer(lake: Lake, job: Obj, index: int, whole: BenchResult) -> BenchResult:
    """The object is a newer runner's result (its schema_version above this collector's)."""
    data = json.loads(result_json(whole))
    data["schema_version"] = RESULT_SCHEMA_VERSION + 1
    stored = _admin_put(lake, job, index, whole, json.dumps(data).encode())
    return whole.model_copy(update={"stored": stored})


def _missing(lake: Lake, job: Obj, index: int, whole: BenchResult) -> BenchResult:
    """The reference names an object the lake does not hold (expired, or deleted)."""
    data = result_json(whole).encode()
    stored = _admin_put(lake, job, index, whole, data)
    lake.store().delete([stored.key])
    return whole.model_copy(update={"stored": stored})


@pytest.mark.parametrize(
    ("odd", "said"),
    [
        (_other_digest, "its reference says"),
        (_partial, "a partial or another object, not trusted"),
        (_newer, f"result schema_version {RESULT_SCHEMA_VERSION + 1}"),
        (_missing, "missing"),
    ],
    ids=["digest-mismatch", "partial-object", "newer-schema", "missing-object"],
)
def test_an_object_that_is_not_what_its_reference_says_is_not_trusted(
    collector: Collect,
    api: FakeApiServer,
    lake: Lake,
    repo: Path,
    job: Obj,
    odd: Odd,
    said: str,
) -> None:
    """Index 0's object is not what its termination message says: its result is stored from
    its pod's termination message, as before the lake (its samples left for `collector
    samples`), the others from the lake, and gather exits 4 naming the object and why."""
    _finished_singles(api, lake, job, odd)
    run = collector("gather", env=lake.env())
    assert run.exit_code == 4, run.output
    assert rows(repo) == [(0, "succeeded", "termination-message")] + [
        (i, "succeeded", "lake") for i in range(1, 6)
    ]
    assert "lake: 5 whole results read, 1 not" in run.stdout
    assert said in run.stdout and "not read from the lake" in run.stdout
    assert "every variant stored, but 1 whole result not read from the lake" in run.output
    again = collector("gather", env=lake.env())
    assert again.exit_code == 0, again.output
    assert "nothing new to gather" in again.output
    assert len(rows(repo)) == 6, "a re-gather stores nothing twice"


def test_a_store_that_is_down_is_asked_once_and_every_result_stored_from_its_pod(
    collector: Collect, api: FakeApiServer, lake: Lake, repo: Path, job: Obj
) -> None:
    _finished_singles(api, lake, job)
    with lake.stopped():
        run = collector("gather", "--keep", env=lake.env())
    assert run.exit_code == 4, run.output
    assert rows(repo) == [(i, "succeeded", "termination-message") for i in range(6)]
    assert "lake: 0 whole results read, 6 not (" in run.stdout
    assert "unreachable" in run.stdout and "not asked again in this gather" in run.stdout
    assert "lake objects read 1" in run.stderr, "a store that is down is asked once"
    again = collector("gather", env=lake.env())
    assert again.exit_code == 0, again.output
    assert rows(repo) == [(i, "succeeded", "termination-message") for i in range(6)]


@pytest.mark.parametrize("fault", ["denied", "hanging"])
def test_a_store_that_refuses_or_hangs_costs_one_request_and_loses_nothing(
    api: FakeApiServer, lake: Lake, tmp_path: Path, fault: str
) -> None:
    """403 (the collector given another workflow's credentials) or a frozen server (SIGSTOP:
    connections accepted, never answered) within QUICK's bounds: the first object's read says
    so, no other object is asked for, and every group is stored from its pods' logs."""
    _, expected, _ = _finished_groups(api, lake)
    if fault == "denied":
        reader = _reader(lake, QUICK, identity=lake.writer_for("another-workflow"))
        with open_store(tmp_path / "results.sqlite") as store:
            outcome = _gather(api, store, tmp_path, expected, reader)
    else:
        reader = _reader(lake, QUICK)
        with lake.paused(), open_store(tmp_path / "results.sqlite") as store:
            outcome = _gather(api, store, tmp_path, expected, reader)
    word = {"denied": "denied", "hanging": "timed_out"}[fault]
    assert reader.reads == 1
    assert outcome.lake.down is not None and word in outcome.lake.down
    assert outcome.stored_new == 6 and outcome.lake.read == 0
    # In the order the groups' pods were harvested, which their threads decide.
    assert sorted((v.index, v.result_source) for _, v in outcome.lake.missed) == [
        (i, "log") for i in range(6)
    ]
    assert _log_reads(api) == 2


def test_two_collectors_at_once_store_each_result_once_per_root(
    api: FakeApiServer, lake: Lake, tmp_path: Path
) -> None:
    """Two roots (two machines) and two processes on one root, all four gathering the same
    Job at once from one lake: each root holds each result once, and a gather again stores
    nothing."""
    _, expected, _ = _finished_groups(api, lake)
    roots = [tmp_path / "a", tmp_path / "a", tmp_path / "b", tmp_path / "b"]
    stored: list[int] = []

    def gather(root: Path) -> None:
        with open_store(root / "results.sqlite") as store:
            stored.append(_gather(api, store, root, expected, _reader(lake)).stored_new)

    threads = [threading.Thread(target=gather, args=(root,)) for root in roots]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(stored) == 12, "6 a root, whichever collector stored each"
    for root in {*roots}:
        with open_store(root / "results.sqlite") as store:
            runs = store.runs(WORKFLOW)
            assert sorted(r.variant.index for r in runs) == [*range(6)]
            assert {r.variant.result_source for r in runs} == {"lake"}
            again = _gather(api, store, root, expected, _reader(lake))
            assert (again.stored_new, again.already_stored) == (0, 6)


def test_what_a_killed_attempt_measured_is_taken_whole_from_the_lake(
    api: FakeApiServer, lake: Lake, tmp_path: Path
) -> None:
    """Index 0's first attempt was OOMKilled after measuring variants 0 and 1, its retry is
    due; index 1 is done. Variants 0 and 1 are stored at once, whole from the lake like the
    rest, so that the retry can be told to skip them."""
    job, expected = grouped_job()
    api.add("jobs", objects.job_status(job, active=1, completed=[1]))
    measured = _written(lake, job, 0, [objects.ok_result(job, 0), objects.ok_result(job, 1)])
    killed = objects.group_pod(job, 0, measured, exit_code=137, reason="OOMKilled")
    api.add("pods", killed)
    done = _written(lake, job, 1, [objects.ok_result(job, i) for i in GROUPS[1]])
    api.add("pods", objects.group_pod(job, 1, done))
    with open_store(tmp_path / "results.sqlite") as store:
        outcome = _gather(api, store, tmp_path, expected, _reader(lake))
        runs = store.runs(WORKFLOW)
    assert [(r.variant.index, r.variant.result_source) for r in runs] == [
        (i, "lake") for i in (0, 1, 3, 4, 5)
    ]
    assert all(isinstance(r.variant.result, OkResult) and r.variant.result.samples for r in runs)
    assert runs[0].variant.pod == killed["metadata"]["name"]
    assert "succeeded in an earlier attempt" in runs[0].variant.explanation
    assert (outcome.lake.read, outcome.lake.missed, _log_reads(api)) == (5, [], 0)


def test_gather_reads_the_lake_the_fleet_names_for_the_cluster(
    collector: Collect, api: FakeApiServer, lake: Lake, repo: Path, job: Obj
) -> None:
    """No --lake and no $BENCHFLEET_LAKE: the fleet file's results_store gives the lake, its
    endpoint and region; only the credentials come from the standard variables."""
    env = lake.env()
    fleet = (Path("specs") / "clusters.yaml").read_text() + (
        "results_store:\n"
        f"  url: {lake.url}\n"
        f"  endpoint: {env[ENDPOINT_ENV]}\n"
        "  region: us-east-1\n"
        "  credentials_secret: lake-writer\n"
        "  endpoint_cidrs: [127.0.0.1/32]\n"
    )
    (repo / "specs").mkdir()
    (repo / "specs" / "clusters.yaml").write_text(fleet)
    _finished_singles(api, lake, job)
    credentials = {name: env[name] for name in (ACCESS_KEY_ENV, SECRET_KEY_ENV)}
    run = collector("gather", env={**credentials, LAKE_ENV: "", ENDPOINT_ENV: ""})
    assert run.exit_code == 0, run.output
    assert rows(repo) == [(i, "succeeded", "lake") for i in range(6)]
    assert "lake: 6 whole results read, 0 not" in run.stdout


def test_three_collector_processes_at_once_store_each_result_once_per_root(
    api: FakeApiServer, lake: Lake, repo: Path, job: Obj, tmp_path: Path
) -> None:
    """Two `collector gather` processes on one root and a third on another, started at once
    against one cluster and one lake: every one succeeds, each root holds each result once,
    and the two on one root stored six between them."""
    _finished_singles(api, lake, job)
    other = tmp_path / "other"
    shutil.copytree(repo, other)
    env = {**os.environ, **lake.env(), "BENCHFLEET_K8S_KUBECONFIG": kubeconfig(api.url)}
    roots = [repo, repo, other]
    gathers = [
        subprocess.Popen(
            [
                *COLLECTOR,
                "--root",
                str(root),
                "gather",
                "--workflow",
                WORKFLOW,
                "--cluster",
                CLUSTER,
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for root in roots
    ]
    said = [gather.communicate(timeout=120) for gather in gathers]
    assert [gather.returncode for gather in gathers] == [0, 0, 0], said
    stored = [sum(int(n) for n in re.findall(r"stored (\d+) variant run", out)) for out, _ in said]
    assert stored[0] + stored[1] == 6 and stored[2] == 6, said
    for root in (repo, other):
        assert rows(root) == [(i, "succeeded", "lake") for i in range(6)]
