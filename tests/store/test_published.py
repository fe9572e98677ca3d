"""A Job as sync publishes it (store/published.py): the JSON Lines file reads back to the
same record and times, its digest is each collector's alike, and the Parquet files hold
the variants and samples for DuckDB and pyarrow, read from local files here."""

import gzip
import json
from datetime import date
from pathlib import Path

import duckdb
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from contract.records import JobRecord, StoredVariant
from contract.samples import encode
from store.database import MEMORY, Store, StoredRun, open_store
from store.published import (
    FORMAT,
    SCHEMA_VERSION,
    PublishedError,
    content_sha256,
    jsonl_bytes,
    parquet_digest,
    published_run,
    read_jsonl,
    samples_parquet,
    variants_parquet,
)
from tests.collector.stored import JOB, NOW, failed, succeeded

DAY = date(2026, 12, 3)
DURATIONS = [1_000_000 + 37 * i for i in range(500)]


def with_samples(variant: StoredVariant) -> StoredVariant:
    assert variant.result is not None
    result = variant.result.model_copy(update={"samples": encode(DURATIONS)})
    return variant.model_copy(update={"result": result, "result_source": "log"})


RECORD = JobRecord(
    **JOB.model_dump(),
    outcome="failed",
    failure="1 variant failed",
    description="smoke",
    owner="team-a",
    variants=(succeeded(0), failed(1)),
)
STORED = [
    StoredRun(JOB, with_samples(succeeded(0)), "2026-12-03T06:00:00+00:00"),
]
TRIED: dict[str, tuple[str, ...]] = {"cpu-smoke-cpu-0000000000": ("v2",)}


def test_the_jsonl_file_reads_back_to_the_stores_runs_and_the_record() -> None:
    run = published_run(RECORD, STORED, TRIED)
    back = read_jsonl(jsonl_bytes(run), "k")
    assert back == run
    assert back.record.variants[0].result == STORED[0].variant.result
    assert back.collected_at == {0: "2026-12-03T06:00:00+00:00", 1: None}
    assert back.record.description == "smoke"
    assert back.date == "2026-12-03"


def test_the_same_run_gives_the_same_bytes_and_another_collectors_time_the_same_digest() -> None:
    run = published_run(RECORD, STORED, TRIED)
    assert jsonl_bytes(run) == jsonl_bytes(published_run(RECORD, STORED, TRIED))
    assert variants_parquet(run) == variants_parquet(published_run(RECORD, STORED, TRIED))
    later = [StoredRun(JOB, STORED[0].variant, "2026-12-04T09:00:00+00:00")]
    other = published_run(RECORD, later, TRIED)
    assert jsonl_bytes(other) != jsonl_bytes(run)
    assert content_sha256(other) == content_sha256(run)
    changed = published_run(RECORD, [StoredRun(JOB, succeeded(0, 9.0), "")], TRIED)
    assert content_sha256(changed) != content_sha256(run)


def test_a_header_line_names_the_schema_and_its_version() -> None:
    header = json.loads(
        gzip.decompress(jsonl_bytes(published_run(RECORD, STORED, {}))).split(b"\n")[0]
    )
    assert header["schema"] == FORMAT
    assert header["schema_version"] == SCHEMA_VERSION


def edited(run_bytes: bytes, line: int, change: dict[str, object]) -> bytes:
    lines = gzip.decompress(run_bytes).decode().splitlines()
    lines[line] = json.dumps({**json.loads(lines[line]), **change})
    return gzip.compress(("\n".join(lines) + "\n").encode())


@pytest.mark.parametrize(
    ("line", "change", "says"),
    [
        (0, {"schema_version": SCHEMA_VERSION + 1}, "newer than the 1 this collector reads"),
        (0, {"schema": "something.else"}, "not 'benchfleet.run'"),
        (0, {"job": {"workflow": "cpu-smoke"}}, "line 1: cluster"),
        (1, {"variant": {"index": "x"}}, "line 2: index"),
        (
            2,
            {"collected_at": "yesterday"},
            "line 3: collected_at 'yesterday' is no time",
        ),
        (0, {"owner": "someone-else"}, None),
    ],
)
def test_a_bad_file_is_refused_naming_the_line_and_field(
    line: int, change: dict[str, object], says: str | None
) -> None:
    data = jsonl_bytes(published_run(RECORD, STORED, TRIED))
    if says is None:
        # Parsed fine, but not what was hashed: the header's job is what the digest covers.
        lines = gzip.decompress(data).decode().splitlines()
        header = json.loads(lines[0])
        header["job"]["owner"] = "someone-else"
        lines[0] = json.dumps(header)
        data = gzip.compress(("\n".join(lines) + "\n").encode())
        says = "altered or cut after it was written"
    else:
        data = edited(data, line, change)
    with pytest.raises(PublishedError, match=says):
        read_jsonl(data, "runs/x.jsonl.gz")


def test_a_cut_or_foreign_file_is_refused() -> None:
    data = jsonl_bytes(published_run(RECORD, STORED, TRIED))
    with pytest.raises(PublishedError, match="cut off"):
        read_jsonl(data[: len(data) // 2], "k")
    with pytest.raises(PublishedError, match="not gzip"):
        read_jsonl(b"hello", "k")
    with pytest.raises(PublishedError, match="not Parquet"):
        parquet_digest(b"hello", "k")


def test_the_parquet_files_read_with_duckdb_and_pyarrow_as_hive_partitions(
    tmp_path: Path,
) -> None:
    run = published_run(RECORD, STORED, TRIED)
    folder = tmp_path / "runs" / "workflow=cpu-smoke" / "cluster=us-east" / f"date={run.date}"
    folder.mkdir(parents=True)
    (folder / f"{JOB.job}.variants.parquet").write_bytes(variants_parquet(run))
    (folder / f"{JOB.job}.samples.parquet").write_bytes(samples_parquet(run))
    assert parquet_digest(variants_parquet(run), "k") == content_sha256(run)
    table = pq.read_table(folder / f"{JOB.job}.variants.parquet")
    assert table.schema.metadata[b"benchfleet.schema_version"] == b"1"
    rows = duckdb.execute(
        f"SELECT workflow, cluster, date, job, index, state, model, latency_p50_ms "
        f"FROM read_parquet('{tmp_path}/runs/*/*/*/*.variants.parquet', hive_partitioning=true) "
        "ORDER BY index"
    ).fetchall()
    assert rows == [
        ("cpu-smoke", "us-east", DAY, JOB.job, 0, "succeeded", "tiny-mlp", 1.5),
        ("cpu-smoke", "us-east", DAY, JOB.job, 1, "failed", None, None),
    ]
    files = [str(path) for path in (tmp_path / "runs").rglob("*.variants.parquet")]
    dataset = ds.dataset(
        files, format="parquet", partitioning="hive", partition_base_dir=str(tmp_path / "runs")
    )
    variants = dataset.to_table(filter=ds.field("state") == "succeeded").to_pylist()
    assert [(row["workflow"], row["index"]) for row in variants] == [("cpu-smoke", 0)]
    samples = duckdb.execute(
        f"SELECT count(*), sum(duration_ns) FROM read_parquet("
        f"'{tmp_path}/runs/*/*/*/*.samples.parquet', hive_partitioning=true) WHERE index = 0"
    ).fetchone()
    assert samples == (len(DURATIONS), sum(DURATIONS))


def test_a_memory_store_reads_back_what_it_was_given() -> None:
    with open_store(MEMORY) as store:
        store.add(JOB, [succeeded(0)], NOW)
        assert [run.variant for run in store.runs(JOB.workflow)] == [succeeded(0)]
    assert not Path(":memory:").exists()
    assert isinstance(Store(MEMORY), Store)
