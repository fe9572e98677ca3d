"""What an exported program's inputs accept, and whether a variant's inputs fit: one rule for
synth (which reads it from the archive's JSON, without torch) and the runner (which reads it
from the loaded program). The program checks its inputs itself when called, but it raises
`AssertionError("Guard failed: input.size()[1] == 64")`, which says neither what the spec gave
nor that the spec is at fault."""

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

FLOATING_DTYPES: Final = frozenset({"float64", "float32", "float16", "bfloat16"})
_SERIALIZED_DTYPES: Final = {
    1: "uint8", 2: "int8", 3: "int16", 4: "int32", 5: "int64",
    6: "float16", 7: "float32", 8: "float64", 12: "bool", 13: "bfloat16",
}  # fmt: skip
"""torch.export's ScalarType numbers in model.json (torch/_export/serde/schema.py)."""
_UNBOUNDED: Final = 1 << 62
"""torch writes an unbounded range's end as a huge integer (int_oo), not as infinity."""


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
    """A user input of an exported program: its name, dimensions and dtype (torch's name for
    it without the prefix: float32, int64)."""

    name: str
    dimensions: tuple[Dimension, ...]
    dtype: str

    def __str__(self) -> str:
        shape = ", ".join(str(d) for d in self.dimensions)
        return f"{self.name} [{shape}] {self.dtype}"


@dataclass(frozen=True)
class Misfit:
    """Why a variant's inputs do not fit, in one sentence naming both shapes."""

    message: str
    is_batch: bool
    """The batch size is what the program refuses (a static-batch export), not the shapes."""
    has_extra_dimension: bool = False
    """An input has one dimension more than the program takes: often a per-sample shape
    written with the batch dimension in it."""


@dataclass(frozen=True)
class GivenInput:
    """One input as the spec gives it, per sample (the batch dimension comes first)."""

    shape: tuple[int, ...]
    dtype: str


def inputs_misfit(
    model: str, batch_size: int, given: Sequence[GivenInput], expected: Sequence[ExpectedInput]
) -> Misfit | None:
    """Why inputs of `given` shapes at `batch_size` do not fit `expected`, or None if they do."""
    wanted = "; ".join(str(e) for e in expected)
    if len(given) != len(expected):
        return Misfit(
            f"model {model} takes {len(expected)} input(s) ({wanted}), "
            f"but the spec gives {len(given)}",
            is_batch=False,
        )
    for position, (want, spec) in enumerate(zip(expected, given, strict=True)):
        shape = (batch_size, *spec.shape)
        misfit = _misfit(want, shape, spec.dtype)
        if misfit:
            problem, is_batch = misfit
            return Misfit(
                f"model {model} input {position} expects {want}; the spec gives "
                f"[{', '.join(map(str, shape))}] {spec.dtype} (batch {batch_size} first): "
                f"{problem}",
                is_batch=is_batch,
                has_extra_dimension=len(shape) == len(want.dimensions) + 1,
            )
    return None


def dimension_misfit(want: ExpectedInput, shape: tuple[int, ...]) -> str | None:
    """Why `want` does not accept a tensor of `shape` (the batch first), or None if it does."""
    misfit = _misfit(want, shape, want.dtype)
    return misfit[0] if misfit else None


def _misfit(want: ExpectedInput, shape: tuple[int, ...], dtype: str) -> tuple[str, bool] | None:
    if len(shape) != len(want.dimensions):
        return f"{len(shape)} dimensions, not {len(want.dimensions)}", False
    for index, (size, dimension) in enumerate(zip(shape, want.dimensions, strict=True)):
        if not dimension.accepts(size):
            if index == 0 and dimension.low == dimension.high:
                return (
                    f"the batch is {size}, but the model was exported with a static batch of "
                    f"{dimension.low}: set batch_sizes to [{dimension.low}], or export with a "
                    "dynamic batch dimension (torch.export.Dim)"
                ), True
            if index == 0:
                return f"the batch is {size}, outside the {dimension} the model accepts", True
            return f"dimension {index} is {size}, not {dimension}", False
    if (dtype in FLOATING_DTYPES) != (want.dtype in FLOATING_DTYPES):
        article = "an" if dtype.startswith("i") else "a"
        return f"{article} {dtype} input where the model takes {want.dtype}", False
    return None


def declared_inputs(program: object) -> tuple[ExpectedInput, ...]:
    """The user inputs an archive's model.json declares, read without torch: each tensor's
    sizes (an integer, or a symbol with its range_constraints) and dtype. Empty where the JSON
    is not shaped as expected: then nothing can be checked before the runner loads it."""
    return _declared(program, "input_specs", "user_input")


def declared_outputs(program: object) -> tuple[ExpectedInput, ...]:
    """The user outputs an archive's model.json declares, read as `declared_inputs` reads
    its inputs: what a pipeline's next stage is handed."""
    return _declared(program, "output_specs", "user_output")


def _declared(program: object, specs: str, kind: str) -> tuple[ExpectedInput, ...]:
    try:
        module = json_object(json_object(program)["graph_module"])
        values = json_object(json_object(module["graph"])["tensor_values"])
        ranges = json_object(json_object(program).get("range_constraints") or {})
        expected = []
        for spec in json_list(json_object(module["signature"])[specs]):
            argument = json_object(json_object(spec).get(kind) or {}).get("arg")
            tensor = json_object(argument).get("as_tensor") if argument else None
            if tensor is None:
                continue  # a non-tensor input (an int, a flag): nothing to compare
            name = str(json_object(tensor)["name"])
            meta = json_object(values[name])
            sizes = json_list(meta["sizes"])
            dimensions = tuple(_declared_dimension(json_object(size), ranges) for size in sizes)
            code = meta["dtype"]
            dtype = _SERIALIZED_DTYPES.get(code, f"dtype {code}") if isinstance(code, int) else "?"
            expected.append(ExpectedInput(name, dimensions, dtype))
    except (KeyError, TypeError):
        return ()
    return tuple(expected)


def handover_misfit(
    given: Sequence[GivenInput], expected: Sequence[ExpectedInput], batch_size: int = 1
) -> str | None:
    """Why what a pipeline's stage hands on (`given`, per sample) does not fit what the next
    one takes, in words that fit after "cannot take: "; None where it fits. A batch
    misfit is none of the hand-over's: the chain's batch is the variant's."""
    if len(given) != len(expected):
        wanted = "; ".join(str(e) for e in expected)
        return f"it takes {len(expected)} input(s) ({wanted}) and is handed {len(given)}"
    misfit = inputs_misfit("", batch_size, given, expected)
    if misfit is None or misfit.is_batch:
        return None
    return misfit.message.removeprefix("model  ").replace("the spec gives", "it is handed")


def per_sample(declared: Sequence[ExpectedInput]) -> list[GivenInput] | None:
    """Declared tensors as what one sample holds (the batch dimension left out), where each
    has a batch and sizes that are fixed past it; else None."""
    found = []
    for tensor in declared:
        sizes = tensor.dimensions[1:]
        if not tensor.dimensions or any(size.low != size.high for size in sizes):
            return None
        found.append(GivenInput(tuple(size.low for size in sizes), tensor.dtype))
    return found


def json_object(value: object) -> dict[str, object]:
    """`value` as the JSON object model.json should have there; TypeError if it is not."""
    if not isinstance(value, dict):
        raise TypeError(f"expected an object, not {type(value).__name__}")
    return value


def json_list(value: object) -> list[object]:
    """`value` as the JSON array model.json should have there; TypeError if it is not."""
    if not isinstance(value, list):
        raise TypeError(f"expected a list, not {type(value).__name__}")
    return value


def _declared_dimension(size: dict[str, object], ranges: Mapping[str, object]) -> Dimension:
    value = size.get("as_int")
    if isinstance(value, int):
        return Dimension(value, value)
    symbol = _symbol(str(json_object(size["as_expr"])["expr_str"]))
    bounds = ranges.get(symbol) if symbol else None
    if not isinstance(bounds, dict):
        return Dimension(0, None)  # an expression of symbols: its range is not declared
    low, high = bounds.get("min_val"), bounds.get("max_val")
    return Dimension(
        low if isinstance(low, int) and 0 <= low < _UNBOUNDED else 0,
        high if isinstance(high, int) and high < _UNBOUNDED else None,
    )


def _symbol(expression: str) -> str | None:
    """The name of a lone symbol: `s52`, or `Symbol('s52', positive=True, integer=True)`."""
    try:
        node = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Name):
        return node.id
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Symbol"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return node.args[0].value
    return None
