"""Example inputs as the command line gives them: `3,224,224` (float32), `128:int64:30522`
(token ids below 30,522), `attention_mask=128:int64:2` (a keyword argument of the model's
forward). One sample each: the batch dimension comes first, and is the export's dynamic one.
"""

import math
import re
from dataclasses import dataclass
from keyword import iskeyword
from typing import Final, get_args

from contract.inputs import FLOATING_DTYPES
from synth.spec import InputSpec

INPUT_DTYPES: Final[tuple[str, ...]] = get_args(InputSpec.model_fields["dtype"].annotation)
"""What a workflow's `inputs[].dtype` may say."""
MAX_BATCH: Final = 1024
"""The largest batch the exported program accepts by default: any sweep's batch sizes."""
MAX_DIMENSIONS: Final = 8
"""Of one sample, as the spec's `inputs[].shape` allows."""
MAX_SAMPLE_ELEMENTS: Final = 1 << 28
"""Of one sample (1 GiB as float32): the example batch is built in memory."""
DEFAULT_ID_BOUND: Final = 2
"""Integer inputs without a bound are drawn from {0, 1}, as the runner draws those that reach
no table: a mask or a flag."""

_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER: Final = re.compile(r"[0-9]{1,12}")
SYNTAX: Final = (
    "[NAME=]SHAPE[:DTYPE[:HIGH]], e.g. 3,224,224 or input_ids=128:int64:30522 (one sample's "
    "sizes; DTYPE one of " + ", ".join(INPUT_DTYPES) + "; HIGH: integer values are drawn "
    "below it, the vocabulary size for token ids)"
)


class BadInput(ValueError):
    """An --input that cannot be read; says which and why."""


@dataclass(frozen=True)
class ExampleInput:
    """One input of the model: one sample's shape, its dtype, and for integers the bound the
    example's values are drawn below; `keyword` where it is passed by name."""

    shape: tuple[int, ...]
    dtype: str = "float32"
    high: int | None = None
    keyword: str | None = None

    @property
    def floating(self) -> bool:
        return self.dtype in FLOATING_DTYPES

    def spec(self) -> str:
        """This input as a workflow's `inputs:` entry."""
        shape = ", ".join(map(str, self.shape))
        dtype = "" if self.dtype == "float32" else f", dtype: {self.dtype}"
        return f"{{shape: [{shape}]{dtype}}}"


def parse_input(text: str) -> ExampleInput:
    """An --input value; raises BadInput naming what is wrong."""
    keyword, equals, rest = text.partition("=")
    if not equals:
        keyword, rest = "", text
    elif not _NAME.fullmatch(keyword) or iskeyword(keyword):
        raise BadInput(f"--input {text!r}: {keyword!r} is not a Python argument name")
    parts = rest.split(":")
    if len(parts) > 3:
        raise BadInput(f"--input {text!r} has {len(parts)} parts; the form is {SYNTAX}")
    shape = _shape(text, parts[0])
    dtype = parts[1] if len(parts) > 1 else "float32"
    if dtype not in INPUT_DTYPES:
        raise BadInput(f"--input {text!r}: dtype {dtype!r} is not one of {', '.join(INPUT_DTYPES)}")
    high = None
    if len(parts) == 3:
        if dtype in FLOATING_DTYPES or dtype == "bool":
            raise BadInput(f"--input {text!r}: a bound is for integer inputs (int64, int32)")
        if not _NUMBER.fullmatch(parts[2]) or int(parts[2]) < 1:
            raise BadInput(f"--input {text!r}: HIGH {parts[2]!r} is not a whole number above 0")
        high = int(parts[2])
    return ExampleInput(shape, dtype, high, keyword or None)


def _shape(text: str, sizes: str) -> tuple[int, ...]:
    items = sizes.split(",")
    if not all(_NUMBER.fullmatch(item.strip()) and int(item) > 0 for item in items):
        raise BadInput(
            f"--input {text!r}: {sizes!r} is not a shape of sizes above 0; the form is {SYNTAX}"
        )
    if len(items) > MAX_DIMENSIONS:
        raise BadInput(f"--input {text!r}: {len(items)} dimensions, more than {MAX_DIMENSIONS}")
    shape = tuple(int(item) for item in items)
    if math.prod(shape) > MAX_SAMPLE_ELEMENTS:
        raise BadInput(
            f"--input {text!r}: one sample of {math.prod(shape):,} elements is more than "
            f"{MAX_SAMPLE_ELEMENTS:,}"
        )
    return shape


def check_order(inputs: list[ExampleInput]) -> None:
    """Positional inputs come before keyword ones, each keyword once, as in a Python call."""
    keywords = [given.keyword for given in inputs if given.keyword]
    if len(set(keywords)) != len(keywords):
        raise BadInput("an --input names the same argument twice")
    seen_keyword = False
    for given in inputs:
        if given.keyword is None and seen_keyword:
            raise BadInput("a positional --input follows a NAME= one; give positional ones first")
        seen_keyword = seen_keyword or given.keyword is not None
