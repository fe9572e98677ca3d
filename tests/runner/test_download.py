"""A `url` model comes from a real https server on loopback whose certificate a company CA
issued: trusted through the model's CA bundle, resumed where a connection dropped, verified
as it streams, never loaded incomplete, and each failure its own exit code, retried only
where a retry can help."""

import logging
import shutil
import tempfile
from pathlib import Path

import pytest

from contract.config import RunConfig
from contract.errors import DETERMINISTIC, ExitCode
from contract.result import ErrorResult, OkResult, parse_result_line
from runner.download import MAX_IDLE_ATTEMPTS, fetch
from runner.errors import ConfigError, DownloadFailed, DownloadRefused, DownloadUntrusted
from tests.model_server import Authority, Behaviour, ModelServer, Request, make_authority
from tests.runner.conftest import (
    EXAMPLES,
    MakeConfig,
    group_config,
    group_variant,
    python_m_runner,
    sha256_of,
)
from tests.runner.test_main import run_main, write_config

BUNDLE = "ca-company.pem"
MODEL = EXAMPLES / "tiny-mlp.pt2"


@pytest.fixture
def ca_dir(company_ca: Authority, tmp_path: Path) -> Path:
    """CA_PATH as synth's ConfigMap fills it: the company CA's certificate under its key."""
    folder = tmp_path / "ca"
    folder.mkdir()
    shutil.copyfile(company_ca.certificate, folder / BUNDLE)
    return folder


@pytest.fixture
def served(model_server: ModelServer) -> str:
    """The URL of tiny-mlp on the model server."""
    return model_server.add("tiny-mlp.pt2", MODEL.read_bytes())


def url_config(
    make_config: MakeConfig, url: str, sha256: str | None = None, **download: object
) -> RunConfig:
    """config.json for tiny-mlp from `url`, as synth writes it for a url model whose spec
    names the company's bundle (override with `download`)."""
    config = make_config("tiny-mlp", source="url", location=url, sha256=sha256)
    model = config.models["tiny-mlp"].model_copy(update={"ca_bundle": BUNDLE, **download})
    return config.model_copy(update={"models": {"tiny-mlp": model}})


def run_url_model(
    capsys: pytest.CaptureFixture[str], config: RunConfig, ca_dir: Path, tmp_path: Path
) -> tuple[int, ErrorResult | OkResult]:
    """main() on `config`, its downloads trusting `ca_dir`: the exit code and the result."""
    code, result, _ = run_main(
        capsys, write_config(config, tmp_path), tmp_path, tmp_path, ca=ca_dir
    )
    assert isinstance(result, ErrorResult | OkResult)
    return code, result


@pytest.mark.slow
def test_python_m_runner_downloads_through_the_company_ca_once_per_pod(
    make_config: MakeConfig, ca_dir: Path, served: str, model_server: ModelServer, tmp_path: Path
) -> None:
    """Two variants of the model in one pod: one download, and the runner's log says how it
    went. The image's own CAs do not know the company's: only the bundle makes it work."""
    model = url_config(make_config, served).models["tiny-mlp"]
    config = group_config((group_variant(0, "tiny-mlp"), group_variant(1, "tiny-mlp")), ((0, 1),))
    config = config.model_copy(update={"models": {"tiny-mlp": model}})
    env = {
        "CONFIG_PATH": str(write_config(config, tmp_path)),
        "CA_PATH": str(ca_dir),
        "TERMINATION_LOG": str(tmp_path / "termination-log"),
        "TMPDIR": str(tmp_path),
        "PATH": "/usr/bin:/bin",
    }
    done = python_m_runner(env, timeout_s=300)
    assert done.returncode == ExitCode.OK, done.stderr
    results = [parse_result_line(line) for line in done.stdout.splitlines()]
    assert [type(result) for result in results] == [OkResult, OkResult]
    assert model_server.requests == [Request("/tiny-mlp.pt2", None)]
    assert f"downloading {served}" in done.stderr and "sha256 verified" in done.stderr
    assert not list(tmp_path.glob("benchfleet-*")), "the download does not outlive the pod"


def test_a_connection_dropped_midway_is_resumed_from_where_it_stopped(
    capsys: pytest.CaptureFixture[str],
    make_config: MakeConfig,
    ca_dir: Path,
    served: str,
    model_server: ModelServer,
    tmp_path: Path,
) -> None:
    model_server.behaviour = Behaviour(drop_after=20_000, drops=2)
    code, result = run_url_model(capsys, url_config(make_config, served), ca_dir, tmp_path)
    assert code == ExitCode.OK and isinstance(result, OkResult)
    assert [request.range for request in model_server.requests] == [
        None,
        "bytes=20000-",
        "bytes=40000-",
    ]
    assert model_server.sent == MODEL.stat().st_size, "no byte was sent twice"


def _another_ca(ca_dir: Path, tmp_path: Path) -> None:
    other = make_authority(tmp_path / "other", "other-ca")
    shutil.copyfile(other.certificate, ca_dir / BUNDLE)


@pytest.mark.parametrize(
    ("failure", "exit_code", "error_type", "said", "requests"),
    [
        ("another CA", ExitCode.DOWNLOAD_UNTRUSTED, "download_untrusted", "not trusted", 0),
        ("404", ExitCode.DOWNLOAD_REFUSED, "download_refused", "answered HTTP 404", 1),
        ("other bytes", ExitCode.MODEL_MISMATCH, "model_mismatch", "holds another file", 1),
        ("too large", ExitCode.MODEL_MISMATCH, "model_mismatch", "more than the 1,000", 1),
    ],
)
def test_a_failure_no_retry_can_mend_is_tried_once_and_fails_the_index_at_once(
    capsys: pytest.CaptureFixture[str],
    make_config: MakeConfig,
    ca_dir: Path,
    served: str,
    model_server: ModelServer,
    tmp_path: Path,
    failure: str,
    exit_code: ExitCode,
    error_type: str,
    said: str,
    requests: int,
) -> None:
    """Each says what to change, and none advises `make synth`, which changes nothing for a
    model on a server. (A certificate refused never reaches an HTTP request.)"""
    if failure == "another CA":
        _another_ca(ca_dir, tmp_path)
    config = {
        "another CA": url_config(make_config, served),
        "404": url_config(make_config, f"{served}.missing", sha256_of(MODEL)),
        "other bytes": url_config(make_config, served, "0" * 64),
        "too large": url_config(make_config, served, size_bytes=1000),
    }[failure]
    code, result = run_url_model(capsys, config, ca_dir, tmp_path)
    assert code == exit_code and code in DETERMINISTIC
    assert isinstance(result, ErrorResult) and result.error.type == error_type
    assert said in result.error.message and "make synth" not in result.error.message
    assert len(model_server.requests) == requests


@pytest.mark.usefixtures("export_load_forbidden")
def test_a_server_that_dies_midway_is_retried_by_the_job_and_its_part_never_loaded(
    capsys: pytest.CaptureFixture[str],
    make_config: MakeConfig,
    ca_dir: Path,
    served: str,
    model_server: ModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The server sends 20 kB and stops answering: the runner tries again, gives up after
    its attempts with no progress, deletes the part it has and never hands it to torch (the
    fixture fails the test if torch.export.load is called). The exit code is one the Job
    retries: the server may be back for the next pod."""
    model_server.behaviour = Behaviour(drop_after=20_000, drops=1, dead_after=1)
    monkeypatch.setattr("runner.download.MAX_BACKOFF_S", 0.0)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    code, result = run_url_model(capsys, url_config(make_config, served), ca_dir, tmp_path)
    assert code == ExitCode.DOWNLOAD_FAILED and code not in DETERMINISTIC
    assert isinstance(result, ErrorResult) and result.error.type == "download_failed"
    assert f"({MAX_IDLE_ATTEMPTS} in a row with no progress)" in result.error.message
    assert "20,000 bytes of " in result.error.message
    assert len(model_server.requests) == 1 + MAX_IDLE_ATTEMPTS
    assert [path.name for path in scratch.rglob("*") if path.is_file()] == []


def test_a_server_error_is_retried_and_the_download_goes_on(
    make_config: MakeConfig, ca_dir: Path, served: str, model_server: ModelServer, tmp_path: Path
) -> None:
    model_server.behaviour = Behaviour(unavailable=1)
    model = url_config(make_config, served).models["tiny-mlp"]
    path = fetch(model, tmp_path, ca_dir)
    assert sha256_of(path) == model.sha256 and path.name == f"{model.sha256}.pt2"
    assert len(model_server.requests) == 2


def test_a_server_that_ignores_ranges_is_read_again_from_the_start(
    make_config: MakeConfig, ca_dir: Path, served: str, model_server: ModelServer, tmp_path: Path
) -> None:
    model_server.behaviour = Behaviour(drop_after=20_000, drops=1, ignore_ranges=True)
    model = url_config(make_config, served).models["tiny-mlp"]
    assert sha256_of(fetch(model, tmp_path, ca_dir)) == model.sha256
    assert [request.range for request in model_server.requests] == [None, "bytes=20000-"]


def test_the_time_budget_bounds_a_stalled_download(
    make_config: MakeConfig, ca_dir: Path, served: str, model_server: ModelServer, tmp_path: Path
) -> None:
    """A server that sends headers and then nothing for a minute: the budget of 1 s ends it,
    whatever the load on this machine (the stall is 60 times the budget)."""
    model_server.behaviour = Behaviour(stall_s=60.0)
    model = url_config(make_config, served, download_budget_s=1.0).models["tiny-mlp"]
    with pytest.raises(DownloadFailed, match="time budget of 1 s ran out"):
        fetch(model, tmp_path, ca_dir)
    assert list(tmp_path.glob("*.p*")) == []


def test_a_redirect_to_plain_http_is_refused(
    make_config: MakeConfig, ca_dir: Path, served: str, model_server: ModelServer, tmp_path: Path
) -> None:
    model_server.behaviour = Behaviour(redirect_to="http://localhost/tiny-mlp.pt2")
    model = url_config(make_config, served).models["tiny-mlp"]
    with pytest.raises(DownloadRefused, match="which is not https"):
        fetch(model, tmp_path, ca_dir)


def test_without_the_bundle_the_company_ca_is_not_trusted(
    make_config: MakeConfig, served: str, model_server: ModelServer, tmp_path: Path
) -> None:
    """Nothing else trusts it: not the image, not an option that turns verification off."""
    model = url_config(make_config, served, ca_bundle=None).models["tiny-mlp"]
    with pytest.raises(DownloadUntrusted, match=r"name it as ca_bundle in specs/clusters\.yaml"):
        fetch(model, tmp_path, None)
    assert model_server.requests == []


@pytest.mark.parametrize("bundle", ["not a certificate\n", None])
def test_a_bundle_the_pod_cannot_read_is_bad_config(
    make_config: MakeConfig, served: str, tmp_path: Path, bundle: str | None
) -> None:
    ca_dir = tmp_path / "ca"
    ca_dir.mkdir()
    if bundle is not None:
        (ca_dir / BUNDLE).write_text(bundle, encoding="ascii")
    model = url_config(make_config, served).models["tiny-mlp"]
    with pytest.raises(ConfigError, match=f"cannot read the CA bundle {ca_dir / BUNDLE}"):
        fetch(model, tmp_path, ca_dir)


def test_a_url_that_is_not_https_is_refused_before_any_request(
    make_config: MakeConfig, ca_dir: Path, tmp_path: Path
) -> None:
    model = url_config(make_config, "http://localhost/tiny-mlp.pt2").models["tiny-mlp"]
    with pytest.raises(ConfigError, match="is not an https URL"):
        fetch(model, tmp_path, ca_dir)


def test_a_model_once_downloaded_is_not_downloaded_again(
    make_config: MakeConfig, ca_dir: Path, served: str, model_server: ModelServer, tmp_path: Path
) -> None:
    model = url_config(make_config, served).models["tiny-mlp"]
    first = fetch(model, tmp_path, ca_dir)
    assert fetch(model, tmp_path, ca_dir) == first
    assert len(model_server.requests) == 1


def test_a_download_reports_its_progress_and_its_end_in_the_log(
    make_config: MakeConfig,
    ca_dir: Path,
    served: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("runner.download.PROGRESS_EVERY_S", 0.0)
    caplog.set_level(logging.INFO, logger="runner.download")
    fetch(url_config(make_config, served).models["tiny-mlp"], tmp_path, ca_dir)
    said = [record.getMessage() for record in caplog.records]
    size = MODEL.stat().st_size
    assert said[0] == f"downloading {served} (at most 1024.0 MiB)"
    assert any(f"of {size:,} bytes (" in line for line in said[1:-1])
    assert said[-1].startswith(f"downloaded {size:,} bytes in ") and said[-1].endswith("verified")
