"""Warnings: valid specs that likely do not measure what their author meant are written
anyway, with a located warning."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from synth.cli import cli
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
