"""A spec's inputs against what the model's archive declares, checked by synth without torch:
each misfit is a located problem at review time, once, at the field to change."""

from pathlib import Path

import pytest
import torch

from synth.load import load_specs
from synth.problems import SpecProblems
from tests.synth.conftest import WriteSpec

SPEC = """\
id: fit
description: inputs against the model
owner: tests
clusters: [alpha]
models:
  - name: mlp
    file: {file}
{model_inputs}benchmark:
{benchmark}targets:
  - gpu_type: cpu
"""


def problems(spec_repo: Path, spec: Path) -> list[str]:
    with pytest.raises(SpecProblems) as raised:
        load_specs(spec_repo, [spec])
    return [str(problem) for problem in raised.value.problems]


def spec_text(
    benchmark: str,
    model_inputs: str = "",
    file: str = "models/examples/tiny-mlp.pt2",
) -> str:
    return SPEC.format(file=file, model_inputs=model_inputs, benchmark=benchmark)


def test_inputs_that_fit_pass(spec_repo: Path, write_spec: WriteSpec) -> None:
    spec = write_spec("fit.yaml", spec_text("  inputs: [{shape: [64]}]\n  batch_size: 1024\n"))
    load_specs(spec_repo, [spec])


def test_a_shape_with_the_batch_in_it_is_located_with_a_hint(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    spec = write_spec("fit.yaml", spec_text("  inputs: [{shape: [8, 64]}]\n"))
    assert problems(spec_repo, spec) == [
        "specs/workflows/fit.yaml:9:3: benchmark.inputs: model mlp input 0 expects input "
        "[1..1024, 64] float32; the spec gives [1, 8, 64] float32 (batch 1 first): 3 "
        "dimensions, not 2\n"
        "    hint: inputs are per sample: leave the batch dimension out (batch_size sets it)"
    ]


def test_a_models_own_inputs_are_where_the_misfit_is(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    own = "    inputs: [{shape: [64], dtype: int64}]\n"
    spec = write_spec("fit.yaml", spec_text("  batch_size: 2\n", model_inputs=own))
    [problem] = problems(spec_repo, spec)
    assert problem.startswith("specs/workflows/fit.yaml:8:5: models[0].inputs: model mlp ")
    assert problem.endswith("an int64 input where the model takes float32")


def test_a_batch_outside_the_exported_range_is_reported_once_at_that_batch(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    benchmark = "  inputs: [{shape: [64]}]\nsweep:\n  matrix:\n    batch_size: [1, 2048]\n"
    # Two precisions double the variants at batch 2048; the misfit is still said once.
    text = spec_text(benchmark).replace(
        "    batch_size: [1, 2048]\n", "    batch_size: [1, 2048]\n    precision: [fp32, bf16]\n"
    )
    spec = write_spec("fit.yaml", text)
    [problem] = problems(spec_repo, spec)
    assert problem.startswith("specs/workflows/fit.yaml:12:21: sweep.matrix.batch_size[1]: ")
    assert "the batch is 2048, outside the 1..1024 the model accepts" in problem


def test_a_static_batch_export_says_which_batch_it_takes(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    program = torch.export.export(torch.nn.Linear(64, 4).eval(), (torch.randn(2, 64),))
    (spec_repo / "own").mkdir()
    torch.export.save(program, spec_repo / "own" / "static.pt2")
    spec = write_spec(
        "fit.yaml", spec_text("  inputs: [{shape: [64]}]\n  batch_size: 4\n", file="own/static.pt2")
    )
    [problem] = problems(spec_repo, spec)
    assert problem.startswith("specs/workflows/fit.yaml:10:15: benchmark.batch_size: ")
    assert "static batch of 2: set batch_sizes to [2]" in problem
