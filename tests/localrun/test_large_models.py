"""Models of real size tried here before a pull request, as a team brings them: exported with
`benchfleet export`, ResNet-50 pushed with `make push-model` to a registry on loopback and
pulled as an image volume, BERT-base served over https behind the company's CA; localrun runs
the pods through the real runner, stores and reports them. The question a sweep is run for,
asked of every model: which precision, quantization and runtime is fastest within its
accuracy gate, by how much, how sure (tests/large_models.py's sweep). The runner's memory per
model, each in a pod of its own, is tests/cluster/test_large_models.py's: its pods are
started as localrun starts them."""

import shutil
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import localrun.cli
from benchfleet.collector import cli as collector_cli
from contract.layout import LOCAL_CLUSTER, workload_file
from localrun.images import ImageStore
from localrun.loopback_registry import PROGRAM, loopback_registry
from localrun.process import run_process
from localrun.push_model import push_model
from models.large import BERT, RESNET, LargeModel
from store.database import open_store
from synth.main import synth
from tests.conftest import REPO_ROOT
from tests.large_models import (
    CA_BUNDLE,
    EXAMPLES,
    SWEEP,
    check_runtimes_named,
    check_sweep_reports,
    sweep_spec,
)
from tests.localrun.conftest import DATABASE
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


def _run_here(
    workflow: str,
    text: Callable[[str], str],
    models: dict[str, LargeModel],
    registry: str,
    server: ModelServer,
    company_ca: Authority,
    folder: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """Run `workflow` (its spec `text` given the oci: line of ResNet-50, pushed to `registry`;
    BERT-base served by `server`) through localrun in a repository of its own; its root."""
    root = folder / "repo"
    (root / "specs" / "workflows").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "specs" / "clusters.yaml", root / "specs" / "clusters.yaml")
    shutil.copytree(REPO_ROOT / "models" / "examples", root / "models" / "examples")
    (root / CA_BUNDLE).parent.mkdir()
    shutil.copyfile(company_ca.certificate, root / CA_BUNDLE)
    (folder / "push").mkdir()
    pushed = push_model(models[RESNET].path, f"{registry}/team", folder / "push", credentials="")
    spec_text = text(f"    oci: {pushed.pinned}\n")
    (root / "specs" / "workflows" / f"{workflow}.yaml").write_text(spec_text, encoding="utf-8")
    synth(root)
    url = server.add(f"{BERT}.pt2", models[BERT].path.read_bytes())

    def serve(config: dict[str, Any]) -> None:
        config["models"][BERT]["location"] = url

    edit_configs(root / workload_file("us-east", workflow), serve)
    # localrun pulls into the user's image cache; this test's goes with its folder.
    store = ImageStore(folder / "images", credentials="")
    monkeypatch.setattr(localrun.cli, "ImageStore", lambda: store)
    localrun.cli.run_workflow(
        root,
        DATABASE,
        workflow,
        None,
        (),
        lambda plan, watch: run_process(plan, POD_TIMEOUT_S, store, watch),
    )
    return root


def test_a_sweep_of_precision_quantization_and_runtime_over_every_model_is_answered_here(
    large_models: dict[str, LargeModel],
    registry: str,
    model_server: ModelServer,
    company_ca: Authority,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """fp32 and bf16 x none and int8-dynamic eager, and unquantized in each runtime at each
    precision it takes (inductor, aotinductor, onnxruntime), over the example models and the
    real-size ones (BERT-base converted once: tests/large_models.py ONE_COMPILE), each
    model's variants interleaved, in two pods (the examples', the real-size ones'; a pod
    runs at most 32 variants; docs/decisions/tests.md).
    Every result names its runtime, what ran, its conversion time and its accuracy; the
    report in text, JSON and HTML answers each model's question, which runtime included."""
    models = (*EXAMPLES, RESNET, BERT)
    text = partial(sweep_spec, large_models, names=models, models_per_pod=len(EXAMPLES))
    root = _run_here(
        SWEEP, text, large_models, registry, model_server, company_ca, tmp_path, monkeypatch
    )
    with open_store(root / DATABASE) as stored:
        check_runtimes_named(run.variant for run in stored.runs(SWEEP))

    def report(*arguments: str) -> Result:
        return CliRunner().invoke(collector_cli, ["--root", str(root), *arguments])

    check_sweep_reports(report, tmp_path, LOCAL_CLUSTER, models)
    assert len(model_server.requests) == 1, "downloaded once, for the pod of BERT-base"
