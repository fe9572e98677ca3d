"""How much of a program's weights each quantization reaches, read from the archive's
model.json without torch.

The runner's int8 quantizations replace Linear layers only (docs/runner.md): on a model
whose weights are mostly convolutions they quantize a few percent of it, and the result,
labelled int8, mostly measures fp32. The share is the element count of the weights that
`aten.linear` calls take, over every parameter's. Their shapes say which layers a kernel can
take at all (`contract.variant.takes_layer`).

What synth cannot read (a model from a url, an OCI artifact or the image) it judges from a
`LayerRecord`: the same facts, written by `benchfleet export` and `make push-model` into the
model's spec entry (`layers:`), carried in config.json and held to the program by the runner.
"""

import re
from collections import Counter
from dataclasses import dataclass
from math import prod
from typing import Annotated, Final, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    WithJsonSchema,
    model_validator,
)

from contract.inputs import json_list, json_object

_LINEAR: str = "torch.ops.aten.linear.default"
_STATE: tuple[str, ...] = ("parameter", "buffer", "tensor_constant")
"""The inputs a program holds itself; a Linear weight among them is one the runner quantizes."""


@dataclass(frozen=True)
class LinearWeights:
    """What the quantizations can reach of a program: its Linear layers' weights."""

    elements: int
    """Elements of all its parameters, and of Linear weights it holds as buffers or constants."""
    shapes: tuple[tuple[int, int], ...]
    """(out-features, in-features) of each Linear weight the program holds (a parameter, a
    buffer or a constant; not one it computes)."""

    @property
    def share(self) -> float:
        """The share of those elements that are Linear weights."""
        return sum(out * in_ for out, in_ in self.shapes) / self.elements

    def agrees_with(self, other: "LinearWeights") -> bool:
        """Whether both say the same of a program: its elements and its Linear weights'
        shapes, in whatever order."""
        return self.elements == other.elements and Counter(self.shapes) == Counter(other.shapes)


def linear_weights(program: object) -> LinearWeights | None:
    """The elements of the weights and the Linear weights' shapes; None when model.json is not
    shaped as expected or declares no weights."""
    try:
        module = json_object(json_object(program)["graph_module"])
        graph = json_object(module["graph"])
        values = json_object(graph["tensor_values"])
        specs = [
            json_object(spec) for spec in json_list(json_object(module["signature"])["input_specs"])
        ]
        state = {
            str(json_object(json_object(spec[kind])["arg"])["name"]): kind
            for spec in specs
            for kind in _STATE
            if kind in spec
        }
        linear = {
            str(json_object(json_object(argument["arg"])["as_tensor"])["name"])
            for node in json_list(graph["nodes"])
            if json_object(node).get("target") == _LINEAR
            for argument in map(json_object, json_list(json_object(node)["inputs"]))
            if argument.get("name") == "weight" and "as_tensor" in json_object(argument["arg"])
        }
        # The parameters, and a Linear weight held otherwise, which the runner quantizes too.
        counted = [n for n, kind in state.items() if kind == "parameter" or n in linear]
        elements = sum(prod(_sizes(json_object(values[name]))) for name in counted)
        weights = [_sizes(json_object(values[name])) for name in counted if name in linear]
    except (KeyError, TypeError, ValueError):
        return None
    if elements == 0:
        return None
    return LinearWeights(
        elements=elements, shapes=tuple((size[0], size[1]) for size in weights if len(size) == 2)
    )


def _sizes(meta: dict[str, object]) -> list[int]:
    dimensions = []
    for size in json_list(meta["sizes"]):
        value = json_object(size).get("as_int")
        if not isinstance(value, int):
            raise ValueError("a parameter of symbolic size")
        dimensions.append(value)
    return dimensions


MAX_RECORDED_SHAPES: Final = 4096
"""Distinct Linear shapes a record may list (a 48-layer transformer has four or five)."""
MAX_RECORDED_LAYERS: Final = 100_000
"""Linear layers a record may count in all (a 48-layer transformer has some 200): each is
one shape for a check to hold against a kernel's rules, so the count bounds the check's time."""
MAX_RECORDED_ELEMENTS: Final = 1 << 40
"""Parameters a record may count: more than a 256 GiB model holds at a byte each."""
_SHAPE: Final = r"^[1-9][0-9]{0,8}x[1-9][0-9]{0,8}$"


def _shape(text: str) -> str:
    if not re.fullmatch(_SHAPE, text):
        raise ValueError(
            f"{text!r} is not a Linear weight's shape: OUTxIN, its out- and in-features, "
            "e.g. 1000x2048"
        )
    return text


LinearShape = Annotated[
    str, AfterValidator(_shape), WithJsonSchema({"type": "string", "pattern": _SHAPE})
]
"""A Linear weight's shape as a record writes it: `OUTxIN`, e.g. `1000x2048`."""


class LayerRecord(BaseModel):
    """What a program's weights offer the quantizations, recorded where the program was
    exported (`benchfleet export` prints it; `make push-model` too), so that a model that
    is not read before its pod is judged all the same."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    linear: dict[LinearShape, Annotated[StrictInt, Field(ge=1, le=MAX_RECORDED_LAYERS)]] = Field(
        default_factory=dict, max_length=MAX_RECORDED_SHAPES
    )
    """How many Linear layers the program holds of each weight shape, `OUTxIN` (out- by
    in-features): the layers a quantization may reach. Left out where it holds none."""
    parameters: StrictInt = Field(ge=1, le=MAX_RECORDED_ELEMENTS)
    """The elements of its parameters (and of Linear weights it holds as buffers or
    constants): what the share of the model a quantization reaches is a share of."""

    @model_validator(mode="after")
    def _linear_weights_are_parameters(self) -> Self:
        layers = sum(self.linear.values())
        if layers > MAX_RECORDED_LAYERS:
            raise ValueError(
                f"it counts {layers:,} Linear layers, more than the {MAX_RECORDED_LAYERS:,} a "
                "record may hold"
            )
        linear = sum(prod(_features(shape)) * count for shape, count in self.linear.items())
        if linear > self.parameters:
            raise ValueError(
                f"its Linear weights hold {linear:,} elements, more than the {self.parameters:,} "
                "parameters it records: this is no record of one program"
            )
        return self

    @property
    def weights(self) -> LinearWeights:
        """The record as the archive's reading says the same."""
        shapes = [(_features(key), count) for key, count in self.linear.items()]
        return LinearWeights(
            elements=self.parameters,
            shapes=tuple(shape for shape, count in sorted(shapes) for _ in range(count)),
        )

    @classmethod
    def of(cls, weights: LinearWeights) -> Self:
        """The record of what an archive's reading found."""
        counted = Counter(weights.shapes)
        return cls(
            linear={f"{out}x{in_}": counted[out, in_] for out, in_ in sorted(counted)},
            parameters=weights.elements,
        )

    def flow(self) -> str:
        """The record as one line of YAML, for a spec's `layers:`."""
        linear = ", ".join(f"{shape}: {count}" for shape, count in self.linear.items())
        listed = f"linear: {{{linear}}}, " if linear else ""
        return f"{{{listed}parameters: {self.parameters}}}"


def _features(shape: str) -> tuple[int, int]:
    out, _, in_ = shape.partition("x")
    return int(out), int(in_)
