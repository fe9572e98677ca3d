"""A result written by a newer runner (a schema_version above the one this collector reads)
is no broken result: it is kept as it arrived, said so, never made final on that ground
alone, and stored for good by a collector that reads it."""

import json
import sqlite3
from pathlib import Path

from collector.harvest import harvest
from collector.indexes import index_states
from collector.pods import read_result
from contract.records import JobIdentity, StoredVariant
from contract.result import READ_SCHEMA_VERSIONS, RESULT_SCHEMA_VERSION, BenchResult
from standin import objects
from standin.api import FakeApiServer
from store.database import Unread, open_store
from tests.collector.gathering import GROUPS, Collect, Obj, grouped_job, record_of, rows

NEWER = RESULT_SCHEMA_VERSION + 1


def newer_text(result: BenchResult) -> str:
    """`result` as a runner of the next schema version would write it: the version, and a
    field this collector has never heard of."""
    data = json.loads(result.model_dump_json(exclude_none=True))
    data.update(schema_version=NEWER, energy_j=0.42)
    return json.dumps(data, separators=(",", ":"))


def test_a_newer_runners_result_is_kept_as_it_arrived_and_said_so(job: Obj) -> None:
    text = newer_text(objects.ok_result(job, 3))
    pod = objects.with_termination_message(objects.succeeded_pod(job, 3), text)
    reading = read_result(pod, None)
    assert (reading.results, reading.newer) == ((), (text,))
    assert reading.problem == (
        f"the termination message was written by a newer runner (result schema_version {NEWER}; "
        f"this collector reads {RESULT_SCHEMA_VERSION}): kept as it arrived, for a collector "
        "that reads it"
    )


def test_a_version_that_is_not_newer_is_still_a_broken_result(job: Obj) -> None:
    pod = objects.with_termination_message(
        objects.succeeded_pod(job, 3), '{"schema_version": 0, "status": "ok"}'
    )
    reading = read_result(pod, None)
    assert reading.newer == ()
    assert reading.problem is not None
    *older, newest = READ_SCHEMA_VERSIONS
    listed = f"{', '.join(map(str, older))} or {newest}"
    assert f"at schema_version: {listed} was expected" in reading.problem


def test_each_variant_of_a_group_keeps_the_newer_result_that_names_it() -> None:
    job, expected = grouped_job()
    texts = [newer_text(objects.ok_result(job, i)) for i in GROUPS[0]]
    pod = objects.with_termination_message(
        objects.group_pod(job, 0, [objects.ok_result(job, i) for i in GROUPS[0]]),
        "[" + ",".join(texts) + "]",
    )
    (state, _) = index_states(job, [pod])
    harvested = harvest(state, expected.slots(0), None, lambda name: None)
    assert harvested.stored == []
    assert [(kept.variant.index, kept.variant.state, kept.raw) for kept in harvested.unread] == [
        (position, "succeeded", text) for position, text in zip(GROUPS[0], texts, strict=True)
    ]
    assert all(kept.variant.variant is not None for kept in harvested.unread)


def unread_rows(repo: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(repo / ".benchfleet" / "results.sqlite") as db:
        return list(db.execute("SELECT job_index, raw FROM unread_results ORDER BY job_index"))


def test_gather_keeps_a_newer_result_unread_and_records_nothing_final_on_it(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """The defect: the result was stored as a final failure, nothing kept, and nothing said
    it came from a newer runner; the Job's record then told synth it was done."""
    text = newer_text(objects.ok_result(job, 2))
    for index in range(6):
        pod = objects.succeeded_pod(job, index)
        api.add("pods", objects.with_termination_message(pod, text) if index == 2 else pod)
    api.add("jobs", objects.complete(job))
    run = collector("gather", "--timeout", "10m")
    assert run.exit_code == 1
    assert [index for index, _, _ in rows(repo)] == [0, 1, 3, 4, 5], "not final"
    assert unread_rows(repo) == [(2, text)], "kept as it arrived"
    assert not record_of(repo, job).exists(), "the Job is not done while a result is unread"
    assert "1 result written by a newer runner than this collector reads" in run.stdout
    assert "index 2: kept unread: the termination message was written by a newer runner" in (
        run.stdout
    )
    again = collector("gather", "--timeout", "10m")
    assert unread_rows(repo) == [(2, text)] and len(rows(repo)) == 5, "the same, once"
    assert again.exit_code == 1


def test_a_collector_that_reads_a_kept_result_stores_it_and_records_the_job(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """What an older collector kept is read by the next one, even once the pod is gone."""
    for index in (0, 1, 3, 4, 5):
        api.add("pods", objects.succeeded_pod(job, index))
    api.add("jobs", objects.complete(job))
    measured = objects.ok_result(job, 2)
    ended = StoredVariant(
        index=2, state="succeeded", variant=measured.variant, explanation="succeeded", attempts=1
    )
    identity = JobIdentity(
        workflow="cpu-smoke",
        cluster="us-east",
        namespace=job["metadata"]["namespace"],
        job=job["metadata"]["name"],
    )
    with open_store(repo / ".benchfleet" / "results.sqlite") as store:
        # As an older collector kept it: this one reads its schema version.
        store.keep_unread(identity, [Unread(ended, measured.model_dump_json(), "newer")])
    run = collector("gather", "--timeout", "10m")
    assert run.exit_code == 0, run.output
    assert [(index, state) for index, state, _ in rows(repo)] == [
        (i, "succeeded") for i in range(6)
    ]
    assert unread_rows(repo) == []
    assert record_of(repo, job).exists()
