"""Recorded inputs (`benchmark.recorded_inputs`): the file read once per pod, bounded, its
header by contract/recorded.py (the rule synth holds a committed file to as well), and each
variant's batches cut from it, in order, the last one filled from the start: query k of a
variant takes batch k modulo their count (`Feed`)."""

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from pathlib import Path

import torch

from contract.config import VariantConfig
from contract.inputs import ExpectedInput, GivenInput
from contract.recorded import (
    BadRecording,
    RecordedContents,
    Recording,
    contents_disagree,
    read_recording,
    recording_misfit,
)
from runner.errors import InputsMismatch, ModelLoadError
from runner.inputs import INPUT_DTYPES, Batch


@dataclass(frozen=True)
class Replay:
    """A recording as the runner holds it: each input's samples, on the CPU."""

    sha256: str
    recording: Recording
    samples: dict[str, tuple[torch.Tensor, ...]]

    @property
    def count(self) -> int:
        return self.recording.samples


def read_replay(path: Path, sha256: str, contents: RecordedContents | None = None) -> Replay:
    """The recording at `path`, whose bytes were checked against `sha256`; InputsMismatch
    unless it is one contract.recorded reads, holding what the spec's `contents` records
    (where it records them: synth judged the models' inputs by them)."""
    try:
        with path.open("rb") as file:
            size = path.stat().st_size
            recording = read_recording(file, size)
            # Within MAX_RECORDED_BYTES, which read_recording held the size to.
            data = bytearray(file.read(size - recording.data_start))
    except OSError as error:
        raise ModelLoadError(f"cannot read {path}: {error.strerror}") from error
    except BadRecording as error:
        raise InputsMismatch(f"the recorded inputs {path} are refused: {error}") from error
    if contents is not None and (disagreement := contents_disagree(recording, contents)):
        raise InputsMismatch(
            f"the recorded inputs {path} are refused: {disagreement}; synth held the models' "
            "inputs to those contents: set contents: to what the file holds"
        )
    samples = {
        name: tuple(_tensor(data, tensor.shape, tensor.dtype, tensor.begin) for tensor in held)
        for name, held in recording.inputs.items()
    }
    return Replay(sha256, recording, samples)


def _tensor(data: bytearray, shape: tuple[int, ...], dtype: str, begin: int) -> torch.Tensor:
    count = prod(shape)
    if count == 0:
        return torch.empty(shape, dtype=INPUT_DTYPES[dtype])
    # safetensors stores little-endian, as every machine the runner image runs on is.
    flat = torch.frombuffer(data, dtype=INPUT_DTYPES[dtype], count=count, offset=begin)
    return flat.reshape(shape)


def recorded_batches(
    variant: VariantConfig, replay: Replay, expected: Sequence[ExpectedInput]
) -> tuple[Batch, ...]:
    """The variant's batches of the recording, in the program's input order, on the CPU,
    floating ones in fp32 (the reference's; `as_variant` casts them): batch j stacks samples
    j*b .. j*b+b-1 (b the batch size), wrapping to the start in the last. InputsMismatch
    unless the recording fits the program's inputs and the spec's dtypes."""
    given = [GivenInput(spec.shape, spec.dtype) for spec in variant.inputs]
    misfit = recording_misfit(variant.model, variant.batch_size, replay.recording, given, expected)
    if misfit is not None:
        raise InputsMismatch(f"{misfit}; check benchmark.recorded_inputs against the model")
    size, count = variant.batch_size, replay.count
    batches = []
    for start in range(0, count, size):
        batch = []
        for want in expected:
            held = replay.samples[want.name]
            stacked = torch.stack([held[k % count] for k in range(start, start + size)])
            batch.append(stacked.float() if stacked.is_floating_point() else stacked)
        batches.append(tuple(batch))
    return tuple(batches)
