"""runner.channel: the termination log holds exactly the latest message, however the messages
before it were sized, and the result line still goes out when the log cannot be written."""

import io
import os
from pathlib import Path

import pytest

from contract.result import (
    BenchResult,
    ErrorInfo,
    ErrorResult,
    parse_group_message,
    result_line,
    termination_message,
)
from contract.variant import VariantRef
from runner.channel import emit, rewrite


def _error(index: int, message: str) -> ErrorResult:
    return ErrorResult(
        workflow="test",
        target="cpu",
        variant=VariantRef(
            index=index,
            id=f"v{index:012x}",
            model="tiny-mlp",
            precision="fp32",
            quantization="none",
            batch_size=1,
        ),
        error=ErrorInfo(type="internal", message=message),
    )


def test_a_rewrite_leaves_exactly_the_new_text_whether_it_grows_or_shrinks(
    tmp_path: Path,
) -> None:
    path = tmp_path / "termination-log"
    for text in ("short", "a much longer message, é included", "mid-sized", "", "x" * 5000, "y"):
        rewrite(path, text)
        assert path.read_bytes() == text.encode("utf-8")


def test_a_growing_log_is_written_in_place_and_never_truncated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Truncation is what makes ext4 and XFS flush the file on close: a group's log only
    # grows until compaction, so it must not be truncated on the way.
    path = tmp_path / "termination-log"
    path.write_text("", encoding="utf-8")
    inode = path.stat().st_ino
    flags: list[int] = []
    cuts: list[int] = []
    real_open, real_ftruncate = os.open, os.ftruncate

    def recording_open(file: Path, mode: int, permissions: int = 0o777) -> int:
        flags.append(mode)
        return real_open(file, mode, permissions)

    def recording_ftruncate(fd: int, length: int) -> None:
        cuts.append(length)
        real_ftruncate(fd, length)

    monkeypatch.setattr(os, "open", recording_open)
    monkeypatch.setattr(os, "ftruncate", recording_ftruncate)
    for size in (10, 20, 30):
        rewrite(path, "z" * size)
    rewrite(path, "z" * 5)
    assert not any(mode & os.O_TRUNC for mode in flags)
    assert cuts == [5], "only the shrinking rewrite cuts the file, to the new length"
    assert path.read_text(encoding="utf-8") == "z" * 5
    assert path.stat().st_ino == inode, "the same file, as a pod's bind-mounted log must be"


def test_emit_writes_every_result_so_far_to_the_log_and_the_last_to_stdout(
    tmp_path: Path,
) -> None:
    log = tmp_path / "termination-log"
    results: list[BenchResult] = []
    stdout = io.StringIO()
    sizes = []
    # Two long messages no longer fit whole: the third message is compacted, shorter than the
    # second, so its rewrite has to cut the file.
    for index, words in enumerate((10, 3500, 3500)):
        results.append(_error(index, f"failure {index} " + "w" * words))
        emit(results, stdout, log)
        assert log.read_text(encoding="utf-8") == termination_message(results)
        sizes.append(log.stat().st_size)
    assert sizes[2] < sizes[1]
    entries = parse_group_message(log.read_bytes())
    assert [entry.error.type for entry in entries if isinstance(entry, ErrorResult)] == [
        "internal"
    ] * 3
    assert stdout.getvalue() == "".join(result_line(result) for result in results)


def test_an_unwritable_log_leaves_the_result_line_and_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    stdout = io.StringIO()
    result = _error(0, "boom")
    emit([result], stdout, tmp_path / "missing-folder" / "termination-log")
    assert stdout.getvalue() == result_line(result)
    assert "cannot write the termination log" in caplog.text
