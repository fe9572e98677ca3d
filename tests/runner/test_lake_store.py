"""The runner against the real S3 server (SeaweedFS on loopback, tests/lakeserver.py): each
variant's whole result written once where the termination message says, with the digest
of its bytes; and every fault a store has (stopped, 403, full, hanging, cut mid-upload)
falling back to the message and the log line, saying why, in bounded time."""

import os
from pathlib import Path

import pytest

from contract.config import POD_NAME_ENV, RunConfig
from contract.errors import ExitCode
from contract.lake import (
    CLUSTER_ENV,
    JOB_NAME_ENV,
    RESULTS_URL_ENV,
    StoredObject,
    sha256_of,
)
from contract.objectstore import StoreErrorKind
from contract.result import (
    ErrorResult,
    OkResult,
    parse_group_message,
    parse_result,
)
from contract.variant import VariantRef
from localcluster.lake import Identity
from runner.lake import NOT_TRIED, ResultLake
from tests.lakeserver import FaultyProxy, Lake
from tests.runner.conftest import (
    EXAMPLES,
    MakeConfig,
    group_config,
    group_variant,
    python_m_runner,
)
from tests.runner.test_main import run_main, write_config

WORKFLOW = "test"
POD = "bench-test-0a1b2c-0-x7k2p"


def pod_env(lake: Lake, identity: Identity | None = None) -> dict[str, str]:
    """A pod's env naming `lake`, as `identity` (the workflow's writer by default)."""
    return {
        **lake.env(identity or lake.writer_for(WORKFLOW)),
        RESULTS_URL_ENV: str(lake.url),
        CLUSTER_ENV: "eu-west",
        JOB_NAME_ENV: "bench-test-0a1b2c",
        POD_NAME_ENV: POD,
    }


@pytest.fixture
def in_the_lakes_pod(lake: Lake, monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's environment as a pod of a cluster with `lake` as its store has it."""
    for name, value in pod_env(lake).items():
        monkeypatch.setenv(name, value)


def _read_back(lake: Lake, stored: StoredObject) -> bytes:
    """The object's bytes, as a collector reads them: no more than the message says."""
    return lake.store().get(stored.key, max_bytes=stored.bytes)


def _failure(index: int, message: str = "x") -> ErrorResult:
    variant = VariantRef(
        index=index,
        id=f"v{index:012x}",
        model="tiny-mlp",
        precision="fp32",
        quantization="none",
        batch_size=2,
    )
    return ErrorResult(
        workflow=WORKFLOW, variant=variant, error={"type": "internal", "message": message}
    )


def _keys(lake: Lake) -> list[str]:
    return [listed.key for listed in lake.store().list(lake.url.key(""))]


@pytest.mark.usefixtures("in_the_lakes_pod")
def test_a_run_writes_its_whole_result_once_where_the_message_says(
    lake: Lake,
    capsys: pytest.CaptureFixture[str],
    make_config: MakeConfig,
    models_dir: Path,
    tmp_path: Path,
) -> None:
    code, line, message = run_main(
        capsys, write_config(make_config(), tmp_path), models_dir, tmp_path
    )
    assert code == ExitCode.OK and isinstance(line, OkResult)
    summary = parse_result(message)
    stored = summary.stored
    assert stored is not None and summary.store_error is None and line.stored == stored
    assert stored.key == lake.url.key(
        "raw", WORKFLOW, "eu-west", "bench-test-0a1b2c", "v000000000000", f"{POD}.json"
    )
    data = _read_back(lake, stored)
    assert (sha256_of(data), len(data)) == (stored.sha256, stored.bytes)
    whole = parse_result(data)
    assert whole == line.model_copy(update={"stored": None}), "every field, every sample"
    assert isinstance(whole, OkResult) and whole.samples is not None
    assert len(whole.samples.durations_ns()) == whole.latency.count
    assert b'"stored"' not in data, "the object cannot carry its own digest"
    assert _keys(lake) == [stored.key], "written once"


def test_a_groups_pod_writes_an_object_per_variant_and_its_message_names_each(
    lake: Lake, tmp_path: Path
) -> None:
    """The pod's own process (boto3 imported, the write's thread, the exit at once)."""
    variants = (group_variant(0, "tiny-mlp"), group_variant(1, "tiny-mlp", "bf16"))
    config: RunConfig = group_config(variants, ((0, 1),))
    log = tmp_path / "termination-log"
    done = python_m_runner(
        {
            "PATH": os.environ["PATH"],
            "CONFIG_PATH": str(write_config(config, tmp_path)),
            "MODEL_PATH": str(EXAMPLES),
            "JOB_COMPLETION_INDEX": "0",
            "TERMINATION_LOG": str(log),
            **pod_env(lake),
        }
    )
    assert done.returncode == ExitCode.OK, done.stderr
    entries = parse_group_message(log.read_text(encoding="utf-8"))
    results = [entry for entry in entries if isinstance(entry, OkResult)]
    stored = [entry.stored for entry in results]
    assert len(stored) == 2 and None not in stored
    for entry, where in zip(results, stored, strict=True):
        assert where is not None
        whole = parse_result(_read_back(lake, where))
        assert whole.variant == entry.variant and isinstance(whole, OkResult)
        assert whole.samples is not None and whole.environment is not None
    assert sorted(_keys(lake)) == sorted(where.key for where in stored if where)
    assert lake.writer_for(WORKFLOW).secret_key not in done.stdout + done.stderr


def _assert_fell_back(
    result: OkResult | ErrorResult, kind: str, lake: Lake, original: ErrorResult
) -> None:
    assert result.stored is None and result.store_error is not None
    assert result.store_error.startswith(f"{kind}: "), result.store_error
    assert result.model_copy(update={"store_error": None}) == original, "the result untouched"
    assert lake.server.admin.secret_key not in result.store_error


@pytest.mark.usefixtures("in_the_lakes_pod")
def test_a_store_stopped_for_the_whole_run_costs_nothing_and_says_unreachable(
    lake: Lake,
    capsys: pytest.CaptureFixture[str],
    make_config: MakeConfig,
    models_dir: Path,
    tmp_path: Path,
) -> None:
    with lake.stopped():
        code, line, message = run_main(
            capsys, write_config(make_config(), tmp_path), models_dir, tmp_path
        )
    assert code == ExitCode.OK and isinstance(line, OkResult) and line.samples is not None
    summary = parse_result(message)
    assert summary.store_error is not None
    assert summary.store_error.startswith(f"{StoreErrorKind.UNREACHABLE.value}: ")
    assert summary == line.model_copy(update={"samples": None, "samples_in_log": True})
    assert _keys(lake) == []


def test_another_workflows_credentials_are_denied_and_the_result_falls_back(lake: Lake) -> None:
    writer = ResultLake.from_env(pod_env(lake, lake.writer_for("other")), WORKFLOW)
    assert writer is not None
    _assert_fell_back(writer.store(_failure(0)), "denied", lake, _failure(0))
    assert _keys(lake) == []


@pytest.mark.slow
def test_a_full_bucket_falls_back(full_lake: Lake) -> None:
    """SeaweedFS answers a write to a bucket over its quota 403 (tests/lake/test_store.py),
    so the runner says `denied`; S3's own `full` kinds are the store's to classify."""
    writer = ResultLake.from_env(pod_env(full_lake, full_lake.server.admin), WORKFLOW)
    assert writer is not None
    _assert_fell_back(writer.store(_failure(0)), "denied", full_lake, _failure(0))
    assert _keys(full_lake) == []


def test_a_hanging_store_holds_the_pod_no_longer_than_the_budget(lake: Lake) -> None:
    writer = ResultLake.from_env(pod_env(lake), WORKFLOW, budget_s=2.0)
    assert writer is not None
    with lake.paused():
        first, second = writer.store(_failure(0)), writer.store(_failure(1))
    _assert_fell_back(first, StoreErrorKind.TIMED_OUT.value, lake, _failure(0))
    _assert_fell_back(second, NOT_TRIED, lake, _failure(1))


def test_an_upload_cut_once_is_retried_and_written_whole(lake: Lake) -> None:
    big = _failure(0, "y" * 20_000)
    with lake.through(FaultyProxy(after=4096, fault="cut")) as env:
        writer = ResultLake.from_env({**pod_env(lake), **_endpoint(env)}, WORKFLOW)
        assert writer is not None
        stored = writer.store(big).stored
    assert stored is not None
    data = _read_back(lake, stored)
    assert sha256_of(data) == stored.sha256 and parse_result(data) == big


def test_an_upload_cut_on_every_attempt_falls_back_and_leaves_no_part(lake: Lake) -> None:
    big = _failure(0, "y" * 20_000)
    with lake.through(FaultyProxy(after=4096, fault="cut", faulty=10)) as env:
        writer = ResultLake.from_env({**pod_env(lake), **_endpoint(env)}, WORKFLOW)
        assert writer is not None
        result = writer.store(big)
    _assert_fell_back(result, StoreErrorKind.UNREACHABLE.value, lake, big)
    assert _keys(lake) == [], "no half an object"


def test_an_upload_stalled_midway_is_bounded_by_the_budget(lake: Lake) -> None:
    big = _failure(0, "y" * 20_000)
    with lake.through(FaultyProxy(after=4096, fault="stall", faulty=10)) as env:
        writer = ResultLake.from_env({**pod_env(lake), **_endpoint(env)}, WORKFLOW, budget_s=2.0)
        assert writer is not None
        result = writer.store(big)
    _assert_fell_back(result, StoreErrorKind.TIMED_OUT.value, lake, big)


def _endpoint(env: dict[str, str]) -> dict[str, str]:
    return {"AWS_ENDPOINT_URL": env["AWS_ENDPOINT_URL"]}
