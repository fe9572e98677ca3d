"""Warnings: valid specs that likely do not measure what their author meant are written
anyway, with a located warning."""

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
