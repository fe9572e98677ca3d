"""The timed loop's per-iteration durations, small enough to travel in the result line.

Consecutive durations differ little, so each is written as its difference from the one before,
zigzag-mapped to an unsigned integer and varint-encoded; zlib then removes what repeats and
base64 makes it JSON text: about 3.3 characters per iteration for durations with a few
per cent of nanosecond-resolution noise (33 KB for 10,000 iterations). Only the
standard library is used: the runner encodes, the collector and the report decode.
"""

import base64
import zlib
from collections.abc import Iterable, Sequence
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

ENCODING: Final = "zigzag-delta-varint-zlib-base64"
MAX_SAMPLES: Final = 65_536
"""Beyond this many iterations every k-th is kept (`stride`), so a result line stays below about
half a megabyte whatever the spec's max_iterations."""
_MAX_DECODED_BYTES: Final = MAX_SAMPLES * 10
"""A varint of a 64-bit value takes at most 10 bytes: a larger inflation is not a sample list."""


class Samples(BaseModel):
    """Per-iteration durations of the timed loop, in nanoseconds, in the order they ran."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    encoding: Literal["zigzag-delta-varint-zlib-base64"] = ENCODING
    unit: Literal["ns"] = "ns"
    count: int = Field(ge=1, le=MAX_SAMPLES)
    """Durations in `data`."""
    stride: int = Field(default=1, ge=1)
    """Every `stride`-th iteration was kept (1: all of them)."""
    data: str

    def durations_ns(self) -> list[int]:
        """The durations; raises ValueError when `data` does not hold `count` of them."""
        inflate = zlib.decompressobj()
        try:
            packed = inflate.decompress(
                base64.b64decode(self.data, validate=True), _MAX_DECODED_BYTES
            )
        except (ValueError, zlib.error) as error:
            raise ValueError(f"samples are not {ENCODING}: {error}") from error
        if inflate.unconsumed_tail or not inflate.eof:
            raise ValueError(f"samples inflate beyond {_MAX_DECODED_BYTES} bytes or are cut off")
        values = _undelta(_unzigzag(value) for value in _varints(packed))
        if len(values) != self.count:
            raise ValueError(f"samples hold {len(values)} durations, not {self.count}")
        return values


def encode(durations_ns: Sequence[int]) -> Samples:
    """`durations_ns`, every k-th of them if there are more than MAX_SAMPLES."""
    if not durations_ns:
        raise ValueError("no durations to encode")
    stride = -(-len(durations_ns) // MAX_SAMPLES)
    kept = durations_ns[::stride]
    packed = bytearray()
    previous = 0
    for value in kept:
        _put_varint(packed, _zigzag(value - previous))
        previous = value
    data = base64.b64encode(zlib.compress(bytes(packed), 9)).decode("ascii")
    return Samples(count=len(kept), stride=stride, data=data)


def _zigzag(value: int) -> int:
    return value * 2 if value >= 0 else -value * 2 - 1


def _unzigzag(value: int) -> int:
    return value // 2 if value % 2 == 0 else -(value + 1) // 2


def _put_varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _varints(packed: bytes) -> list[int]:
    values: list[int] = []
    value = shift = 0
    for byte in packed:
        value |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
            if shift > 63:
                raise ValueError("a varint longer than 64 bits")
            continue
        values.append(value)
        value = shift = 0
    if shift:
        raise ValueError("the samples end inside a varint")
    return values


def _undelta(deltas: Iterable[int]) -> list[int]:
    values: list[int] = []
    current = 0
    for delta in deltas:
        current += delta
        values.append(current)
    return values
