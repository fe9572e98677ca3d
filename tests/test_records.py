"""contract.records: a record in results/ is read within bounds set by the largest record
gather writes, whatever file a pull request commits in its place."""

import json
import tracemalloc
from pathlib import Path

import pytest
from pydantic import ValidationError

from contract.records import (
    MAX_RECORD_BYTES,
    MAX_RECORD_VALUES,
    JobRecord,
    RecordError,
    StoredVariant,
    parse_record,
    read_record,
    record_text,
)
from contract.result import parse_result
from contract.variant import MAX_VARIANTS
from tests.conftest import TEST_DATA

REAL_RESULT = TEST_DATA / "results" / "interleaved-ok.json"
"""A runner's result of an interleaved pod (16 rounds, paired), as gather stores it."""
HEAD = b'{"workflow":"w","cluster":"c","namespace":"n","job":"j","outcome":"failed","variants":['


def largest_record() -> JobRecord:
    """A Job of the most variants a workflow has, each a full result, every name as long as
    the spec allows: the most a record gather writes holds."""
    result = parse_result(REAL_RESULT.read_bytes())
    stored = StoredVariant(
        index=0,
        state="succeeded",
        variant=result.variant,
        explanation="succeeded",
        pod="p" * 63,
        node="ip-10-100-12-34.ec2.internal",
        attempts=1,
        finished_at="2026-12-03T06:00:00Z",
        result_source="termination-message",
        result=result,
    )
    return JobRecord(
        workflow="w" * 40,
        cluster="c" * 30,
        namespace="benchfleet-" + "e" * 20,
        job="j" * 63,
        target="t" * 20,
        spec_file=f"specs/workflows/{'w' * 40}.yaml",
        spec_sha256="a" * 64,
        image="registry.example.com/benchfleet/runner@sha256:" + "b" * 64,
        repeat=9,
        outcome="complete",
        variants=tuple(stored.model_copy(update={"index": i}) for i in range(MAX_VARIANTS)),
        description="d" * 200,
        owner="o" * 100,
    )


def test_the_largest_record_gather_writes_is_read_with_room_to_spare() -> None:
    text = record_text(largest_record()).encode()
    values = text.count(b",") + text.count(b"[") + text.count(b"{")
    assert len(text) * 3 // 2 < MAX_RECORD_BYTES
    assert values * 4 // 3 < MAX_RECORD_VALUES
    assert len(parse_record(text).variants) == MAX_VARIANTS


def tiny_variants(size: int) -> bytes:
    """The reported record: 60 MiB of variants that say almost nothing, each a model
    object, which took parsing to 3.1 GiB."""
    item = b'{"index":0,"state":"failed","explanation":""},'
    return HEAD + item * (size // len(item)) + item[:-1] + b"]}"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (tiny_variants(60 << 20), r"it holds about 5,4\d\d,\d\d\d values, more than 2,000,000"),
        (b"[" * (8 << 20) + b"]" * (8 << 20), "values, more than 2,000,000"),
        (HEAD + b" " * (65 << 20) + b"]}", "more than the 67,108,864 bytes a record may have"),
    ],
    ids=["tiny-variants", "nested-lists", "padded"],
)
def test_a_record_over_the_bounds_is_refused_before_it_is_parsed(data: bytes, message: str) -> None:
    tracemalloc.start()
    try:
        with pytest.raises(RecordError, match=message):
            parse_record(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_a_record_of_more_variants_than_a_workflow_has_is_refused() -> None:
    with pytest.raises(ValidationError, match="at most 10000 items"):
        parse_record(tiny_variants(47 * (MAX_VARIANTS + 1)))


def test_a_record_file_is_read_no_further_than_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "record.json"
    with path.open("wb") as file:
        file.truncate(4 << 30)  # sparse: 4 GiB that cost no disk
    tracemalloc.start()
    try:
        with pytest.raises(RecordError, match="more than the 67,108,864 bytes"):
            read_record(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


@pytest.mark.parametrize(
    "finished_at", ["yesterday", "2026-12-03T06:00:00", "9999-12-31T00:00:00Z"]
)
def test_a_record_whose_time_readers_cannot_read_is_refused_naming_the_field(
    finished_at: str,
) -> None:
    """Issue #31: a hand-edited `finished_at` that is no time (or has no zone, or is past any
    period's end) was stored as it was, and every report of the workflow raised."""
    variant = largest_record().variants[0].model_dump(mode="json", exclude_none=True)
    variant["finished_at"] = finished_at
    text = HEAD + json.dumps(variant).encode() + b"]}"
    with pytest.raises(ValidationError, match=r"variants\.0\.finished_at"):
        parse_record(text)


def test_a_record_read_and_written_again_keeps_its_times_as_they_were_spelt() -> None:
    """The API server's whole seconds in UTC, and a local run's milliseconds."""
    for spelt in (
        "2026-12-03T06:00:00Z",
        "2026-12-03T06:00:00.125+00:00",
        "2026-12-03T08:00:00+02:00",
    ):
        variant = StoredVariant.model_validate(
            {"index": 0, "state": "failed", "explanation": "x", "finished_at": spelt}
        )
        assert json.loads(variant.model_dump_json())["finished_at"] == spelt
