"""A spec whose inputs the model does not accept is a bad_config error naming both shapes."""

from pathlib import Path

import pytest
import torch

from contract.archive import check_archive
from contract.config import InputConfig, RunConfig
from contract.errors import ExitCode
from contract.result import ErrorResult
from runner.errors import ConfigError
from runner.inputs import check_inputs, expected_inputs
from runner.loading import load_program
from tests.runner.conftest import MakeConfig, sha256_of
from tests.runner.test_main import run_main, write_config


def with_inputs(config: RunConfig, *shapes: tuple[int, ...], dtype: str = "float32") -> RunConfig:
    inputs = tuple(InputConfig(shape=shape, dtype=dtype) for shape in shapes)
    variant = config.variants[0].model_copy(update={"inputs": inputs})
    return config.model_copy(update={"variants": (variant,)})


def test_the_expected_inputs_are_read_from_the_program(models_dir: Path) -> None:
    path = models_dir / "tiny-transformer.pt2"
    [expected] = expected_inputs(load_program(path, sha256_of(path)))
    assert str(expected) == "tokens [1..1024, 32, 16] float32"


@pytest.mark.parametrize(
    ("model", "shapes", "dtype", "message"),
    [
        (
            "tiny-mlp",
            [(32,)],
            "float32",
            "model tiny-mlp input 0 expects input [1..1024, 64] float32; the spec gives [2, 32] "
            "float32 (batch 2 first): dimension 1 is 32, not 64",
        ),
        ("tiny-cnn", [(64, 64)], "float32", "3 dimensions, not 4"),
        ("tiny-mlp", [(64,), (64,)], "float32", "takes 1 input(s) (input [1..1024, 64] float32)"),
        ("tiny-mlp", [(64,)], "int64", "an int64 input where the model takes float32"),
    ],
)
def test_a_mismatch_names_the_expected_and_the_given_shape(
    make_config: MakeConfig,
    models_dir: Path,
    model: str,
    shapes: list[tuple[int, ...]],
    dtype: str,
    message: str,
) -> None:
    config = with_inputs(make_config(model), *shapes, dtype=dtype)
    path = models_dir / f"{model}.pt2"
    with pytest.raises(ConfigError) as raised:
        check_inputs(config.variants[0], expected_inputs(load_program(path, sha256_of(path))))
    assert message in str(raised.value)


def test_a_batch_that_a_static_batch_export_refuses_says_how_to_fix_it(
    make_config: MakeConfig, conv_only_model: Path
) -> None:
    config = with_inputs(make_config(batch_size=4), (3, 8, 8))
    program = load_program(conv_only_model, sha256_of(conv_only_model))
    with pytest.raises(ConfigError, match=r"static batch of 2: set batch_sizes to \[2\]"):
        check_inputs(config.variants[0], expected_inputs(program))


class _Sum(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


@pytest.fixture(scope="module")
def linked_dims_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two inputs whose second dimensions must be equal: only the program's guard knows."""
    width = torch.export.Dim("width", max=64)
    program = torch.export.export(
        _Sum(),
        (torch.randn(2, 8), torch.randn(2, 8)),
        dynamic_shapes={"x": {1: width}, "y": {1: width}},
    )
    path = tmp_path_factory.mktemp("models") / "sum.pt2"
    torch.export.save(program, path)
    return path


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        ([(8,), (8,)], None),
        ([(8,), (16,)], "Guard failed"),
        ([(8,), (99,)], "dimension 1 is 99, not 0..64"),
    ],
)
def test_the_runner_exits_2_for_inputs_the_model_refuses(
    capsys: pytest.CaptureFixture[str],
    make_config: MakeConfig,
    linked_dims_model: Path,
    tmp_path: Path,
    shapes: list[tuple[int, ...]],
    message: str | None,
) -> None:
    config = with_inputs(
        make_config(location=linked_dims_model.name, sha256=sha256_of(linked_dims_model)),
        *shapes,
    )
    code, result, _ = run_main(
        capsys, write_config(config, tmp_path), linked_dims_model.parent, tmp_path
    )
    if message is None:
        assert code == ExitCode.OK
        return
    assert code == ExitCode.BAD_CONFIG
    assert isinstance(result, ErrorResult) and result.error.type == "bad_config"
    assert message in result.error.message


@pytest.fixture(scope="module")
def int_and_float_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Token ids and a float mask: an int64 input beside a float one, batch from 1 to 8."""

    class Masked(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = torch.nn.Embedding(10, 4)

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            embedded: torch.Tensor = self.embed(ids)
            return embedded * mask.unsqueeze(-1)

    batch = torch.export.Dim("batch", min=1, max=8)
    program = torch.export.export(
        Masked().eval(),
        (torch.zeros(2, 5, dtype=torch.int64), torch.ones(2, 5)),
        dynamic_shapes={"ids": {0: batch}, "mask": {0: batch}},
    )
    path = tmp_path_factory.mktemp("models") / "masked.pt2"
    torch.export.save(program, path)
    return path


@pytest.mark.slow
def test_synth_reads_from_the_archive_what_the_runner_reads_from_torch(
    repo_root: Path,
    conv_only_model: Path,
    unbounded_batch_model: Path,
    linked_dims_model: Path,
    int_and_float_model: Path,
) -> None:
    committed = sorted(repo_root.glob("models/**/*.pt2"))
    assert len(committed) > 3
    built = [conv_only_model, unbounded_batch_model, linked_dims_model, int_and_float_model]
    for path in [*committed, *built]:
        from_torch = expected_inputs(load_program(path, sha256_of(path)))
        assert check_archive(path).inputs == tuple(from_torch), path
    declared = [str(e) for e in check_archive(int_and_float_model).inputs]
    assert declared == ["ids [1..8, 5] int64", "mask [1..8, 5] float32"]
    assert [str(e) for e in check_archive(unbounded_batch_model).inputs] == [
        "input [0.., 64] float32"
    ]


def _linear_share_from_torch(program: torch.export.ExportedProgram) -> float | None:
    """What the runner's int8 rewrite reaches, counted on the loaded program; None for a
    program without parameters (a pipeline's preprocess), of which no share means anything."""
    parameters = program.graph_signature.inputs_to_parameters
    linear = {
        parameters[node.args[1].name]
        for node in program.graph.nodes
        if node.target == torch.ops.aten.linear.default and node.args[1].name in parameters
    }
    sizes: dict[str, int] = {name: t.numel() for name, t in program.state_dict.items()}
    counted = {name: sizes[name] for name in parameters.values()}
    total = sum(counted.values())
    return sum(counted[name] for name in linear) / total if total else None


@pytest.mark.slow
def test_synth_reads_the_linear_share_torch_would_count(repo_root: Path) -> None:
    for path in sorted(repo_root.glob("models/**/*.pt2")):
        share = check_archive(path).linear_share
        program = torch.export.load(path)
        expected = _linear_share_from_torch(program)
        assert share is None if expected is None else share == pytest.approx(expected), path
    cnn = check_archive(repo_root / "models/examples/tiny-cnn.pt2").linear_share
    assert cnn is not None and cnn < 0.05
