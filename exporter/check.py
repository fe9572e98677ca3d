"""Check an exported .pt2 as synth and the runner will: the archive check synth and the runner
apply before torch reads a file (contract/archive.py), synth's check of a spec's inputs
against the inputs the archive declares, and the runner itself loading the file and
preparing an fp32 variant at batch 1 (its own inputs, reference and first call); then the
loaded program against the model it came from, on the example inputs."""

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import torch

from contract.archive import UnsafeArchive, check_archive
from contract.config import InputConfig, ModelConfig, PhaseConfig, RunConfig, VariantConfig
from contract.inputs import GivenInput, inputs_misfit
from contract.weights import LayerRecord
from exporter.build import Exported, ExportRefused
from exporter.inputs import ExampleInput
from runner.errors import RunnerError
from runner.programs import Programs
from runner.run import prepare_variant

_ONE_CALL: Final = PhaseConfig(min_iterations=1, min_time_s=0.0, max_iterations=1, max_time_s=60.0)
_VARIANT_ID: Final = "v" + "0" * 12
RELATIVE_TOLERANCE: Final = 1e-4
"""How far the loaded program's outputs may be from the model's, over each output's largest
magnitude: the same fp32 operators, only reordered by export's decompositions."""


@dataclass(frozen=True)
class Checked:
    """What the runner saw of the exported file."""

    accuracy_error: str | None
    """Why the runner's accuracy pass could not compare, if it could not."""
    layers: LayerRecord | None
    """The program's layers as synth reads them from the archive (None where it reads no
    weights), for the spec entry's `layers:`."""
    input_names: tuple[str, ...] = ()
    """The program's inputs by the names synth and the runner read: what a recording of
    inputs names its samples by (`<name>.<sample>`, docs/specs.md)."""


def check_exported(
    path: Path, sha256: str, name: str, inputs: Sequence[ExampleInput], exported: Exported
) -> Checked:
    """Raise ExportRefused unless synth and the runner accept `path` (whose sha256 is
    `sha256`), `exported`'s program, with `inputs` at the smallest and the largest batch size
    it takes, and the loaded program computes the model's outputs on the example inputs."""
    batches = exported.batches
    try:
        program = check_archive(path)
    except UnsafeArchive as error:
        raise ExportRefused(
            f"synth and the runner would refuse the archive: {error}",
            "the model's output or inputs hold something the runner cannot rebuild; see the "
            "hurdles in docs/specs.md",
        ) from None
    given = [GivenInput(i.shape, i.dtype) for i in inputs]
    for batch in sorted(set(batches)):
        misfit = inputs_misfit(name, batch, given, program.inputs)
        if misfit is not None:
            raise ExportRefused(f"synth would refuse the spec's inputs: {misfit.message}")
    model = ModelConfig(source="file", location=path.name, sha256=sha256)
    config = fp32_config(name, model, inputs, batches[0], warmup=_ONE_CALL, measure=_ONE_CALL)
    with tempfile.TemporaryDirectory(prefix="benchfleet-export-") as scratch:
        programs = Programs(path.parent, Path(scratch))
        try:
            prepared = prepare_variant(config, config.variants[0], programs)
            loaded = programs.program(name, config.models[name])
        except RunnerError as error:
            raise ExportRefused(f"the runner refuses the exported model: {error}") from None
    with torch.inference_mode():
        output = loaded.module()(*exported.example)
    _compare(output if isinstance(output, tuple) else (output,), exported.expected)
    return Checked(
        prepared.accuracy.error,
        LayerRecord.of(program.linear) if program.linear is not None else None,
        tuple(expected.name for expected in program.inputs),
    )


def input_names(path: Path) -> tuple[str, ...]:
    """The inputs of the checked program at `path` by the names synth and the runner read."""
    return tuple(expected.name for expected in check_archive(path).inputs)


def fp32_config(
    name: str,
    model: ModelConfig,
    inputs: Sequence[ExampleInput],
    batch: int,
    *,
    warmup: PhaseConfig,
    measure: PhaseConfig,
) -> RunConfig:
    """config.json of one CPU pod measuring `model` (called `name`) unquantized in fp32 at
    `batch`, as synth would write it."""
    return RunConfig(
        workflow="export",
        target="cpu",
        device_type="cpu",
        gpus=0,
        warmup=warmup,
        measure=measure,
        models={name: model},
        variants=(
            VariantConfig(
                index=0,
                id=_VARIANT_ID,
                model=name,
                precision="fp32",
                quantization="none",
                batch_size=batch,
                inputs=tuple(InputConfig(shape=i.shape, dtype=i.dtype) for i in inputs),
            ),
        ),
    )


def _compare(outputs: tuple[torch.Tensor, ...], expected: tuple[torch.Tensor, ...]) -> None:
    for position, (mine, theirs) in enumerate(zip(outputs, expected, strict=True)):
        scale = float(theirs.abs().max()) if theirs.numel() and theirs.is_floating_point() else 1
        difference = float((mine.double() - theirs.double()).abs().max()) if mine.numel() else 0
        if mine.shape != theirs.shape or difference > RELATIVE_TOLERANCE * max(scale, 1e-12):
            raise ExportRefused(
                f"the exported program's output {position} is not the model's on the same "
                f"inputs (largest difference {difference:.3g}, largest value {scale:.3g})",
                "a model that draws random numbers in forward, or that keeps state between "
                "calls, cannot be measured as an exported program: make forward a function "
                "of its inputs",
            )
