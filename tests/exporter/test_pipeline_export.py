"""`benchfleet export --preprocess/--postprocess`: a pipeline's stages, each exported on what
the stage before it returns and checked as a model is, their entry validated by synth, and the
files run as one chain by the runner."""

from pathlib import Path

from click.testing import CliRunner

from benchfleet.cli import cli
from contract.config import InputConfig, ModelConfig, ProgramConfig, RunConfig, VariantConfig
from runner.run import RunPaths, run_variant
from synth.digests import file_sha256
from synth.load import load_specs
from tests.exporter.test_export import FACTORIES, export, root, workflow_with
from tests.runner.conftest import QUICK

__all__ = ["root"]  # the fixture, used by name

POLICY = "models.architectures"
OBSERVATION = ("image=32,32,3:uint8:256", "state=7", "tokens=8:int64:64")


def _inputs(*values: str) -> list[str]:
    return [part for value in values for part in ("--input", value)]


def _config(folder: Path, name: str, inputs: tuple[InputConfig, ...]) -> RunConfig:
    def program(file: str) -> dict[str, str]:
        return {"source": "file", "location": file, "sha256": file_sha256(folder / file)}

    model = ModelConfig(
        **program(f"{name}.pt2"),
        preprocess=ProgramConfig(**program(f"{name}-preprocess.pt2")),
        postprocess=ProgramConfig(**program(f"{name}-postprocess.pt2")),
    )
    variant = VariantConfig(
        index=0,
        id="v000000000000",
        model=name,
        precision="fp32",
        quantization="none",
        batch_size=2,
        inputs=inputs,
    )
    return RunConfig(
        workflow="export",
        target="cpu",
        device_type="cpu",
        gpus=0,
        warmup=QUICK,
        measure=QUICK,
        models={name: model},
        variants=(variant,),
    )


def test_the_policys_stages_export_validate_and_run_as_one_chain(root: Path) -> None:
    out = root / "models" / "policy.pt2"
    run = CliRunner().invoke(
        cli,
        [
            *("--root", str(root), "export", f"{POLICY}:TinyPolicy"),
            *_inputs(*OBSERVATION),
            *("--preprocess", f"{POLICY}:PolicyPreprocess"),
            *("--postprocess", f"{POLICY}:PolicyPostprocess"),
            *("--out", str(out)),
        ],
    )
    assert run.exit_code == 0, run.output
    folder = out.parent
    assert sorted(p.name for p in folder.iterdir()) == [
        "policy-postprocess.pt2",
        "policy-preprocess.pt2",
        "policy.pt2",
    ]
    entry = run.stdout
    assert "    inputs: [{shape: [32, 32, 3], dtype: uint8}, {shape: [7]}, {shape: [8]" in entry
    assert "      outputs: [{shape: [3, 32, 32]}, {shape: [7]}, {shape: [8], dtype: int64}]" in (
        entry
    )
    # synth takes the entry as printed: its stages' records fit the chain and the model's file.
    spec = root / "specs" / "workflows" / "mine.yaml"
    spec.write_text(workflow_with(entry), encoding="utf-8")
    (loaded,) = load_specs(root, [spec]).workflows
    assert loaded.workflow.models[0].preprocess is not None
    # The runner loads the three files and runs them as one chain.
    observation = (
        InputConfig(shape=(32, 32, 3), dtype="uint8"),
        InputConfig(shape=(7,), dtype="float32"),
        InputConfig(shape=(8,), dtype="int64"),
    )
    config = _config(folder, "policy", observation)
    result = run_variant(config, config.variants[0], RunPaths(folder, root / "scratch"))
    assert result.stages is not None and set(result.stages) == {
        "preprocess",
        "model",
        "postprocess",
    }
    assert result.accuracy is not None and result.accuracy.max_abs_error == 0.0


def test_a_torchvision_transform_a_classifier_and_an_argmax_head(root: Path) -> None:
    out = root / "models" / "classifier.pt2"
    run = export(
        root,
        "classifier",
        "--arg",
        "classes=10",
        *_inputs("32,32,3:uint8:256"),
        "--preprocess",
        f"{FACTORIES}:ToTensor",
        "--postprocess",
        f"{FACTORIES}:Argmax",
        "--out",
        str(out),
    )
    assert run.exit_code == 0, run.output
    assert "      inputs: [{shape: [10]}]\n      outputs: [{shape: [], dtype: int64}]\n" in (
        run.stdout
    )
    config = _config(out.parent, "classifier", (InputConfig(shape=(32, 32, 3), dtype="uint8"),))
    result = run_variant(config, config.variants[0], RunPaths(out.parent, root / "scratch"))
    assert result.applied is not None and result.applied.output_dtype == "int64"


def test_a_refused_stage_writes_none_of_the_pipeline(root: Path) -> None:
    out = root / "models" / "classifier.pt2"
    out.parent.mkdir(parents=True)
    out.write_bytes(b"before")
    run = export(
        root,
        "classifier",
        *_inputs("32,32,3:uint8:256"),
        "--preprocess",
        f"{FACTORIES}:ToTensor",
        "--postprocess",
        f"{FACTORIES}:Broken",
        "--out",
        str(out),
    )
    assert run.exit_code != 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["classifier.pt2"]
    assert out.read_bytes() == b"before"
