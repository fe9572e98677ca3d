"""A recorded inputs file (`benchmark.recorded_inputs`): what it holds, read from its
safetensors header without torch, bounded, and whether it fits a model's inputs. One reader
and one rule for synth (a committed file) and the runner (whatever the pod was given).

The layout (docs/specs.md, "Recorded inputs"): one tensor per input per recorded sample,
named `<input name>.<sample>` (samples numbered from 0, without gaps), each holding that
sample alone, without a batch dimension. The input names are the exported program's (what
`benchfleet export` lists: a dict observation `obs` with keys `image` and `state` is the two
inputs `obs_image` and `obs_state`). One tensor per sample, rather than one per input with a
leading sample dimension, lets each sample have its own shape (a variable-length token
sequence, a data-dependent count of boxes) and lets a recorder append frame by frame; a
variant of batch size b stacks b consecutive samples, which must then share their shape.

safetensors (https://github.com/huggingface/safetensors): 8 bytes, the header's length as a
little-endian unsigned integer; the header, a JSON object mapping each tensor's name to its
`dtype`, `shape` and `data_offsets` (begin, end: bytes after the header), and optionally
`__metadata__` (strings); then the data.
"""

import json
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import prod
from typing import Annotated, BinaryIO, Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from contract.inputs import ExpectedInput, GivenInput, dimension_misfit

MAX_RECORDED_BYTES: Final = 4 << 30
"""The largest recorded inputs file the runner reads (it holds it in memory whole)."""
MAX_HEADER_BYTES: Final = 16 << 20
"""The largest header read: safetensors' own reader refuses more than 100 MB; a header of
100,000 tensors takes some 10 MB."""
MAX_RECORDED_TENSORS: Final = 100_000
MAX_RECORDED_DIMENSIONS: Final = 8
"""As many as a spec's input shape may have."""
DTYPES: Final = {
    "F32": ("float32", 4),
    "F16": ("float16", 2),
    "BF16": ("bfloat16", 2),
    "I64": ("int64", 8),
    "I32": ("int32", 4),
    "U8": ("uint8", 1),
    "BOOL": ("bool", 1),
}
"""The safetensors dtypes a recording may hold: those a spec's input may have
(synth/spec.py, InputSpec), with each element's size."""
_INPUT_NAME: Final = r"[A-Za-z_][A-Za-z0-9_]{0,199}"
_NAME: Final = re.compile(rf"({_INPUT_NAME})\.(0|[1-9][0-9]{{0,8}})")
_METADATA: Final = "__metadata__"


class BadRecording(ValueError):
    """The file is no recorded inputs file this reader accepts; the message says why."""


@dataclass(frozen=True)
class RecordedTensor:
    """One input of one sample: its shape, dtype (torch's name) and bytes' offsets in the
    data that follows the header."""

    shape: tuple[int, ...]
    dtype: str
    begin: int
    end: int


@dataclass(frozen=True)
class Recording:
    """What a recorded inputs file holds: each input's samples, in order."""

    inputs: Mapping[str, tuple[RecordedTensor, ...]]
    data_start: int
    """Where the data begins in the file (after the header)."""

    @property
    def samples(self) -> int:
        return len(next(iter(self.inputs.values())))

    def describe(self) -> str:
        """The inputs in a few words: each one's name, first sample's shape and dtype."""
        return "; ".join(
            f"{name} {list(tensors[0].shape)} {tensors[0].dtype}"
            for name, tensors in self.inputs.items()
        )


def read_recording(file: BinaryIO, size: int) -> Recording:
    """The recording in `file` of `size` bytes, from its header alone (MAX_HEADER_BYTES at
    most are read); BadRecording unless it is one, within the bounds above."""
    if size > MAX_RECORDED_BYTES:
        raise BadRecording(f"it is {size:,} bytes; a recording may hold {MAX_RECORDED_BYTES:,}")
    prefix = file.read(8)
    if len(prefix) < 8:
        raise BadRecording("it is shorter than a safetensors header's 8-byte length")
    (length,) = struct.unpack("<Q", prefix)
    if length > MAX_HEADER_BYTES or 8 + length > size:
        raise BadRecording(
            f"its header claims {length:,} bytes, more than the file or the "
            f"{MAX_HEADER_BYTES:,} a header may hold: is it a safetensors file?"
        )
    try:
        header = json.loads(file.read(length))
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        raise BadRecording(f"its header is not JSON: {error}") from None
    if not isinstance(header, dict):
        raise BadRecording("its header is not a JSON object")
    header.pop(_METADATA, None)
    if not header:
        raise BadRecording("it holds no tensors")
    if len(header) > MAX_RECORDED_TENSORS:
        raise BadRecording(f"it holds {len(header):,} tensors; at most {MAX_RECORDED_TENSORS:,}")
    data = size - 8 - length
    samples: dict[str, dict[int, RecordedTensor]] = {}
    for name, entry in header.items():
        found = _NAME.fullmatch(name)
        if found is None:
            raise BadRecording(
                f"tensor {name[:200]!r} is not named <input name>.<sample>, e.g. obs_image.0"
            )
        samples.setdefault(found[1], {})[int(found[2])] = _tensor(name, entry, data)
    return Recording(_in_order(samples), data_start=8 + length)


def _tensor(name: str, entry: object, data: int) -> RecordedTensor:
    if not isinstance(entry, dict):
        raise BadRecording(f"tensor {name}'s entry is not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in DTYPES:
        allowed = ", ".join(DTYPES)
        raise BadRecording(f"tensor {name} is {str(dtype)[:20]}; a recording holds {allowed}")
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_RECORDED_DIMENSIONS
        or not all(type(size) is int and 0 <= size < 1 << 40 for size in shape)
    ):
        raise BadRecording(
            f"tensor {name}'s shape is not a list of at most {MAX_RECORDED_DIMENSIONS} sizes"
        )
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(type(offset) is int for offset in offsets)
    ):
        raise BadRecording(f"tensor {name}'s data_offsets are not [begin, end]")
    begin, end = offsets
    torch_name, itemsize = DTYPES[dtype]
    if not 0 <= begin <= end <= data or end - begin != prod(shape) * itemsize:
        raise BadRecording(
            f"tensor {name}'s data_offsets [{begin}, {end}] do not hold a {dtype} of shape "
            f"{shape} within the file's {data:,} bytes of data"
        )
    return RecordedTensor(tuple(shape), torch_name, begin, end)


def _in_order(
    samples: Mapping[str, Mapping[int, RecordedTensor]],
) -> dict[str, tuple[RecordedTensor, ...]]:
    counts = {name: len(held) for name, held in samples.items()}
    for name, held in samples.items():
        if sorted(held) != list(range(len(held))):
            missing = min(set(range(len(held))) - set(held))
            raise BadRecording(f"input {name} has no sample {missing}: samples count from 0")
    if len(set(counts.values())) > 1:
        listed = ", ".join(f"{name} {count}" for name, count in sorted(counts.items()))
        raise BadRecording(f"its inputs hold different numbers of samples: {listed}")
    return {
        name: tuple(held[k] for k in range(len(held))) for name, held in sorted(samples.items())
    }


def recording_misfit(
    model: str,
    batch_size: int,
    recording: Recording,
    given: Sequence[GivenInput],
    expected: Sequence[ExpectedInput],
) -> str | None:
    """Why `recording` cannot feed `model` at `batch_size`, or None if it can: it must hold
    each of the program's inputs by name and no other, each sample in the dtype the spec
    gives that input (`given`, by position) and of a shape the program accepts with the
    batch first, and the samples each batch stacks of one shape."""
    names = [want.name for want in expected]
    if sorted(names) != sorted(recording.inputs):
        return (
            f"the recorded inputs hold {', '.join(recording.inputs)}, but model {model} takes "
            f"{', '.join(names) or 'no tensor inputs'}"
        )
    for position, (want, spec) in enumerate(zip(expected, given, strict=True)):
        tensors = recording.inputs[want.name]
        for sample, tensor in enumerate(tensors):
            where = f"recorded input {want.name}.{sample}"
            if tensor.dtype != spec.dtype:
                return (
                    f"{where} is {tensor.dtype}, but the spec gives model {model}'s input "
                    f"{position} as {spec.dtype}"
                )
            shape = (batch_size, *tensor.shape)
            if (problem := dimension_misfit(want, shape)) is not None:
                listed = ", ".join(map(str, shape))
                return (
                    f"{where} at batch {batch_size} is [{listed}], but model {model} "
                    f"expects {want}: {problem}"
                )
        for start in range(0, len(tensors), batch_size):
            batch = [tensors[k % len(tensors)] for k in range(start, start + batch_size)]
            if len({tensor.shape for tensor in batch}) > 1:
                return (
                    f"recorded input {want.name}'s samples {start}..{start + batch_size - 1} "
                    f"differ in shape, and batch {batch_size} stacks them: record "
                    "equal shapes, or use batch size 1"
                )
    return None


MAX_RECORDED_INPUTS: Final = 64


class RecordedInput(BaseModel):
    """One input as every sample of a recording holds it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    shape: list[Annotated[StrictInt, Field(ge=0, lt=1 << 40)]] = Field(
        max_length=MAX_RECORDED_DIMENSIONS
    )
    """Each sample's shape, without a batch dimension."""
    dtype: Literal["float32", "float16", "bfloat16", "int64", "int32", "uint8", "bool"]


class RecordedContents(BaseModel):
    """What a recording holds, recorded in the spec (its `contents:`) where synth cannot read
    the file (`url`, `oci`, `image_path`), so that it is held to the models' inputs at
    validation all the same; the runner refuses a file that holds other contents. Only a
    recording whose samples share each input's shape can be so recorded."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    samples: StrictInt = Field(ge=1, le=MAX_RECORDED_TENSORS)
    """How many samples it holds of each input."""
    inputs: dict[Annotated[str, Field(pattern=rf"^{_INPUT_NAME}$")], RecordedInput] = Field(
        min_length=1, max_length=MAX_RECORDED_INPUTS
    )
    """Each input by the program's name for it: every sample's shape and dtype."""

    def recording(self) -> Recording:
        """A recording of these contents, for the rule `recording_misfit` applies."""
        return Recording(
            {
                name: (RecordedTensor(tuple(held.shape), held.dtype, 0, 0),) * self.samples
                for name, held in sorted(self.inputs.items())
            },
            data_start=0,
        )

    @classmethod
    def of(cls, recording: Recording) -> Self | None:
        """The contents of `recording`; None where an input's samples differ in shape."""
        inputs = {}
        for name, held in recording.inputs.items():
            if len({(tensor.shape, tensor.dtype) for tensor in held}) > 1:
                return None
            inputs[name] = RecordedInput(shape=list(held[0].shape), dtype=held[0].dtype)
        return cls.model_validate({"samples": recording.samples, "inputs": inputs})

    def flow(self) -> str:
        """The contents as one line of YAML, for a spec's `contents:`."""
        inputs = ", ".join(
            f"{name}: {{shape: {held.shape}, dtype: {held.dtype}}}"
            for name, held in sorted(self.inputs.items())
        )
        return f"{{samples: {self.samples}, inputs: {{{inputs}}}}}"


def contents_disagree(recording: Recording, contents: RecordedContents) -> str | None:
    """Why `recording` is not what `contents` records, or None where it is."""
    found = RecordedContents.of(recording)
    if found == contents:
        return None
    held = found.flow() if found else f"samples of varying shapes ({recording.describe()})"
    return f"it holds {held}, but the spec's contents: records {contents.flow()}"
