"""How much of a program's weights each quantization reaches, read from the archive's
model.json without torch.

The runner's int8 quantizations replace Linear layers only (docs/runner.md): on a model
whose weights are mostly convolutions they quantize a few percent of it, and the result,
labelled int8, mostly measures fp32. The share is the element count of the weights that
`aten.linear` calls take, over every parameter's. Their shapes say which layers a kernel can
take at all (`contract.variant.takes_layer`).
"""

from dataclasses import dataclass
from math import prod

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
