"""contract/recorded.py: a recorded inputs file read from its header, bounded, and held to a
model's inputs by the one rule synth and the runner share."""

import io
import json
import re
import struct

import pytest
import torch

from contract.inputs import Dimension, ExpectedInput, GivenInput
from contract.recorded import (
    MAX_HEADER_BYTES,
    BadRecording,
    RecordedContents,
    RecordedTensor,
    Recording,
    contents_disagree,
    read_recording,
    recording_misfit,
)
from tests.recordings import frames, safetensors_bytes

MLP = [ExpectedInput("input", (Dimension(1, 1024), Dimension(64, 64)), "float32")]
FLOAT = [GivenInput((64,), "float32")]


def read(data: bytes) -> Recording:
    return read_recording(io.BytesIO(data), len(data))


def raw(header: object, data: bytes = b"") -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def test_a_recording_is_read_by_input_and_sample_in_order() -> None:
    tensors = {**frames("obs_image", 3, (3, 8, 8)), **frames("obs_state", 3, (7,))}
    tensors["obs_state.2"] = torch.arange(7, dtype=torch.int64)
    recording = read(safetensors_bytes(tensors))
    assert list(recording.inputs) == ["obs_image", "obs_state"]
    assert recording.samples == 3
    assert [t.shape for t in recording.inputs["obs_image"]] == [(3, 8, 8)] * 3
    assert [t.dtype for t in recording.inputs["obs_state"]] == ["float32", "float32", "int64"]


@pytest.mark.parametrize(
    ("data", "said"),
    [
        (b"\x01\x02", "shorter than a safetensors header"),
        (struct.pack("<Q", MAX_HEADER_BYTES + 1) + b"{}", "its header claims"),
        (struct.pack("<Q", 100) + b"{}", "more than the file"),
        (struct.pack("<Q", 3) + b"{x}", "its header is not JSON"),
        (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
        (raw({"__metadata__": {"a": "b"}}), "it holds no tensors"),
        (raw({"input": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}}, b"\0" * 4),
         "not named <input name>.<sample>"),
        (raw({"input.0": {"dtype": "F64", "shape": [], "data_offsets": [0, 8]}}, b"\0" * 8),
         "is F64; a recording holds F32"),
        (raw({"input.0": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4),
         "do not hold a F32 of shape [2]"),
        (raw({"input.0": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}),
         "within the file's 0 bytes"),
        (raw({"input.0": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}),
         "shape is not a list"),
        (raw({"input.1": {"dtype": "F32", "shape": [], "data_offsets": [0, 4]}}, b"\0" * 4),
         "input input has no sample 0"),
    ],
)  # fmt: skip
def test_what_is_no_recording_is_refused_saying_why(data: bytes, said: str) -> None:
    with pytest.raises(BadRecording, match=re.escape(said)):
        read(data)


def test_inputs_of_different_sample_counts_are_refused() -> None:
    tensors = {**frames("a", 2, (1,)), **frames("b", 3, (1,))}
    with pytest.raises(BadRecording, match="different numbers of samples: a 2, b 3"):
        read(safetensors_bytes(tensors))


def test_a_file_over_the_bound_is_refused_before_its_header_is_read() -> None:
    with pytest.raises(BadRecording, match="a recording may hold"):
        read_recording(io.BytesIO(b""), 1 << 40)


def test_a_recording_that_fits_the_model_has_no_misfit() -> None:
    recording = read(safetensors_bytes(frames("input", 5, (64,))))
    assert recording_misfit("mlp", 2, recording, FLOAT, MLP) is None


@pytest.mark.parametrize(
    ("tensors", "batch", "said"),
    [
        (frames("obs", 2, (64,)), 1, "the recorded inputs hold obs, but model mlp takes input"),
        (frames("input", 2, (32,)), 1, "recorded input input.0 at batch 1 is [1, 32], but model "
         "mlp expects input [1..1024, 64] float32: dimension 1 is 32, not 64"),
        ({"input.0": torch.zeros(64, dtype=torch.int64)}, 1,
         "recorded input input.0 is int64, but the spec gives model mlp's input 0 as float32"),
        ({"input.0": torch.zeros(64), "input.1": torch.zeros(64), "input.2": torch.zeros(65)}, 2,
         "recorded input input.2 at batch 2 is [2, 65]"),
    ],
)  # fmt: skip
def test_a_recording_that_does_not_fit_says_which_input_and_sample(
    tensors: dict[str, torch.Tensor], batch: int, said: str
) -> None:
    recording = read(safetensors_bytes(tensors))
    misfit = recording_misfit("mlp", batch, recording, FLOAT, MLP)
    assert misfit is not None
    assert misfit.startswith(said)


def test_variable_lengths_fit_a_dynamic_dimension_at_batch_one_only() -> None:
    tokens = [ExpectedInput("tokens", (Dimension(1, 8), Dimension(1, 512)), "int64")]
    given = [GivenInput((16,), "int64")]
    tensors = {f"tokens.{k}": torch.zeros(length, dtype=torch.int64) for k, length in
               enumerate([16, 9, 30])}  # fmt: skip
    recording = read(safetensors_bytes(tensors))
    assert recording_misfit("lm", 1, recording, given, tokens) is None
    misfit = recording_misfit("lm", 2, recording, given, tokens)
    assert misfit is not None
    assert "samples 0..1 differ in shape, and batch 2 stacks them" in misfit


def test_contents_say_what_a_recording_holds_in_one_line() -> None:
    recording = read(safetensors_bytes({**frames("obs_image", 3, (3, 8)), **frames("s", 3, ())}))
    contents = RecordedContents.of(recording)
    assert contents is not None
    assert contents.flow() == (
        "{samples: 3, inputs: {obs_image: {shape: [3, 8], dtype: float32}, "
        "s: {shape: [], dtype: float32}}}"
    )
    assert contents_disagree(recording, contents) is None
    # The contents stand for the file in the rule that holds it to a model.
    assert contents.recording().inputs == {
        name: tuple(RecordedTensor(t.shape, t.dtype, 0, 0) for t in held)
        for name, held in recording.inputs.items()
    }


def test_contents_that_are_not_the_files_say_both() -> None:
    recording = read(safetensors_bytes(frames("input", 2, (64,))))
    contents = RecordedContents.model_validate(
        {"samples": 3, "inputs": {"input": {"shape": [64], "dtype": "float32"}}}
    )
    assert contents_disagree(recording, contents) == (
        "it holds {samples: 2, inputs: {input: {shape: [64], dtype: float32}}}, but the spec's "
        "contents: records {samples: 3, inputs: {input: {shape: [64], dtype: float32}}}"
    )


def test_samples_of_varying_shapes_have_no_contents_to_record() -> None:
    tensors = {"tokens.0": torch.zeros(3), "tokens.1": torch.zeros(5)}
    assert RecordedContents.of(read(safetensors_bytes(tensors))) is None
