"""Loading checks the bytes before torch sees them, and refuses anything but a .pt2 program."""

import shutil
from pathlib import Path

import pytest
import torch
import yaml

from contract.config import ModelConfig
from contract.errors import ExitCode
from contract.weights import LayerRecord
from runner.errors import ModelLoadError, ModelMismatch, ModelRefused
from runner.loading import load_program, model_file
from runner.programs import Programs, module_for, own_module
from runner.run import prepare_variant
from tests.output_models import (
    ANOTHER_TORCH,
    OUTPUT_TYPE,
    PAIR_TYPE,
    export_encoder,
    written_by_another_torch,
)
from tests.runner.conftest import EXAMPLES, MakeConfig, sha256_of


def test_a_verified_program_loads_and_runs(models_dir: Path) -> None:
    path = models_dir / "tiny-mlp.pt2"
    program = load_program(path, sha256_of(path))
    assert program.module()(torch.randn(2, 64)).shape[0] == 2


def test_a_wrong_sha256_is_refused_with_both_digests(models_dir: Path) -> None:
    path = models_dir / "tiny-mlp.pt2"
    with pytest.raises(
        ModelMismatch, match=f"has sha256 {sha256_of(path)}, but config.json expects 0{{64}}"
    ):
        load_program(path, "0" * 64)


@pytest.mark.parametrize(
    ("source", "advice"),
    [
        ("file", "re-run `make synth`"),
        ("image_path", "build the image with the model the spec names"),
    ],
)
def test_a_wrong_sha256_advises_what_fits_where_the_file_came_from(
    models_dir: Path, tmp_path: Path, source: str, advice: str
) -> None:
    """`make synth` rewrites what a ConfigMap carries, not what an image holds."""
    path = models_dir / "tiny-mlp.pt2"
    location = path.name if source == "file" else str(path)
    model = ModelConfig(source=source, location=location, sha256="0" * 64)
    with pytest.raises(ModelMismatch) as raised:
        model_file(model, models_dir, tmp_path)
    assert advice in str(raised.value)
    assert ("make synth" in str(raised.value)) == (source == "file")


@pytest.mark.usefixtures("export_load_forbidden")
@pytest.mark.parametrize(("kind", "named"), [("dataclass", OUTPUT_TYPE), ("namedtuple", PAIR_TYPE)])
def test_an_output_type_the_runner_cannot_rebuild_is_refused_before_torch_reads_it(
    tmp_path: Path, kind: str, named: str
) -> None:
    """A Hugging Face model exported as-is returns a registered dataclass: torch.export.load
    fails on it with "check the warnings above", in every pod."""
    path = export_encoder(kind, tmp_path / "encoder.pt2")
    with pytest.raises(ModelRefused, match="refused before torch reads it") as raised:
        load_program(path, sha256_of(path))
    message = str(raised.value)
    assert f"out_spec, the structure of the program's output, holds a '{named}'" in message
    assert "return_dict=False" in message


def test_an_output_of_tensors_in_a_dict_loads_and_runs(tmp_path: Path) -> None:
    path = export_encoder("dict", tmp_path / "encoder.pt2")
    output = load_program(path, sha256_of(path)).module()(torch.randn(3, 8))
    assert sorted(output) == ["hidden", "logits"] and output["logits"].shape == (3, 4)


def test_a_load_error_says_the_cause_torch_logged_not_check_the_warnings_above(
    models_dir: Path, tmp_path: Path
) -> None:
    """torch.export.load logs why it failed and raises "check the warnings above"; a pod's
    stderr is not where anyone reads, so the error carries the cause."""
    path = written_by_another_torch(models_dir / "tiny-mlp.pt2", tmp_path / "newer.pt2")
    with pytest.raises(ModelRefused) as raised:
        load_program(path, sha256_of(path))
    message = str(raised.value)
    assert "Serialized schema version SchemaVersion(major=99, minor=0)" in message
    assert f"written by torch {ANOTHER_TORCH}, read by torch {torch.__version__}" in message
    assert "check the warnings above" not in message


def test_a_corrupt_file_is_refused_before_loading(models_dir: Path, tmp_path: Path) -> None:
    data = bytearray((models_dir / "tiny-mlp.pt2").read_bytes())
    data[len(data) // 2] ^= 0xFF
    corrupt = tmp_path / "tiny-mlp.pt2"
    corrupt.write_bytes(bytes(data))
    with pytest.raises(ModelLoadError, match="corrupt or not the model"):
        load_program(corrupt, sha256_of(models_dir / "tiny-mlp.pt2"))


def test_damaged_bytes_with_a_matching_sha256_are_refused(tmp_path: Path) -> None:
    truncated = tmp_path / "half.pt2"
    truncated.write_bytes(b"PK\x03\x04" + b"\0" * 64)
    with pytest.raises(ModelRefused, match="not a zip archive"):
        load_program(truncated, sha256_of(truncated))


@pytest.mark.usefixtures("export_load_forbidden")
def test_a_pickled_checkpoint_is_refused_without_unpickling(tmp_path: Path) -> None:
    path = tmp_path / "model.pt2"
    torch.save(torch.nn.Linear(4, 4), path)
    with pytest.raises(ModelLoadError, match=r"torch.save checkpoint \(pickled\)"):
        load_program(path, sha256_of(path))


@pytest.mark.usefixtures("export_load_forbidden")
def test_a_legacy_pickle_is_refused_without_unpickling(tmp_path: Path) -> None:
    path = tmp_path / "model.pt2"
    torch.save({"w": torch.ones(2)}, path, _use_new_zipfile_serialization=False)
    with pytest.raises(ModelLoadError, match="is a pickle"):
        load_program(path, sha256_of(path))


def test_a_file_model_missing_from_its_mount_names_the_configmap(tmp_path: Path) -> None:
    model = ModelConfig(source="file", location="absent.pt2", sha256="0" * 64)
    with pytest.raises(ModelLoadError, match="model ConfigMap's mount"):
        model_file(model, tmp_path, tmp_path)


def test_an_image_path_model_is_read_from_its_absolute_path(
    models_dir: Path, tmp_path: Path
) -> None:
    location = models_dir / "tiny-cnn.pt2"
    model = ModelConfig(source="image_path", location=str(location), sha256=sha256_of(location))
    assert model_file(model, tmp_path, tmp_path) == location


def test_an_image_path_model_is_read_below_the_root_a_local_try_names(tmp_path: Path) -> None:
    """A local try runs the runner outside the image: IMAGE_ROOT stands in for its root."""
    file = tmp_path / "root" / "opt" / "models" / "big.pt2"
    file.parent.mkdir(parents=True)
    file.write_bytes(b"x")
    model = ModelConfig(source="image_path", location="/opt/models/big.pt2", sha256=sha256_of(file))
    assert model_file(model, tmp_path, tmp_path, image_root=tmp_path / "root") == file


def test_an_oci_model_is_read_from_its_image_volume(tmp_path: Path) -> None:
    """Under the oci folder, not the ConfigMap's: the two are separate mounts."""
    (tmp_path / "oci" / "big" / "weights").mkdir(parents=True)
    location = tmp_path / "oci" / "big" / "weights" / "big.pt2"
    location.write_bytes(b"x")
    model = ModelConfig(source="oci", location="big/weights/big.pt2", sha256=sha256_of(location))
    assert model_file(model, tmp_path / "models", tmp_path, oci_dir=tmp_path / "oci") == location


def test_an_oci_model_missing_from_its_volume_names_the_volume(tmp_path: Path) -> None:
    model = ModelConfig(source="oci", location="big/model.pt2", sha256="0" * 64)
    with pytest.raises(ModelLoadError, match=r"big/model.pt2 does not exist: .* image volume"):
        model_file(model, tmp_path, tmp_path, oci_dir=tmp_path / "oci")


@pytest.mark.parametrize(
    ("recorded", "loads"),
    [
        ("{linear: {10x64: 1}, parameters: 24346}", True),
        ("{linear: {10x128: 1, 128x64: 1, 128x128: 1}, parameters: 26122}", False),
        ("{parameters: 24346}", False),
    ],
)
def test_an_oci_model_loads_only_where_its_layers_are_those_the_spec_records(
    tmp_path: Path, recorded: str, loads: bool
) -> None:
    """synth judged its quantized variants by the record (it never reads an oci model): a
    record of another program is a mismatch of the pinned model, refused before any variant
    is measured on a judgement made of the wrong layers."""
    volume = tmp_path / "oci" / "cnn"
    volume.mkdir(parents=True)
    shutil.copyfile(EXAMPLES / "tiny-cnn.pt2", volume / "model.pt2")
    layers = LayerRecord.model_validate(yaml.safe_load(recorded))
    model = ModelConfig(
        source="oci",
        location="cnn/model.pt2",
        sha256=sha256_of(volume / "model.pt2"),
        layers=layers,
    )
    programs = Programs(tmp_path, tmp_path, oci_dir=tmp_path / "oci")
    if loads:
        programs.program("cnn", model)
        return
    with pytest.raises(ModelMismatch) as raised:
        programs.program("cnn", model)
    assert raised.value.exit_code == ExitCode.MODEL_MISMATCH
    assert str(raised.value) == (
        f"{volume / 'model.pt2'} holds {{linear: {{10x64: 1}}, parameters: 24346}}, but the "
        f"spec's layers: records {recorded}: synth judged its quantized variants by another "
        "program's layers; set the model's layers: to the line `benchfleet export` or `make "
        "push-model` prints for this file"
    )


def test_a_variants_module_runs_as_torchs_own_and_casting_it_leaves_the_program(
    models_dir: Path,
) -> None:
    """own_module keeps the hooks `module()` installs (the guard checks a user's call runs
    through, and whose cost is part of every call), and its tensors are its own."""
    program = torch.export.load(models_dir / "tiny-mlp.pt2")
    torchs = program.module()
    mine = own_module(program)
    assert len(mine._forward_pre_hooks) == len(torchs._forward_pre_hooks) > 0
    assert len(mine._forward_hooks) == len(torchs._forward_hooks)
    mine.to(torch.float16)
    assert {t.dtype for t in program.state_dict.values()} == {torch.float32}


def _storages(module: torch.nn.Module) -> set[int]:
    """Where its plain tensors' data is (a quantized weight is a tensor subclass)."""
    tensors = module.state_dict().values()
    return {t.data_ptr() for t in tensors if type(t) in (torch.Tensor, torch.nn.Parameter)}


def test_a_variant_that_changes_no_tensor_runs_on_the_programs_own_and_others_on_a_copy(
    models_dir: Path, make_config: MakeConfig, tmp_path: Path
) -> None:
    """A copy would hold the weights twice; a cast or a quantization must still leave the
    program as loaded for the pod's next variant."""
    programs = Programs(models_dir, tmp_path)
    loaded: dict[str, set[int]] = {}
    for precision, quantization in (
        ("fp32", "none"), ("bf16", "none"), ("fp32", "int8-weight-only"), ("fp32", "none"),
    ):  # fmt: skip
        config = make_config("tiny-mlp", precision=precision, quantization=quantization)
        prepared = prepare_variant(config, config.variants[0], programs)
        program = programs.program("tiny-mlp", config.models["tiny-mlp"])
        loaded[f"{precision} {quantization}"] = _storages(prepared.module) & _storages(
            program.module()
        )
        assert {t.dtype for t in program.state_dict.values()} == {torch.float32}
    assert loaded["fp32 none"]
    assert not loaded["bf16 none"]
    assert not loaded["fp32 int8-weight-only"]


class _Counter(torch.nn.Module):
    """Writes into a buffer on every call."""

    calls: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.add_(1)
        return x + self.calls


def test_a_program_that_writes_its_buffers_runs_on_a_copy() -> None:
    program = torch.export.export(_Counter(), (torch.zeros(2),))
    module = module_for(program, torch.float32, torch.device("cpu"), quantized=False)
    module(torch.zeros(2))
    assert program.state_dict["calls"].item() == 0
