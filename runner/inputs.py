"""A variant's inputs: checked against what the exported program accepts (contract.inputs'
rule, with what torch loaded), then drawn, seeded, so that the timed loop and the accuracy
pass (runner/accuracy.py) see the same values.

Integer inputs are ids where they index a table (an embedding): drawn from the table's rows,
which the program itself says, never guessed (an id past the table is an IndexError, or on a
GPU a device-side assert). An integer input that reaches no table (a mask, a flag) is drawn
from {0, 1}, which any consumer accepts; a uint8 one is pixels (a camera frame a preprocess
stage normalises), drawn over its whole range.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import torch
from torch.export import ExportedProgram
from torch.fx import Node

from contract.accuracy import INPUT_SEED, DrawnInput
from contract.config import VariantConfig
from contract.inputs import Dimension, ExpectedInput, GivenInput, inputs_misfit
from runner.errors import ConfigError
from runner.precision import dtype_name

INPUT_DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
_aten = torch.ops.aten
_SAME_VALUES: Final = frozenset(
    {
        _aten.view.default,
        _aten.reshape.default,
        _aten._unsafe_view.default,
        _aten.unsqueeze.default,
        _aten.squeeze.default,
        _aten.squeeze.dim,
        _aten.squeeze.dims,
        _aten.flatten.using_ints,
        _aten.expand.default,
        _aten.permute.default,
        _aten.transpose.int,
        _aten.t.default,
        _aten.slice.Tensor,
        _aten.select.int,
        _aten.clone.default,
        _aten.contiguous.default,
        _aten.alias.default,
        _aten.detach.default,
        _aten._to_copy.default,
        _aten.to.dtype,
        _aten.to.dtype_layout,
    }
)
"""Operators whose output holds (some of) their first argument's values, unchanged: ids
reshaped or sliced on their way to a table are still ids of it."""
_FALLBACK_HIGH: Final = 2
_PIXEL_HIGH: Final = 256

Batch = tuple[torch.Tensor, ...]
"""One call's inputs, in the program's order, the batch first in each."""


@dataclass(frozen=True)
class Feed:
    """A variant's inputs for each query: query k takes batch k modulo their count. Drawn
    inputs are one batch, every query's; a recording (runner/recorded.py) is replayed in
    order, wrapping. The one seam between where inputs come from and what is called on
    them."""

    batches: tuple[Batch, ...]

    def __call__(self, query: int) -> Batch:
        return self.batches[query % len(self.batches)]

    def __len__(self) -> int:
        return len(self.batches)


@dataclass
class Queries:
    """One step's calls on a feed: each call is the next query's batch, from query 0."""

    feed: Feed
    query: int = -1

    def __call__(self) -> Batch:
        self.query += 1
        return self.feed(self.query)

    @property
    def on_first_batch(self) -> bool:
        """Whether the latest query took the feed's first batch."""
        return self.query % len(self.feed) == 0


@dataclass(frozen=True)
class IdBound:
    """The rows of the table an integer input indexes: its ids are drawn below `rows`."""

    rows: int
    table: str
    """The table's name in the program (its state_dict key)."""


def expected_inputs(program: ExportedProgram) -> list[ExpectedInput]:
    """What the program's user inputs accept, from its placeholders' metadata."""
    placeholders = {node.name: node for node in program.graph.nodes if node.op == "placeholder"}
    expected = []
    for name in program.graph_signature.user_inputs:
        value = placeholders[name].meta.get("val")
        if not isinstance(value, torch.Tensor):
            continue
        dimensions = tuple(_dimension(program, size) for size in value.shape)
        expected.append(ExpectedInput(name, dimensions, dtype_name(value.dtype)))
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
    given = [GivenInput(spec.shape, spec.dtype) for spec in variant.inputs]
    misfit = inputs_misfit(variant.model, variant.batch_size, given, expected)
    if misfit:
        raise ConfigError(f"{misfit.message}; check the spec's inputs against the exported model")


def id_bounds(program: ExportedProgram) -> dict[int, IdBound]:
    """For each user input (by position) that reaches a table lookup as its ids, through
    operators that keep the values, the table's rows (the smallest, if it reaches several)."""
    signature = program.graph_signature
    names = {
        **signature.inputs_to_parameters,
        **signature.inputs_to_buffers,
        **signature.inputs_to_lifted_tensor_constants,
    }
    placeholders = {node.name: node for node in program.graph.nodes if node.op == "placeholder"}
    bounds: dict[int, IdBound] = {}
    for position, name in enumerate(signature.user_inputs):
        tables = [
            IdBound(int(table.meta["val"].shape[0]), names.get(table.name, table.name))
            for table in _tables_indexed_by(placeholders[name])
            if isinstance(table.meta.get("val"), torch.Tensor) and table.meta["val"].dim() > 0
        ]
        if tables:
            bounds[position] = min(tables, key=lambda bound: (bound.rows, bound.table))
    return bounds


def _tables_indexed_by(start: Node) -> list[Node]:
    """The tables (nodes) whose rows `start`'s values select, directly or through operators
    that keep them."""
    found: list[Node] = []
    seen: set[Node] = set()
    pending = [start]
    while pending:
        node = pending.pop()
        if node in seen:
            continue
        seen.add(node)
        for user in node.users:
            if user.op != "call_function":
                continue
            table = _table_of(user, node)
            if table is not None:
                found.append(table)
            elif user.target in _SAME_VALUES and user.args and user.args[0] is node:
                pending.append(user)
    return found


def _table_of(lookup: Node, ids: Node) -> Node | None:
    """The table `lookup` selects rows of with `ids`, if it is such a lookup."""
    args = lookup.args
    target = lookup.target
    embedding = target is _aten.embedding.default and args[1:2] == (ids,)
    selected = target is _aten.index_select.default and args[1:3] == (0, ids)
    indexed = (
        target is _aten.index.Tensor
        and isinstance(args[1], list | tuple)
        and list(args[1][:1]) == [ids]
    )
    table = args[0] if embedding or selected or indexed else None
    return table if isinstance(table, Node) else None


def draw_inputs(
    variant: VariantConfig, bounds: Mapping[int, IdBound]
) -> tuple[tuple[torch.Tensor, ...], list[DrawnInput]]:
    """Seeded inputs of the variant's shapes, on the CPU, floating ones in fp32 (the
    reference's; `as_variant` casts them), and how each was drawn: floating values from the
    standard normal distribution, integer ones below their table's rows (`id_bounds`), else
    in {0, 1}."""
    generator = torch.Generator().manual_seed(INPUT_SEED)
    tensors = []
    drawn = []
    for position, spec in enumerate(variant.inputs):
        shape = (variant.batch_size, *spec.shape)
        declared = INPUT_DTYPES[spec.dtype]
        if declared.is_floating_point:
            tensors.append(torch.randn(shape, generator=generator))
            drawn.append(DrawnInput(dtype=spec.dtype))
            continue
        bound = bounds.get(position) if declared != torch.bool else None
        high = bound.rows if bound else _PIXEL_HIGH if declared == torch.uint8 else _FALLBACK_HIGH
        tensors.append(torch.randint(0, high, shape, generator=generator).to(declared))
        drawn.append(
            DrawnInput(dtype=spec.dtype, low=0, high=high, bounded_by=bound and bound.table)
        )
    return tuple(tensors), drawn


def as_variant(
    inputs: tuple[torch.Tensor, ...], dtype: torch.dtype, device: torch.device
) -> tuple[torch.Tensor, ...]:
    """`inputs` on `device`, floating ones cast to the variant's compute `dtype`."""
    return tuple(
        (tensor.to(dtype) if tensor.is_floating_point() else tensor).to(device) for tensor in inputs
    )
