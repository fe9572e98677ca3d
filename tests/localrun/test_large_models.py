"""Models of real size tried here before a pull request, as a team brings them: exported with
`benchfleet export`, ResNet-50 pushed with `make push-model` to a registry on loopback and
pulled as an image volume, BERT-base served over https behind the company's CA; localrun runs
the pods through the real runner, stores and reports them, and the runner's memory per model
stays within the goal."""

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import localrun.cli
from collector.store import open_store
from contract.layout import workload_file
from localrun.images import ImageStore
from localrun.loopback_registry import PROGRAM, loopback_registry
from localrun.process import run_process
from localrun.push_model import push_model
from models.large import BERT, RESNET, LargeModel
from synth.main import synth
from tests.conftest import REPO_ROOT
from tests.large_models import BASELINE, CA_BUNDLE, WORKFLOW, rss_per_byte, spec
from tests.localrun.test_process import DATABASE
from tests.model_server import Authority, ModelServer, edit_configs

pytestmark = [
    pytest.mark.large_model,
    pytest.mark.skipif(shutil.which(PROGRAM) is None, reason="needs Debian's docker-registry"),
]
POD_TIMEOUT_S = 900


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[str]:
    with loopback_registry(tmp_path / "registry") as address:
        yield address


def test_real_sized_models_run_here_from_a_registry_and_the_company_server(
    large_models: dict[str, LargeModel],
    registry: str,
    model_server: ModelServer,
    company_ca: Authority,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = tmp_path / "repo"
    (root / "specs" / "workflows").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "specs" / "clusters.yaml", root / "specs" / "clusters.yaml")
    shutil.copytree(REPO_ROOT / "models" / "examples", root / "models" / "examples")
    (root / CA_BUNDLE).parent.mkdir()
    shutil.copyfile(company_ca.certificate, root / CA_BUNDLE)
    (tmp_path / "push").mkdir()
    pushed = push_model(
        large_models[RESNET].path, f"{registry}/team", tmp_path / "push", credentials=""
    )
    workflow = spec(large_models, f"    oci: {pushed.pinned}\n")
    (root / "specs" / "workflows" / f"{WORKFLOW}.yaml").write_text(workflow, encoding="utf-8")
    synth(root)
    url = model_server.add(f"{BERT}.pt2", large_models[BERT].path.read_bytes())

    def serve(config: dict[str, Any]) -> None:
        config["models"][BERT]["location"] = url

    edit_configs(root / workload_file("us-east", WORKFLOW), serve)
    # localrun pulls into the user's image cache; this test's goes with its folder.
    store = ImageStore(tmp_path / "images", credentials="")
    monkeypatch.setattr(localrun.cli, "ImageStore", lambda: store)
    localrun.cli.run_workflow(
        root, DATABASE, WORKFLOW, None, (), lambda plan: run_process(plan, POD_TIMEOUT_S, store)
    )
    report = capsys.readouterr().out
    print(report)  # the report a team reads: shown with -s
    with open_store(root / DATABASE) as stored:
        variants = [run.variant for run in stored.runs(WORKFLOW)]
    ratios = rss_per_byte(variants, large_models)
    print(f"runner peak RSS above {BASELINE}'s, per byte of the model: {ratios}")
    for model in (BASELINE, RESNET, BERT):
        assert model in report
    assert len(model_server.requests) == 1, "downloaded once"
