"""The progress line's one writer and reader (contract/progress.py): what the reader takes
from a pod's log is a record or nothing, never an error."""

import pytest

from contract.progress import MAX_PROGRESS_LINE, ProgressRecord, parse_progress, progress_line


def test_a_record_reads_back_as_written() -> None:
    record = ProgressRecord(variants=(3, 4), phase="measure", elapsed_s=12.5, done=900, left_s=3)
    line = progress_line(record)
    assert line.startswith("BENCH_PROGRESS {") and line.endswith("}\n")
    assert parse_progress(line.rstrip("\n")) == record


@pytest.mark.parametrize(
    "line",
    [
        "2026-01-01 12:00:00 INFO variant 3 (abc): 4 threads, device cpu",
        'BENCH_PROGRESS {"variants": [1], "phase": "dancing", "elapsed_s": 1}',
        'BENCH_PROGRESS {"variants": [], "phase": "load", "elapsed_s": 1}',
        'BENCH_PROGRESS {"variants": [1], "phase": "load", "elapsed_s": -1}',
        "BENCH_PROGRESS {not json",
        'BENCH_PROGRESS {"variants": [1], "phase": "load", "elapsed_s": 1, "x": "'
        + "y" * MAX_PROGRESS_LINE
        + '"}',
        'BENCH_RESULT {"status": "ok"}',
    ],
)
def test_anything_else_is_no_progress_line(line: str) -> None:
    assert parse_progress(line) is None


def test_a_newer_runners_extra_field_is_ignored() -> None:
    line = 'BENCH_PROGRESS {"variants": [1], "phase": "load", "elapsed_s": 0, "bytes": 5}'
    assert parse_progress(line) == ProgressRecord(variants=(1,), phase="load", elapsed_s=0)
