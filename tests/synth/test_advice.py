"""Warnings: valid specs that likely do not measure what their author meant are written
anyway, with a located warning."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from synth.advice import warnings
from synth.cli import cli
from synth.load import load_specs
from tests.synth.conftest import WriteSpec

QUANTIZED = """\
id: quantized
description: int8 on the CPU
owner: tests
clusters: [alpha]
models:
  - name: net
    file: models/examples/{model}.pt2
    inputs: [{{shape: {shape}}}]
benchmark: {{quantization: int8-dynamic}}
targets:
  - gpu_type: cpu
"""


@pytest.mark.parametrize(
    ("model", "shape", "warned"),
    [("tiny-cnn", "[3, 64, 64]", True), ("tiny-mlp", "[64]", False)],
)
def test_int8_on_a_model_of_few_linear_weights_is_a_warning_not_an_error(
    spec_repo: Path, write_spec: WriteSpec, model: str, shape: str, warned: bool
) -> None:
    write_spec("quantized.yaml", QUANTIZED.format(model=model, shape=shape))
    result = CliRunner().invoke(cli, ["--root", str(spec_repo), "synth"])
    assert result.exit_code == 0, result.output
    assert (spec_repo / "dist" / "alpha" / "workloads" / "quantized.yaml").is_file()
    warning = (
        "specs/workflows/quantized.yaml:7:11: warning: models[0].file: int8-dynamic quantizes "
        "Linear layers only, 3% of net's parameters: its quantized results would measure mostly "
        "the float model"
    )
    assert (warning in result.stderr) is warned, result.stderr


INT4 = """\
id: int4
description: the design note's int4, on the CPU
owner: tests
clusters: [alpha]
models:
  - name: net
    file: models/examples/tiny-mlp.pt2
    inputs: [{{shape: [64]}}]
benchmark: {{precision: {precision}, quantization: int4}}
targets:
  - gpu_type: cpu
"""


@pytest.mark.parametrize(("precision", "warned"), [("fp16", True), ("fp32", True), ("bf16", False)])
def test_int4_on_a_cpu_warns_at_a_precision_its_kernel_runs_without_vectors(
    spec_repo: Path, write_spec: WriteSpec, precision: str, warned: bool
) -> None:
    """The design note's `int4` at fp16 is valid on a CPU, but PyTorch's int4 CPU kernel is
    vectorized for bf16 activations alone (5-51x slower than unquantized at fp32 and fp16)."""
    spec = write_spec("int4.yaml", INT4.format(precision=precision))
    found = [str(problem) for problem in warnings(load_specs(spec_repo, [spec]))]
    expected = (
        "specs/workflows/int4.yaml:9:44: warning: benchmark.quantization: int4-weight-only at "
        f"{precision} on a CPU runs its kernel's scalar path (vectorized for bf16 only): expect "
        "it several times slower than the unquantized model\n"
        "    hint: measure it at bf16 to see what the kernel is for"
    )
    assert found == ([expected] if warned else [])


SERVED = """\
id: served
description: a model synth cannot read
owner: tests
clusters: [alpha]
models:
  - name: net
    url: https://models.example.com/net.pt2
    sha256: {sha256}
    inputs: [{{shape: [64]}}]{layers}
benchmark: {{quantization: {quantization}}}
targets:
  - gpu_type: cpu
"""
UNCHECKED = (
    "specs/workflows/served.yaml:7:10: warning: models[0].url: int8-dynamic of model 'net' "
    "cannot be checked before its pod: synth does not read a model from url, and this entry "
    "records no layers\n"
    "    hint: add the layers: line `benchfleet export` prints for its file (`make push-model` "
    "prints it too); without it, a variant whose kernel takes none of the model's layers "
    "fails in its pod (unsupported_variant, exit 6)"
)


def _served(write_spec: WriteSpec, quantization: str = "int8-dynamic", layers: str = "") -> Path:
    text = SERVED.format(sha256="ab" * 32, quantization=quantization, layers=layers)
    return write_spec("served.yaml", text)


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_a_quantized_model_without_recorded_layers_is_said_unchecked_by_validate_and_plan(
    spec_repo: Path, write_spec: WriteSpec, command: str
) -> None:
    """An entry written before export printed layers: keeps working, and the reviewer learns
    that its quantizations are judged only in its pod."""
    _served(write_spec)
    text = CliRunner().invoke(cli, ["--root", str(spec_repo), command])
    assert text.exit_code == 0, text.output
    assert text.stderr == UNCHECKED + "\n"
    listed = CliRunner().invoke(cli, ["--root", str(spec_repo), command, "--format", "json"])
    assert listed.exit_code == 0, listed.output
    (unchecked,) = json.loads(listed.stdout)["unchecked"]
    assert (unchecked["path"], unchecked["severity"]) == ("models[0].url", "warning")


@pytest.mark.parametrize(
    ("quantization", "layers"),
    [
        ("none", ""),
        (
            "int8-dynamic",
            "\n    layers: {linear: {128x64: 1, 128x128: 1, 10x128: 1}, parameters: 26122}",
        ),
    ],
)
def test_a_model_whose_layers_are_recorded_or_that_no_variant_quantizes_is_not_unchecked(
    spec_repo: Path, write_spec: WriteSpec, quantization: str, layers: str
) -> None:
    spec = _served(write_spec, quantization, layers)
    found = [str(problem) for problem in warnings(load_specs(spec_repo, [spec]))]
    assert UNCHECKED not in found
    result = CliRunner().invoke(cli, ["--root", str(spec_repo), "validate"])
    assert result.stderr == ""


def test_int8_on_recorded_layers_of_few_parameters_warns_as_on_a_committed_file(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    spec = _served(write_spec, layers="\n    layers: {linear: {10x64: 1}, parameters: 24346}")
    found = [str(problem) for problem in warnings(load_specs(spec_repo, [spec]))]
    assert found == [
        "specs/workflows/served.yaml:10:5: warning: models[0].layers: int8-dynamic quantizes "
        "Linear layers only, 3% of net's parameters: its quantized results would measure mostly "
        "the float model\n"
        "    hint: exclude the quantization for this model, or read its results with the "
        "result's applied.quantized_weight_share beside them"
    ]
