"""A model run between its preprocess and postprocess: the stages load with the model's checks,
each query runs and times the whole chain, and the accuracy pass compares the chain's output."""

import shutil
from pathlib import Path

import pytest
import torch

from contract.config import (
    InputConfig,
    ModelConfig,
    PhaseConfig,
    ProgramConfig,
    RunConfig,
    VariantConfig,
    program_name,
)
from contract.errors import ExitCode
from contract.inputs import Dimension, ExpectedInput, GivenInput, handover_misfit
from contract.variant import Precision, Runtime
from models.make_models import POLICY
from runner.__main__ import main
from runner.errors import ModelMismatch, StageMismatch
from runner.inputs import draw_inputs
from runner.loading import load_verified
from runner.pipeline import StageTimes
from runner.programs import Programs
from runner.run import RunPaths, prepare_variant, run_interleaved, run_variant
from tests.conftest import REPO_ROOT
from tests.runner.conftest import EXAMPLES, QUICK, sha256_of

POLICY_DIR = REPO_ROOT / "models" / "policy"
OBSERVATION = (
    InputConfig(shape=(32, 32, 3), dtype="uint8"),
    InputConfig(shape=(7,), dtype="float32"),
    InputConfig(shape=(8,), dtype="int64"),
)
MEASURE = PhaseConfig(min_iterations=20, min_time_s=0.0, max_iterations=20, max_time_s=30.0)


def _file(folder: Path, name: str) -> ProgramConfig:
    return ProgramConfig(source="file", location=name, sha256=sha256_of(folder / name))


def policy_config(
    folder: Path = POLICY_DIR,
    *,
    precision: str = "fp32",
    preprocess: str | None = f"{POLICY}-preprocess.pt2",
    postprocess: str | None = f"{POLICY}-postprocess.pt2",
    model_file: str = f"{POLICY}.pt2",
    inputs: tuple[InputConfig, ...] = OBSERVATION,
) -> RunConfig:
    """config.json of the example policy between its stages, as synth writes it."""
    model = ModelConfig(
        **_file(folder, model_file).model_dump(),
        preprocess=_file(folder, preprocess) if preprocess else None,
        postprocess=_file(folder, postprocess) if postprocess else None,
    )
    return RunConfig(
        workflow="test",
        target="cpu",
        device_type="cpu",
        gpus=0,
        warmup=QUICK,
        measure=MEASURE,
        models={POLICY: model},
        variants=(
            VariantConfig(
                index=0,
                id="v000000000000",
                model=POLICY,
                precision=precision,
                quantization="none",
                batch_size=2,
                inputs=inputs,
            ),
        ),
    )


def test_the_chain_is_timed_per_stage_and_as_a_whole(tmp_path: Path) -> None:
    result = run_variant(
        policy_config(), policy_config().variants[0], RunPaths(POLICY_DIR, tmp_path)
    )
    assert result.stages is not None
    assert list(result.stages) == ["preprocess", "model", "postprocess"]
    assert result.latency.count == 20
    # The chain's time is the stages' times added, query by query.
    chain = result.latency.mean_ms
    assert sum(stage.mean_ms for stage in result.stages.values()) == pytest.approx(chain, rel=1e-6)
    assert sum(stage.share for stage in result.stages.values()) == pytest.approx(1.0)
    assert all(stage.p50_ms > 0 for stage in result.stages.values())
    # The output is the postprocess's: commands within each joint's limit.
    assert result.applied is not None and result.applied.input_dtypes == [
        "uint8",
        "float32",
        "int64",
    ]
    dumped = result.model_dump(mode="json", exclude_none=True)
    assert set(dumped["stages"]["model"]) >= {"p50_ms", "p99_ms", "share"}


def test_a_model_alone_has_no_stages(tmp_path: Path) -> None:
    config = policy_config(
        preprocess=None,
        postprocess=None,
        inputs=(
            InputConfig(shape=(3, 32, 32), dtype="float32"),
            InputConfig(shape=(7,), dtype="float32"),
            InputConfig(shape=(8,), dtype="int64"),
        ),
    )
    result = run_variant(config, config.variants[0], RunPaths(POLICY_DIR, tmp_path))
    assert result.stages is None
    assert "stages" not in result.model_dump(exclude_none=True)


def test_the_accuracy_compares_the_chains_output(tmp_path: Path) -> None:
    config = policy_config(precision="bf16")
    result = run_variant(config, config.variants[0], RunPaths(POLICY_DIR, tmp_path))
    accuracy = result.accuracy
    assert accuracy is not None and accuracy.error is None
    # The postprocess's output, one command per joint: not the model's raw actions.
    assert [output.shape for output in accuracy.outputs or []] == [[2, 7]]
    assert accuracy.cosine is not None and 0.99 < accuracy.cosine < 1.0
    # bf16 applies to the model only: the stages are fp32, and the chain's output with them.
    assert result.applied is not None and result.applied.output_dtype == "float32"


def test_the_reference_is_the_untouched_chain(tmp_path: Path) -> None:
    """fp32 runs the untouched chain: its output is the reference, exactly."""
    result = run_variant(
        policy_config(), policy_config().variants[0], RunPaths(POLICY_DIR, tmp_path)
    )
    assert result.accuracy is not None
    assert result.accuracy.max_abs_error == 0.0


def _module(name: str) -> torch.fx.GraphModule:
    return load_verified(POLICY_DIR / name).module()


def test_the_chain_runs_the_stages_in_order(tmp_path: Path) -> None:
    config = policy_config()
    variant = config.variants[0]
    ready = prepare_variant(config, variant, Programs(POLICY_DIR, tmp_path))
    drawn, _ = draw_inputs(variant, {})
    features = _module(f"{POLICY}-preprocess.pt2")(*drawn)
    expected = _module(f"{POLICY}-postprocess.pt2")(_module(f"{POLICY}.pt2")(*features))
    output = ready.last_output[0]
    assert isinstance(output, torch.Tensor) and torch.equal(output, expected)
    # Drawn pixels span the frame's range; the commands stay within each joint's limit.
    assert int(drawn[0].max()) > 1
    assert bool((expected.abs() <= torch.linspace(1.0, 2.5, 7)).all())


@pytest.mark.slow
def test_compile_applies_to_the_model_alone(tmp_path: Path) -> None:
    config = policy_config()
    variant = config.variants[0].model_copy(update={"runtime": Runtime.INDUCTOR})
    config = config.model_copy(update={"variants": (variant,)})
    result = run_variant(config, variant, RunPaths(POLICY_DIR, tmp_path))
    assert result.applied is not None and result.applied.compiled is not None
    # One graph: the model's, compiled on what the preprocess hands it.
    assert result.applied.compiled.graphs == 1
    assert result.stages is not None and set(result.stages) == {
        "preprocess",
        "model",
        "postprocess",
    }
    assert result.accuracy is not None and result.accuracy.cosine is not None
    assert result.accuracy.cosine > 0.9999


def test_an_interleaved_pod_restarts_each_variants_stage_times(tmp_path: Path) -> None:
    config = policy_config()
    fp32 = config.variants[0]
    bf16 = fp32.model_copy(update={"index": 1, "id": "v000000000001", "precision": Precision.BF16})
    config = config.model_copy(
        update={"variants": (fp32, bf16), "groups": ((0, 1),), "interleave": True}
    )
    programs = Programs(POLICY_DIR, tmp_path)
    ready = [prepare_variant(config, variant, programs) for variant in config.variants]
    results = run_interleaved(config, ready)
    for prepared, result in zip(ready, results, strict=True):
        assert result.stages is not None and prepared.stage_times is not None
        # The stage times are the timed loop's queries only, one per iteration.
        counts = {len(times) for times in prepared.stage_times.durations_ns.values()}
        assert counts == {result.latency.count}


def test_a_tampered_stage_is_refused_like_a_model(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    shutil.copytree(POLICY_DIR, folder)
    config = policy_config(folder)
    stage = folder / f"{POLICY}-preprocess.pt2"
    stage.write_bytes(stage.read_bytes() + b"\0")
    with pytest.raises(ModelMismatch, match="sha256"):
        run_variant(config, config.variants[0], RunPaths(folder, tmp_path))


def test_a_stage_that_does_not_fit_the_model_is_a_stage_mismatch(tmp_path: Path) -> None:
    folder = tmp_path / "models"
    shutil.copytree(POLICY_DIR, folder)
    # tiny-mlp's outputs are [10] per sample; the postprocess takes [7].
    shutil.copyfile(EXAMPLES / "tiny-mlp.pt2", folder / "mlp.pt2")
    config = policy_config(
        folder,
        preprocess=None,
        model_file="mlp.pt2",
        inputs=(InputConfig(shape=(64,), dtype="float32"),),
    )
    with pytest.raises(StageMismatch, match=r"returns \(\[10\] float32\).*postprocess") as raised:
        run_variant(config, config.variants[0], RunPaths(folder, tmp_path))
    assert raised.value.exit_code is ExitCode.STAGE_MISMATCH
    path = tmp_path / "config.json"
    path.write_text(config.model_dump_json(exclude_none=True))
    log = tmp_path / "termination-log"
    code = main(["--config", str(path), "--models", str(folder), "--termination-log", str(log)])
    assert code == ExitCode.STAGE_MISMATCH
    assert '"stage_mismatch"' in log.read_text()


def test_stage_programs_are_carried_under_their_own_names() -> None:
    config = policy_config()
    assert program_name(POLICY, "preprocess") == f"{POLICY}.preprocess"
    assert list(config.models[POLICY].stages()) == ["preprocess", "postprocess"]


def test_stage_times_restart_before_the_timed_loop() -> None:
    times = StageTimes(("preprocess", "model"))
    times.durations_ns["model"].append(5)
    times.clear()
    assert times.summary() == {}


def test_a_stage_handed_another_count_of_tensors_says_both() -> None:
    expected = (
        ExpectedInput("image", (Dimension(1, None), Dimension(3, 3)), "float32"),
        ExpectedInput("state", (Dimension(1, None), Dimension(7, 7)), "float32"),
    )
    said = handover_misfit([GivenInput((3,), "float32")], expected)
    assert (
        said
        == "it takes 2 input(s) (image [1.., 3] float32; state [1.., 7] float32) and is handed 1"
    )
    assert (
        handover_misfit([GivenInput((3,), "float32"), GivenInput((7,), "float32")], expected)
        is None
    )
