"""A pod that runs a group of variants: a result line for each as it ends, one variant's
failure its own, and the termination log a summary of all of them within 4096 bytes."""

import logging
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from contract.config import RunConfig
from contract.errors import ExitCode, most_severe
from contract.reported import MAX_REPORTED_BYTES, reported_text
from contract.result import (
    GROUP_ADAPTER,
    TERMINATION_LOG_LIMIT,
    BenchResult,
    Environment,
    ErrorResult,
    OkResult,
    OmittedResult,
    compact,
    find_result_texts,
    parse_group_message,
    parse_result,
    termination_message,
)
from contract.samples import encode
from localcluster.results import ok_result
from runner.__main__ import main
from runner.channel import emit
from tests.runner.conftest import EXAMPLES, group_config, group_variant


def _config() -> RunConfig:
    """Four variants in two pods: pod 0 runs the three example models and tiny-mlp again at
    fp16, with tiny-cnn given inputs it rejects; pod 1 runs nothing else (a variant alone)."""
    variants = (
        group_variant(0, "tiny-mlp"),
        group_variant(1, "tiny-cnn", shape=(3, 8)),
        group_variant(2, "tiny-transformer"),
        group_variant(3, "tiny-mlp", "bf16"),
        group_variant(4, "tiny-mlp", "fp16"),
    )
    return group_config(variants, ((0, 3, 1, 2), (4,)))


class _Pod(NamedTuple):
    """What a pod's runner did: its exit code, its result lines, its termination log."""

    code: int
    results: list[BenchResult]
    log: Path


def _run_pod(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    index: str,
    config: RunConfig | None = None,
    reported: Path | None = None,
) -> _Pod:
    """`python -m runner` in-process, as a pod of index `index` runs it (with `reported` as
    its folder of handed-back ids, when given)."""
    config_path = tmp_path / "config.json"
    config_path.write_text((config or _config()).model_dump_json(), encoding="utf-8")
    log = tmp_path / "termination-log"
    arguments = [
        *("--config", str(config_path), "--models", str(EXAMPLES)),
        *("--index", index, "--termination-log", str(log)),
        *(("--reported", str(reported)) if reported else ()),
    ]
    code = main(arguments)
    results = [parse_result(text) for text in find_result_texts(capsys.readouterr().out)]
    return _Pod(code, results, log)


def _reported(tmp_path: Path, files: dict[str, bytes]) -> Path:
    """A folder of handed-back ids as the ConfigMap's volume holds it: a file per index."""
    folder = tmp_path / "reported"
    folder.mkdir()
    for index, content in files.items():
        (folder / index).write_bytes(content)
    return folder


def test_a_group_reports_every_variant_and_one_failure_loses_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, results, log = _run_pod(tmp_path, capsys, "0")
    assert [r.variant.index for r in results if r.variant] == [0, 3, 1, 2], "in group order"
    assert [r.status for r in results] == ["ok", "ok", "error", "ok"]
    failed = results[2]
    assert isinstance(failed, ErrorResult) and failed.error.type == "bad_config"
    assert code == ExitCode.BAD_CONFIG
    mlp, bf16 = results[0], results[1]
    assert isinstance(mlp, OkResult) and isinstance(bf16, OkResult)
    assert bf16.applied is not None and bf16.applied.compute_dtype == "bfloat16"
    assert mlp.applied is not None and mlp.applied.compute_dtype == "float32", (
        "casting the second variant left the first one's program alone"
    )
    assert mlp.timings is not None and bf16.timings is not None
    text = log.read_text(encoding="utf-8")
    assert len(text.encode()) <= TERMINATION_LOG_LIMIT
    summary = parse_group_message(text)
    outcomes = [e.outcome if isinstance(e, OmittedResult) else e.status for e in summary]
    assert outcomes == ["ok", "ok", "error", "ok"], "whole, compacted or a stub: all are there"
    assert isinstance(summary[2], ErrorResult) and summary[2].error == failed.error


def test_a_group_tells_each_models_load_once_and_its_process_start_in_every_result(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Pod 0 loads tiny-mlp for variants 0 and 3, and tiny-transformer for 2: the load is
    reported by the first of each model's variants, so the pod's cost is counted once."""
    _, results, _ = _run_pod(tmp_path, capsys, "0")
    timings = {
        r.variant.index: r.timings
        for r in results
        if isinstance(r, OkResult) and r.variant and r.timings
    }
    assert set(timings) == {0, 3, 2}
    mlp, mlp_again, transformer = timings[0], timings[3], timings[2]
    assert mlp.model is not None and mlp_again.model is None and transformer.model is not None
    assert mlp.model.source == "file"
    assert mlp.model.file_bytes == (EXAMPLES / "tiny-mlp.pt2").stat().st_size
    assert transformer.model.file_bytes == (EXAMPLES / "tiny-transformer.pt2").stat().st_size
    assert mlp.load_s >= mlp.model.fetch_s + mlp.model.load_s, "the load is part of load_s"
    for each in (mlp, mlp_again, transformer):
        assert each.copy_s is not None and each.copy_s <= each.load_s
    assert len({each.process_s for each in timings.values()}) == 1, "one process, one start"
    starts = [timings[index].measure_start_s or 0.0 for index in (0, 3, 2)]
    assert 0.0 not in starts and starts == sorted(starts), "each loop after the one before"


def test_a_group_of_one_writes_the_single_result_as_before(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, (result,), log = _run_pod(tmp_path, capsys, "1")
    assert code == ExitCode.OK
    assert parse_result(log.read_text(encoding="utf-8")).variant == result.variant


def test_a_retry_skips_what_an_earlier_attempt_reported(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    """The collector handed back variants 0 and 1 (tiny-cnn's bad inputs, had they been
    listed, would not fail again either): the retry runs 3 and 2 only, and says why."""
    caplog.set_level(logging.INFO, logger="runner")
    config = _config()
    listed = {
        "0": reported_text([config.variants[1].id, config.variants[0].id]).encode(),
        "1": reported_text([config.variants[4].id]).encode(),
    }
    code, results, log = _run_pod(tmp_path, capsys, "0", reported=_reported(tmp_path, listed))
    assert [r.variant.index for r in results if r.variant] == [3, 2]
    assert code == ExitCode.OK, "the variant that failed before is not run again"
    summary = parse_group_message(log.read_text())
    indexes = [
        e.index if isinstance(e, OmittedResult) else e.variant and e.variant.index for e in summary
    ]
    assert indexes == [3, 2]
    skipped = [r.getMessage() for r in caplog.records if "not run again" in r.getMessage()]
    assert [message.split(" (")[0] for message in skipped] == ["variant 0", "variant 1"]


def test_a_list_handed_back_while_the_pod_runs_is_read_before_the_next_variant(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The collector may write the list after the retry started (a kubelet then updates the
    mounted file): what is listed by the time a variant's turn comes is skipped."""
    config = _config()
    reported = _reported(tmp_path, {})
    handed = reported_text([config.variants[1].id, config.variants[2].id])

    def emit_then_hand_back(*arguments: Any) -> None:
        emit(*arguments)
        (reported / "0").write_text(handed)

    monkeypatch.setattr("runner.__main__.emit", emit_then_hand_back)
    results = _run_pod(tmp_path, capsys, "0", config, reported).results
    assert [r.variant.index for r in results if r.variant] == [0, 3], "1 and 2 were listed"


@pytest.mark.parametrize(
    "content",
    [b"not-an-id\n", b"v" * (MAX_REPORTED_BYTES + 1)],
    ids=["no variant id", "too large"],
)
def test_a_handed_back_file_that_is_not_the_collectors_runs_everything(
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    content: bytes,
) -> None:
    reported = _reported(tmp_path, {"1": content})
    code, (result,), _ = _run_pod(tmp_path, capsys, "1", reported=reported)
    assert result.status == "ok"
    assert code == ExitCode.OK
    assert any("running every variant" in record.getMessage() for record in caplog.records)


def test_the_summary_of_32_full_results_fits_as_stubs_failures_kept_longest() -> None:
    config = _config().model_copy(update={"groups": None})
    big = ok_result(config.model_dump(mode="json"), 0)
    assert big.variant is not None
    results: list[OkResult | ErrorResult] = [
        big.model_copy(
            update={"variant": big.variant.model_copy(update={"index": i, "id": f"v{i:012x}"})}
        )
        for i in range(31)
    ]
    error = ErrorResult(variant=big.variant, error={"type": "internal", "message": "x" * 500})
    text = termination_message([*results, error])
    assert len(text.encode()) <= TERMINATION_LOG_LIMIT
    entries = parse_group_message(text)
    assert len(entries) == 32
    assert isinstance(entries[-1], ErrorResult), "the failure keeps its words longest"
    assert all(isinstance(e, OmittedResult | OkResult) for e in entries[:-1])
    assert any(isinstance(e, OmittedResult) and e.outcome == "ok" for e in entries)


def test_a_stub_of_a_result_naming_no_variant_reads_back() -> None:
    """A SIGTERM between two variants is the group's failure, naming none; where even it
    must become a stub, the stub (its index and id, None, left out) still parses."""
    config = _config().model_copy(update={"groups": None})
    big = ok_result(config.model_dump(mode="json"), 0)
    assert big.variant is not None
    results: list[BenchResult] = [
        big.model_copy(
            update={"variant": big.variant.model_copy(update={"index": i, "id": f"v{i:012x}"})}
        )
        for i in range(4)
    ]
    results.append(ErrorResult(error={"type": "terminated", "message": "x" * 4000}))
    # Room for the five stubs (308 bytes) and no more: the failure is a stub too.
    entries = parse_group_message(termination_message(results, limit=320))
    assert len(entries) == 5
    last = entries[-1]
    assert isinstance(last, OmittedResult) and (last.index, last.id) == (None, None)
    assert last.outcome == "error"


def test_every_size_of_group_summary_is_the_adapters_own_array_of_the_least_compacted_fit() -> None:
    # The message is assembled from entries dumped one by one: it has to be byte for byte
    # what the collector's adapter reads and writes, at each compaction step and with stubs.
    config = _config().model_copy(update={"groups": None})
    big = ok_result(config.model_dump(mode="json"), 0)
    assert big.variant is not None
    environment = Environment(
        python="3.11", torch="2.9", device="cpu", device_name="x" * 300, cpu_model="cpu",
        threads=1, hostname="h",
    )  # fmt: skip
    results: list[BenchResult] = []
    for i in range(32):
        variant = big.variant.model_copy(update={"index": i, "id": f"v{i:012x}"})
        samples = encode([1_000_000 + 7919 * j % 50_000 for j in range(40 * i + 1)])
        update = {"variant": variant, "samples": samples, "environment": environment}
        results.append(big.model_copy(update=update))
        if i % 5 == 4:
            results.append(
                ErrorResult(variant=variant, error={"type": "internal", "message": "é" * 90 * i})
            )
    # The samples never travel in the message: a result without them is whole there.
    summaries = [
        r.model_copy(update={"samples": None, "samples_in_log": True})
        if isinstance(r, OkResult)
        else r
        for r in results
    ]
    seen = set()
    for count in range(2, len(results) + 1):
        text = termination_message(results[:count])
        assert len(text.encode()) <= TERMINATION_LOG_LIMIT
        entries = parse_group_message(text)
        assert GROUP_ADAPTER.dump_json(entries, exclude_none=True).decode() == text
        assert len(entries) == count
        assert not any(isinstance(entry, OkResult) and entry.samples for entry in entries)
        whole = GROUP_ADAPTER.dump_json([*summaries[:count]], exclude_none=True)
        compacted = any(getattr(entry, "compacted", False) for entry in entries)
        assert compacted == (len(whole) > TERMINATION_LOG_LIMIT), "compacted only when needed"
        seen.add(
            "stubs"
            if any(isinstance(entry, OmittedResult) for entry in entries)
            else "compacted"
            if compacted
            else "whole"
        )
    assert seen == {"whole", "compacted", "stubs"}


def test_the_exit_code_of_a_group_is_its_most_severe_class() -> None:
    assert most_severe([]) == ExitCode.OK
    assert most_severe([ExitCode.OK, ExitCode.BAD_CONFIG]) == ExitCode.BAD_CONFIG
    assert most_severe([ExitCode.BAD_CONFIG, ExitCode.MODEL_LOAD]) == ExitCode.MODEL_LOAD
    assert most_severe([ExitCode.MODEL_LOAD, ExitCode.TERMINATED]) == ExitCode.TERMINATED
    # A download cut off may pass on a retry; a wrong digest never does.
    assert most_severe([ExitCode.MODEL_MISMATCH, ExitCode.DOWNLOAD_FAILED]) == (
        ExitCode.DOWNLOAD_FAILED
    )
    assert most_severe([ExitCode.OK, ExitCode.DOWNLOAD_UNTRUSTED]) == ExitCode.DOWNLOAD_UNTRUSTED


def test_a_groups_compaction_steps_add_up_as_a_single_results_do() -> None:
    """Two results that fit once both their samples and their environment are left out:
    each step builds on the ones before, so the group needs no stubs (a step applied to
    the whole results alone brought the samples back and left only stubs)."""
    config = _config().model_copy(update={"groups": None})
    big = ok_result(config.model_dump(mode="json"), 0)
    assert big.variant is not None
    environment = Environment(
        python="3.11", torch="2.9", device="cpu", device_name="x" * 1700, cpu_model="cpu",
        threads=1, hostname="h",
    )  # fmt: skip
    samples = encode([1_000_000 + (i * 7919) % 500_000 for i in range(1000)])
    first = big.model_copy(update={"samples": samples, "environment": environment})
    second = first.model_copy(
        update={"variant": big.variant.model_copy(update={"index": 1, "id": "v1"})}
    )
    assert len(compact(first).encode()) > TERMINATION_LOG_LIMIT // 2, "one alone needs the step"
    text = termination_message([first, second])
    entries = parse_group_message(text)
    assert all(isinstance(e, OkResult) and e.compacted for e in entries)
    assert all(isinstance(e, OkResult) and e.samples is None and e.environment is None
               for e in entries)  # fmt: skip
