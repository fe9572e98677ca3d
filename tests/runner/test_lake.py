"""The runner's results in the pod's result lake (runner/lake.py): written whole where the
store takes them, and where it cannot (down, a bad address, hanging), every result still
travels whole in the log line and summarised in the termination message, saying why."""

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from contract.config import POD_NAME_ENV
from contract.errors import ExitCode
from contract.lake import (
    ACCESS_KEY_ENV,
    CLUSTER_ENV,
    ENDPOINT_ENV,
    JOB_NAME_ENV,
    RESULTS_URL_ENV,
    SECRET_KEY_ENV,
    StoredObject,
)
from contract.result import (
    TERMINATION_LOG_LIMIT,
    ErrorResult,
    OkResult,
    OmittedResult,
    parse_group_message,
    parse_result,
    termination_message,
)
from contract.variant import VariantRef
from runner.lake import ResultLake
from tests.runner.conftest import MakeConfig
from tests.runner.test_main import run_main, write_config

SECRET = "wJalrXUtnFEMI-never-printed"


@pytest.fixture
def refused_port() -> Iterator[int]:
    """A loopback port bound but never listening, so nobody takes it: a store that is down."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield int(held.getsockname()[1])


def lake_env(endpoint: str, **overrides: str) -> dict[str, str]:
    """A pod's env naming a store, as synth writes it."""
    env = {
        RESULTS_URL_ENV: "s3://bench-results/team",
        CLUSTER_ENV: "eu-west",
        JOB_NAME_ENV: "bench-test-0a1b2c",
        POD_NAME_ENV: "bench-test-0a1b2c-0-x7k2p",
        ENDPOINT_ENV: endpoint,
        ACCESS_KEY_ENV: "AKIDRUNNER",
        SECRET_KEY_ENV: SECRET,
        "AWS_REGION": "us-east-1",
    }
    return {**env, **overrides}


@pytest.fixture
def hanging_store() -> Iterator[str]:
    """An endpoint that accepts connections and never answers: a store that hangs."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield f"http://127.0.0.1:{server.getsockname()[1]}"


def _variant(index: int) -> VariantRef:
    return VariantRef(
        index=index,
        id=f"v{index:012x}",
        model="tiny-mlp",
        precision="fp32",
        quantization="none",
        batch_size=2,
    )


def _failure(index: int) -> ErrorResult:
    return ErrorResult(
        workflow="test", variant=_variant(index), error={"type": "internal", "message": "x"}
    )


def test_a_store_that_is_down_costs_the_result_nothing_and_says_so(
    capsys: pytest.CaptureFixture[str],
    make_config: MakeConfig,
    models_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    refused_port: int,
) -> None:
    for name, value in lake_env(f"http://127.0.0.1:{refused_port}").items():
        monkeypatch.setenv(name, value)
    code, result, message = run_main(
        capsys, write_config(make_config(), tmp_path), models_dir, tmp_path
    )
    assert code == ExitCode.OK and isinstance(result, OkResult)
    assert result.stored is None and result.store_error is not None
    assert result.store_error.startswith("unreachable: ")
    assert result.samples is not None, "the log line keeps every sample"
    summary = parse_result(message)
    assert summary == result.model_copy(update={"samples": None, "samples_in_log": True})
    assert SECRET not in message + result.store_error + capsys.readouterr().err


def test_without_a_store_a_result_is_as_before(
    capsys: pytest.CaptureFixture[str],
    make_config: MakeConfig,
    models_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(RESULTS_URL_ENV, raising=False)
    _, result, message = run_main(
        capsys, write_config(make_config(), tmp_path), models_dir, tmp_path
    )
    assert (result.stored, result.store_error) == (None, None)
    assert '"stored' not in message and '"store_error' not in message


def test_a_hanging_store_gets_its_budget_and_no_more(hanging_store: str) -> None:
    lake = ResultLake.from_env(lake_env(hanging_store), "test", budget_s=1.0)
    assert lake is not None
    first, second = (lake.store(_failure(index)) for index in (0, 1))
    assert first.store_error is not None and first.store_error.startswith("timed_out: ")
    assert second.store_error is not None and second.store_error.startswith("not_tried: ")
    assert first.model_copy(update={"store_error": None}) == _failure(0), "nothing else changed"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({POD_NAME_ENV: ""}, "not POD_NAME"),
        ({RESULTS_URL_ENV: f"s3://AKIDRUNNER:{SECRET}@bench-results/team"}, "no credentials"),
        ({RESULTS_URL_ENV: "s3://bench-results/../team"}, "not plain"),
        ({JOB_NAME_ENV: "../other"}, "cannot name a folder"),
    ],
)
def test_a_store_the_pod_cannot_address_is_each_results_store_error(
    change: dict[str, str], words: str
) -> None:
    lake = ResultLake.from_env(lake_env("http://127.0.0.1:9", **change), "test")
    assert lake is not None
    stored = lake.store(_failure(0))
    assert stored.store_error is not None and stored.store_error.startswith("unaddressed: ")
    assert words in stored.store_error
    assert SECRET not in stored.store_error


def test_a_result_naming_no_variant_is_not_stored(hanging_store: str) -> None:
    lake = ResultLake.from_env(lake_env(hanging_store), "test")
    assert lake is not None
    nameless = ErrorResult(error={"type": "bad_config", "message": "no config.json"})
    assert lake.store(nameless) == nameless, "a pod's failure before any variant, as before"


def _stored(index: int) -> StoredObject:
    return StoredObject(
        key=f"team/raw/test/eu-west/bench-test-0a1b2c/v{index:012x}/bench-test-0a1b2c-0-x7k2p.json",
        sha256=f"{index:064x}",
        bytes=123_456,
    )


def test_every_compaction_keeps_the_stored_object_and_the_store_error() -> None:
    long = _failure(0).model_copy(
        update={"error": _failure(0).error.model_copy(update={"message": "y" * 5000})}
    )
    stored = parse_result(termination_message([long.model_copy(update={"stored": _stored(0)})]))
    assert stored.compacted and stored.stored == _stored(0)
    failed = parse_result(termination_message([long.model_copy(update={"store_error": "full"})]))
    assert failed.compacted and failed.store_error == "full"


def test_24_stubs_keep_their_digests_and_32_fit_without() -> None:
    """A group's stubs keep the digest (the key is the pod's, derived from the stub's id),
    so a grouped pod's results are read from the lake and not from its log."""
    big = "z" * 1200

    def results(count: int) -> list[OkResult | ErrorResult]:
        return [
            _failure(i).model_copy(
                update={"error": _failure(i).error.model_copy(update={"message": big})}
            )
            for i in range(count)
        ]

    def stored(count: int) -> list[OkResult | ErrorResult]:
        return [r.model_copy(update={"stored": _stored(i)}) for i, r in enumerate(results(count))]

    for count in (24, 32):
        text = termination_message(stored(count))
        assert len(text.encode()) <= TERMINATION_LOG_LIMIT
        entries = parse_group_message(text)
        assert len(entries) == count and all(isinstance(e, OmittedResult) for e in entries)
        digests = [e.sha256 for e in entries if isinstance(e, OmittedResult)]
        if count == 24:
            assert digests == [_stored(i).sha256 for i in range(count)]
        else:
            assert None in digests
