"""A variant's inputs: checked against what the exported program accepts, then made.

The program itself checks its inputs when called, but it raises `AssertionError("Guard
failed: input.size()[1] == 64")`, which says neither what the spec gave nor that the spec is
at fault. Checking first turns a spec mistake into a `bad_config` error that names both shapes.
"""

from dataclasses import dataclass

import torch
from torch.export import ExportedProgram

from contract.config import VariantConfig
from runner.errors import ConfigError
from runner.precision import dtype_name

INPUT_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "bool": torch.bool,
}
_INPUT_SEED = 0


@dataclass(frozen=True)
class Dimension:
    """One dimension an input accepts: a size, or a range of sizes (high None: unbounded)."""

    low: int
    high: int | None

    def accepts(self, size: int) -> bool:
        return self.low <= size and (self.high is None or size <= self.high)

    def __str__(self) -> str:
        if self.low == self.high:
            return str(self.low)
        return f"{self.low}..{'' if self.high is None else self.high}"


@dataclass(frozen=True)
class ExpectedInput:
    """A user input of an exported program: its name, dimensions and dtype."""

    name: str
    dimensions: tuple[Dimension, ...]
    dtype: torch.dtype

    def __str__(self) -> str:
        shape = ", ".join(str(d) for d in self.dimensions)
        return f"{self.name} [{shape}] {dtype_name(self.dtype)}"


def expected_inputs(program: ExportedProgram) -> list[ExpectedInput]:
    """What the program's user inputs accept, from its placeholders' metadata."""
    placeholders = {node.name: node for node in program.graph.nodes if node.op == "placeholder"}
    expected = []
    for name in program.graph_signature.user_inputs:
        value = placeholders[name].meta.get("val")
        if not isinstance(value, torch.Tensor):
            continue
        dimensions = tuple(_dimension(program, size) for size in value.shape)
        expected.append(ExpectedInput(name, dimensions, value.dtype))
    return expected


def _dimension(program: ExportedProgram, size: int | torch.SymInt) -> Dimension:
    if isinstance(size, int):
        return Dimension(size, size)
    bounds = program.range_constraints.get(size.node.expr)
    if bounds is None:
        return Dimension(0, None)
    return Dimension(_bound(bounds.lower) or 0, _bound(bounds.upper))


def _bound(value: object) -> int | None:
    try:
        return int(str(value))
    except (TypeError, ValueError, OverflowError):  # sympy's infinities
        return None


def check_inputs(variant: VariantConfig, expected: list[ExpectedInput]) -> None:
    """Raise ConfigError unless the variant's inputs fit the program's."""
    given = [((variant.batch_size, *spec.shape), spec.dtype) for spec in variant.inputs]
    wanted = "; ".join(str(e) for e in expected)
    if len(given) != len(expected):
        raise ConfigError(
            f"model {variant.model} takes {len(expected)} input(s) ({wanted}), but the spec "
            f"gives {len(given)}; check the spec's inputs against the exported model"
        )
    for position, (want, (shape, dtype)) in enumerate(zip(expected, given, strict=True)):
        problem = _mismatch(want, shape, INPUT_DTYPES[dtype])
        if problem:
            raise ConfigError(
                f"model {variant.model} input {position} expects {want}; the spec gives "
                f"[{', '.join(map(str, shape))}] {dtype} (batch {variant.batch_size} first): "
                f"{problem}"
            )


def _mismatch(want: ExpectedInput, shape: tuple[int, ...], dtype: torch.dtype) -> str | None:
    if len(shape) != len(want.dimensions):
        return f"{len(shape)} dimensions, not {len(want.dimensions)}"
    for index, (size, dimension) in enumerate(zip(shape, want.dimensions, strict=True)):
        if not dimension.accepts(size):
            if index == 0 and dimension.low == dimension.high:
                return (
                    f"the batch is {size}, but the model was exported with a static batch of "
                    f"{dimension.low}: set batch_sizes to [{dimension.low}], or export with a "
                    "dynamic batch dimension (torch.export.Dim)"
                )
            return f"dimension {index} is {size}, not {dimension}"
    if dtype.is_floating_point != want.dtype.is_floating_point:
        return f"a {dtype_name(dtype)} input where the model takes {dtype_name(want.dtype)}"
    return None


def make_inputs(
    variant: VariantConfig, dtype: torch.dtype, device: torch.device
) -> tuple[torch.Tensor, ...]:
    """Seeded inputs of the variant's shapes; floating ones in the compute dtype, integer ones
    in {0, 1}, so that any embedding table accepts them."""
    generator = torch.Generator().manual_seed(_INPUT_SEED)
    tensors = []
    for spec in variant.inputs:
        shape = (variant.batch_size, *spec.shape)
        declared = INPUT_DTYPES[spec.dtype]
        if declared.is_floating_point:
            tensor = torch.randn(shape, generator=generator).to(dtype)
        else:
            tensor = torch.randint(0, 2, shape, generator=generator).to(declared)
        tensors.append(tensor.to(device))
    return tuple(tensors)
