"""A team's url model behind its own CA, tried with localrun before a pull request: synth puts
the committed CA bundle in a ConfigMap, and the pod's runner downloads the model from a real
https server on loopback trusting it, with nothing else trusting the company's CA.

The one edit to what synth wrote is the model's URL: the spec admits port 443 only (the
pods' NetworkPolicy), and the test's server listens on a free port.
"""

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from contract.layout import workload_file
from localrun.__main__ import main
from synth.main import synth
from tests.conftest import TEST_DATA
from tests.localrun.conftest import QUICK_PHASE, stored
from tests.model_server import Authority, Behaviour, ModelServer, edit_configs, make_authority
from tests.runner.conftest import EXAMPLES, sha256_of

MODEL = EXAMPLES / "tiny-mlp.pt2"
SPEC = f"""\
id: remote
description: a model from the company's model store
owner: tests
clusters: [alpha]
models:
  - name: mlp
    url: https://localhost/tiny-mlp.pt2
    sha256: {sha256_of(MODEL)}
    size: 200k
benchmark:
  inputs: [{{shape: [64]}}]
targets:
  - gpu_type: cpu
"""


@pytest.fixture
def repo(tmp_path: Path, company_ca: Authority) -> Path:
    """A repository whose fleet trusts the company CA, with the workflow synthesized."""
    root = tmp_path / "repo"
    (root / "specs" / "workflows").mkdir(parents=True)
    (root / "certs").mkdir()
    shutil.copyfile(company_ca.certificate, root / "certs" / "company-ca.pem")
    fleet = (TEST_DATA / "specs" / "clusters.yaml").read_text(encoding="utf-8")
    (root / "specs" / "clusters.yaml").write_text(
        fleet + "ca_bundle: certs/company-ca.pem\n", encoding="utf-8"
    )
    (root / "specs" / "workflows" / "remote.yaml").write_text(SPEC, encoding="utf-8")
    synth(root)
    return root


def serve_from(root: Path, url: str) -> None:
    """Point the synthesized config.json at `url`, with short measurements."""

    def edit(config: dict[str, Any]) -> None:
        config["models"]["mlp"]["location"] = url
        config["warmup"] = config["measure"] = QUICK_PHASE

    edit_configs(root / workload_file("alpha", "remote"), edit)


def test_a_url_model_behind_the_company_ca_runs_locally_and_is_reported(
    repo: Path, model_server: ModelServer
) -> None:
    model_server.behaviour = Behaviour(drop_after=50_000, drops=1)
    serve_from(repo, model_server.add("tiny-mlp.pt2", MODEL.read_bytes()))
    run = CliRunner().invoke(main, ["remote", "--root", str(repo), "--index", "0"])
    assert run.exit_code == 0, run.output
    ((cluster, index, state, p50_ms),) = stored(repo)
    assert (cluster, index, state) == ("local", 0, "succeeded")
    assert p50_ms is not None and p50_ms > 0
    assert [request.range for request in model_server.requests] == [None, "bytes=50000-"]


def test_a_bundle_that_does_not_hold_the_servers_ca_fails_with_its_own_exit_code(
    repo: Path, model_server: ModelServer, tmp_path: Path
) -> None:
    """The server's certificate comes from another CA than the committed one."""
    other = make_authority(tmp_path / "other", "other-ca")
    shutil.copyfile(other.certificate, repo / "certs" / "company-ca.pem")
    synth(repo)
    serve_from(repo, model_server.add("tiny-mlp.pt2", MODEL.read_bytes()))
    run = CliRunner().invoke(main, ["remote", "--root", str(repo), "--index", "0"])
    assert run.exit_code == 1
    assert "runner error download_untrusted (exit 11)" in run.stdout
    assert "the server's certificate is not trusted" in run.stdout
    # The file the team committed, not the content-named key it has in the pod.
    assert "the CA bundle certs/company-ca.pem:" in run.stdout
    assert model_server.requests == []
    assert stored(repo)[0][2] == "failed"
