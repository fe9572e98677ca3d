"""Recorded inputs replayed by the runner (runner/recorded.py): in order, wrapping, instead of
drawn ones, the accuracy pass on the same samples, and a recording that is not the pinned
file or does not fit the model refused with its own exit code; and a family member's result
carrying its params, as the same later facts of a result."""

import json
import shutil
from pathlib import Path

import pytest
import torch

from contract.config import PhaseConfig, RecordedConfig, RunConfig, ScenarioConfig
from contract.errors import ExitCode
from contract.inputs import Dimension, ExpectedInput
from contract.recorded import RecordedContents
from contract.result import (
    RESULT_SCHEMA_VERSION,
    parse_result_line,
)
from contract.variant import Runtime
from models.make_models import POLICY
from runner.errors import InputsMismatch
from runner.inputs import Feed
from runner.programs import Programs
from runner.recorded import read_replay, recorded_batches
from runner.run import RunPaths, prepare_variant, run_variant
from tests.recordings import frames, write_recording
from tests.runner.conftest import (
    EXAMPLES,
    MakeConfig,
    group_variant,
    python_m_runner,
    sha256_of,
)
from tests.runner.test_pipeline import POLICY_DIR, policy_config

MLP = [ExpectedInput("input", (Dimension(1, 1024), Dimension(64, 64)), "float32")]


def with_recording(
    config: RunConfig, tmp_path: Path, tensors: dict[str, torch.Tensor], sha256: str | None = None
) -> RunConfig:
    """`config` replaying `tensors`, committed beside a copy of its model in `tmp_path`."""
    for model in config.models.values():
        shutil.copy(EXAMPLES / model.location, tmp_path / model.location)
    path = write_recording(tmp_path / "rec.safetensors", tensors)
    recorded = RecordedConfig(source="file", location=path.name, sha256=sha256 or sha256_of(path))
    return config.model_copy(update={"recorded_inputs": recorded})


def test_batches_are_consecutive_samples_the_last_filled_from_the_start(tmp_path: Path) -> None:
    tensors = {f"input.{k}": torch.full((64,), float(k)) for k in range(5)}
    path = write_recording(tmp_path / "rec.safetensors", tensors)
    replay = read_replay(path, sha256_of(path))
    feed = Feed(recorded_batches(group_variant(0, "tiny-mlp"), replay, MLP))
    firsts = [feed(query)[0][:, 0].tolist() for query in range(5)]
    # Batch 2 of five samples: three batches, then the replay starts again.
    assert firsts == [[0.0, 1.0], [2.0, 3.0], [4.0, 0.0], [0.0, 1.0], [2.0, 3.0]]
    assert feed(0)[0].dtype == torch.float32


def test_a_variant_replays_the_recording_and_its_result_says_so(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    config = with_recording(make_config(), tmp_path, frames("input", 5, (64,)))
    result = run_variant(config, config.variants[0], RunPaths(tmp_path, tmp_path))
    assert config.recorded_inputs is not None
    assert result.recorded_inputs is not None
    assert result.recorded_inputs.sha256 == config.recorded_inputs.sha256
    assert result.recorded_inputs.samples == 5
    assert result.schema_version == RESULT_SCHEMA_VERSION
    assert result.accuracy is not None
    # Not drawn: the accuracy says nothing of a seed's distribution.
    assert result.accuracy.inputs is None
    assert result.accuracy.max_abs_error == 0


def test_a_cast_variants_accuracy_compares_outputs_on_the_same_samples(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    # Three batches of distinct samples: a comparison of one batch's output with another's
    # would find cosines far from 1 on this model.
    config = with_recording(make_config(precision="bf16"), tmp_path, frames("input", 6, (64,)))
    result = run_variant(config, config.variants[0], RunPaths(tmp_path, tmp_path))
    assert result.accuracy is not None and result.accuracy.cosine is not None
    assert result.accuracy.cosine > 0.99


def test_a_drawn_variants_result_says_nothing_of_recordings(make_config: MakeConfig) -> None:
    config = make_config()
    result = run_variant(config, config.variants[0], RunPaths(EXAMPLES, EXAMPLES))
    assert result.recorded_inputs is None
    assert result.schema_version == RESULT_SCHEMA_VERSION
    assert result.accuracy is not None and result.accuracy.inputs is not None


@pytest.mark.parametrize(
    ("tensors", "said"),
    [
        (frames("obs", 2, (64,)), "the recorded inputs hold obs, but model tiny-mlp takes input"),
        (frames("input", 2, (32,)), "recorded input input.0 at batch 2 is [2, 32]"),
    ],
)
def test_a_recording_that_does_not_fit_the_model_is_refused(
    make_config: MakeConfig, tmp_path: Path, tensors: dict[str, torch.Tensor], said: str
) -> None:
    config = with_recording(make_config(), tmp_path, tensors)
    with pytest.raises(InputsMismatch) as raised:
        run_variant(config, config.variants[0], RunPaths(tmp_path, tmp_path))
    assert str(raised.value).startswith(said)
    assert raised.value.exit_code == ExitCode.INPUTS_MISMATCH


def test_a_recording_that_is_not_the_pinned_file_is_refused(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    config = with_recording(make_config(), tmp_path, frames("input", 2, (64,)), sha256="0" * 64)
    with pytest.raises(InputsMismatch, match=r"the recorded inputs are refused: .* has sha256"):
        run_variant(config, config.variants[0], RunPaths(tmp_path, tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("tensors", "sha256", "said"),
    [
        (frames("obs", 2, (64,)), None, "the recorded inputs hold obs"),
        (frames("input", 2, (64,)), "0" * 64, "the recorded inputs are refused"),
    ],
)
def test_the_runner_exits_with_the_recordings_own_code(
    make_config: MakeConfig,
    tmp_path: Path,
    tensors: dict[str, torch.Tensor],
    sha256: str | None,
    said: str,
) -> None:
    config = with_recording(make_config(), tmp_path, tensors, sha256)
    (tmp_path / "config.json").write_text(config.model_dump_json())
    done = python_m_runner(
        {
            "CONFIG_PATH": str(tmp_path / "config.json"),
            "MODEL_PATH": str(tmp_path),
            "JOB_COMPLETION_INDEX": "0",
            "TERMINATION_LOG": str(tmp_path / "termination-log"),
            "PATH": "/usr/bin:/bin",
        }
    )
    assert done.returncode == ExitCode.INPUTS_MISMATCH, done.stderr
    parsed = parse_result_line(done.stdout)
    assert parsed is not None
    result = json.loads(parsed.model_dump_json())
    assert result["error"]["type"] == "inputs_mismatch"
    assert said in result["error"]["message"]


def test_a_family_members_result_carries_its_params(make_config: MakeConfig) -> None:
    config = make_config()
    model = config.models["tiny-mlp"].model_copy(
        update={"family": "mlps", "params": {"width": 64, "act": "relu"}}
    )
    config = config.model_copy(update={"models": {"tiny-mlp": model}})
    result = run_variant(config, config.variants[0], RunPaths(EXAMPLES, EXAMPLES))
    assert (result.family, result.params) == ("mlps", {"width": 64, "act": "relu"})
    assert result.schema_version == RESULT_SCHEMA_VERSION


def test_a_recording_that_is_not_what_the_spec_records_is_refused(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    config = with_recording(make_config(), tmp_path, frames("input", 2, (64,)))
    assert config.recorded_inputs is not None
    recorded = config.recorded_inputs.model_copy(
        update={
            "contents": RecordedContents.model_validate(
                {"samples": 5, "inputs": {"input": {"shape": [64], "dtype": "float32"}}}
            )
        }
    )
    config = config.model_copy(update={"recorded_inputs": recorded})
    with pytest.raises(InputsMismatch, match=r"but the spec's contents: records \{samples: 5"):
        run_variant(config, config.variants[0], RunPaths(tmp_path, tmp_path))


def test_a_fixed_rate_run_replays_the_recording_on_its_clock(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    """The fixed-rate loop calls the same per-query step: each query on the clock takes the
    next recorded batch, and the result says both how queries arrived and what they were."""
    config = with_recording(make_config(), tmp_path, frames("input", 3, (64,)))
    config = config.model_copy(
        update={
            "measure": PhaseConfig(
                min_iterations=8, min_time_s=0.0, max_iterations=8, max_time_s=60.0
            ),
            "scenario": ScenarioConfig(rate_hz=50, deadline_s=1.0),
        }
    )
    result = run_variant(config, config.variants[0], RunPaths(tmp_path, tmp_path))
    assert result.scenario is not None and result.scenario.queries == 8
    assert result.recorded_inputs is not None and result.recorded_inputs.samples == 3
    assert result.accuracy is not None and result.accuracy.max_abs_error == 0


def observations(count: int, seed: int = 2) -> dict[str, torch.Tensor]:
    """`count` recorded observations of the example policy as its preprocess takes them: a
    uint8 camera frame (HWC), the joint state and the instruction's token ids."""
    generator = torch.Generator().manual_seed(seed)
    found: dict[str, torch.Tensor] = {}
    for k in range(count):
        found[f"image.{k}"] = torch.randint(0, 256, (32, 32, 3), generator=generator).byte()
        found[f"state.{k}"] = torch.randn((7,), generator=generator)
        found[f"tokens.{k}"] = torch.randint(0, 64, (8,), generator=generator)
    return found


def policy_with_recording(tmp_path: Path, tensors: dict[str, torch.Tensor]) -> RunConfig:
    """The example policy between its stages, replaying `tensors`, all in `tmp_path`."""
    for path in POLICY_DIR.glob(f"{POLICY}*.pt2"):
        shutil.copy(path, tmp_path / path.name)
    path = write_recording(tmp_path / "rec.safetensors", tensors)
    recorded = RecordedConfig(source="file", location=path.name, sha256=sha256_of(path))
    return policy_config(tmp_path).model_copy(update={"recorded_inputs": recorded})


def test_a_pipeline_replays_the_recording_through_its_preprocess(tmp_path: Path) -> None:
    """The recording is the chain's inputs: the preprocess takes each batch as recorded
    (uint8 frames), and consecutive queries of the chain take consecutive batches."""
    config = policy_with_recording(tmp_path, observations(4))
    ready = prepare_variant(config, config.variants[0], Programs(tmp_path, tmp_path))
    outputs = []
    for _ in range(2):
        ready.step()
        output = ready.last_output[0]
        assert isinstance(output, torch.Tensor)
        outputs.append(output.clone())
    # Batch 2 of four observations: two batches, each query the other one.
    assert not torch.equal(outputs[0], outputs[1])
    result = run_variant(config, config.variants[0], RunPaths(tmp_path, tmp_path))
    assert result.stages is not None and list(result.stages) == [
        "preprocess",
        "model",
        "postprocess",
    ]
    assert result.recorded_inputs is not None and result.recorded_inputs.samples == 4
    assert result.accuracy is not None and result.accuracy.max_abs_error == 0


def test_a_recording_of_the_models_inputs_does_not_fit_a_preprocess(tmp_path: Path) -> None:
    """A pipeline's recording holds what its preprocess takes, not what the model takes."""
    tensors = {
        **frames("image", 2, (3, 32, 32)),
        **frames("state", 2, (7,)),
        **{f"tokens.{k}": torch.zeros(8, dtype=torch.int64) for k in range(2)},
    }
    config = policy_with_recording(tmp_path, tensors)
    with pytest.raises(InputsMismatch, match=r"recorded input image\.0"):
        run_variant(config, config.variants[0], RunPaths(tmp_path, tmp_path))


@pytest.mark.slow
def test_an_onnxruntime_variant_replays_every_batch_and_keeps_the_first(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    """ONNX Runtime's session is bound to its inputs' memory and copies each query's batch
    into it: bound to a recorded batch, the copies would write over it, and the accuracy pass
    would compare another batch's output with the first's reference."""
    config = with_recording(make_config(), tmp_path, frames("input", 6, (64,)))
    variants = tuple(v.model_copy(update={"runtime": Runtime.ONNXRUNTIME}) for v in config.variants)
    config = config.model_copy(update={"variants": variants})
    result = run_variant(config, config.variants[0], RunPaths(tmp_path, tmp_path))
    assert result.applied is not None and result.applied.runtime_proof == ["CPUExecutionProvider"]
    assert result.timings is not None and result.timings.warmup.iterations >= 3
    assert result.accuracy is not None and result.accuracy.cosine is not None
    assert result.accuracy.cosine > 0.9999
