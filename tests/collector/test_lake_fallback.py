"""What gather does with the lake references of schema 12 results where no object is read:
no lake given, a store nobody answers at (a loopback port bound but never listening), a
runner that could not write, a lake URL that is none. Each variant is stored from its pod as
before the lake and says why; tests/collector/test_lake_gather.py has the real server."""

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from collector.lakerefs import Reference, references
from collector.pods import message_reading
from contract.lake import LAKE_ENV, LakeUrl, StoredObject, raw_key, sha256_of
from contract.result import BenchResult, OkResult, result_json, result_line
from standin import objects
from standin.api import FakeApiServer
from store.database import open_store
from tests.collector.gathering import (
    GROUPS,
    NAMESPACE,
    Collect,
    Obj,
    gather_once,
    grouped_job,
    requests,
    rows,
)

LAKE = LakeUrl(bucket="lake", prefix="team")


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port bound but never listening, so nobody takes it: a store that is down."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def _referenced(job: Obj, index: int, result: BenchResult) -> BenchResult:
    """`result` as the runner of `job`'s pod at `index` hands it over once it wrote it whole
    to LAKE (the object itself is not needed where nobody reads it)."""
    assert result.variant is not None
    key = raw_key(
        LAKE,
        workflow="cpu-smoke",
        cluster="us-east",
        job=str(job["metadata"]["name"]),
        variant=result.variant.id,
        attempt=str(objects.pod(job, index)["metadata"]["name"]),
    )
    data = result_json(result).encode()
    stored = StoredObject(key=key, sha256=sha256_of(data), bytes=len(data))
    return result.model_copy(update={"stored": stored})


def test_a_groups_message_names_each_object_a_stubs_by_its_digest_alone() -> None:
    """Six whole results do not fit a termination message: the later ones turn into stubs
    that keep their object's digest and size, which is all a stub has room for; the first,
    which its runner could not write, says why."""
    job, _ = grouped_job()
    results = [_referenced(job, 0, objects.ok_result(job, i)) for i in range(6)]
    failed = results[0].model_copy(update={"stored": None, "store_error": "denied: 403"})
    pod = objects.group_pod(job, 0, [failed, *results[1:]])
    named = references(message_reading(pod))
    stubs = [r for r in named.found if r.key is None]
    assert stubs, "some results are stubs"
    assert {r.index for r in named.found} == {1, 2, 3, 4, 5}
    whole = {r.variant.index: r for r in results if r.variant}
    for reference in named.found:
        assert reference.index is not None
        stored = whole[reference.index].stored
        assert stored is not None
        assert reference == Reference(
            reference.index,
            stored.key.split("/")[-2],
            None if reference in stubs else stored.key,
            stored.sha256,
            stored.bytes,
        )
    assert named.unwritten == {0: "its runner could not write it there: denied: 403"}


def test_without_a_lake_each_variant_is_read_from_its_pod_and_says_why(
    api: FakeApiServer, tmp_path: Path
) -> None:
    job, expected = grouped_job()
    for index, group in enumerate(GROUPS):
        results = [_referenced(job, index, objects.ok_result(job, i)) for i in group]
        pod = objects.group_pod(job, index, results)
        api.add("pods", pod)
        log = objects.starting_log(job, index) + "".join(result_line(r) for r in results)
        api.set_log(NAMESPACE, pod["metadata"]["name"], "runner", log)
    api.add("jobs", objects.complete(job))
    with open_store(tmp_path / "results.sqlite") as store:
        outcome = gather_once(api, store, tmp_path, expected)
        runs = store.runs("cpu-smoke")
    assert requests(api)["GET log"] == 2, "as before the lake: a compacted group's log"
    assert [(r.variant.state, r.variant.result_source) for r in runs] == [("succeeded", "log")] * 6
    assert all(isinstance(r.variant.result, OkResult) and r.variant.result.samples for r in runs)
    assert sorted(v.index for _, v in outcome.lake.missed) == [*range(6)], "pods are read at once"
    assert all(
        "not read from the lake" in v.explanation and "given no lake" in v.explanation
        for _, v in outcome.lake.missed
    )


def _finished(api: FakeApiServer, job: Obj, results: list[BenchResult]) -> None:
    for index, result in enumerate(results):
        api.add("pods", objects.succeeded_pod(job, index, result))
    api.add("jobs", objects.complete(job))


def test_a_store_nobody_answers_at_is_asked_once_and_gather_exits_4(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj, refused_port: int
) -> None:
    _finished(api, job, [_referenced(job, i, objects.ok_result(job, i)) for i in range(6)])
    env = {
        LAKE_ENV: str(LAKE),
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{refused_port}",
        "AWS_ACCESS_KEY_ID": "collector",
        "AWS_SECRET_ACCESS_KEY": "very-secret-value",
    }
    run = collector("gather", env=env)
    assert run.exit_code == 4, run.output
    assert rows(repo) == [(i, "succeeded", "termination-message") for i in range(6)]
    assert "lake: 0 whole results read, 6 not (" in run.stdout
    assert "unreachable" in run.stdout and "not asked again in this gather" in run.stdout
    assert "lake objects read 1" in run.stderr
    assert "every variant stored, but 6 whole results not read from the lake" in run.output
    assert "very-secret-value" not in run.output


def test_a_variant_its_runner_could_not_write_says_so_and_gather_exits_4(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """No lake is asked (none is given here): the runner's own word is what there is."""
    results = [objects.ok_result(job, i) for i in range(6)]
    results[2] = results[2].model_copy(update={"store_error": "full: the bucket is over quota"})
    _finished(api, job, results)
    run = collector("gather")
    assert run.exit_code == 4, run.output
    assert "lake: 0 whole results read, 1 not" in run.stdout
    assert "its runner could not write it there: full: the bucket is over quota" in run.stdout


def test_a_failure_outranks_the_lake_in_the_exit_code(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    for index in range(5):
        api.add(
            "pods",
            objects.succeeded_pod(
                job, index, _referenced(job, index, objects.ok_result(job, index))
            ),
        )
    api.add("pods", objects.failed_pod(job, 5))
    failed = objects.failed_job(
        job, "FailedIndexes", completed=[0, 1, 2, 3, 4], failed_indexes=[5], failed=1
    )
    api.add("jobs", failed)
    run = collector("gather")
    assert run.exit_code == 1, run.output
    assert "1 variant failed, 0 Jobs did not finish; 5 whole results not read" in run.output


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("s3://user:hunter2@lake/team", "carries no credentials"),
        ("s3://lake/../other", "is not plain"),
    ],
)
def test_a_lake_url_that_is_none_is_a_usage_error_naming_no_credential(
    collector: Collect, url: str, said: str
) -> None:
    run = collector("gather", "--lake", url)
    assert run.exit_code == 2, run.output
    assert said in run.output and "hunter2" not in run.output
