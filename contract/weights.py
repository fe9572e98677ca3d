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


@dataclass(frozen=True)
class LinearWeights:
    """What the quantizations can reach of a program: its Linear layers' weights."""

    elements: int
    """Elements of all its parameters."""
    shapes: tuple[tuple[int, int], ...]
    """(out-features, in-features) of each Linear weight that is a parameter."""

    @property
    def share(self) -> float:
        """The share of the parameters' elements that are Linear weights."""
        return sum(out * in_ for out, in_ in self.shapes) / self.elements


def linear_weights(program: object) -> LinearWeights | None:
    """The parameters' element counts and the Linear weights' shapes; None when model.json is
    not shaped as expected or declares no parameters."""
    try:
        module = json_object(json_object(program)["graph_module"])
        graph = json_object(module["graph"])
        values = json_object(graph["tensor_values"])
        parameters = [
            str(json_object(json_object(json_object(spec)["parameter"])["arg"])["name"])
            for spec in json_list(json_object(module["signature"])["input_specs"])
            if "parameter" in json_object(spec)
        ]
        linear = {
            str(json_object(json_object(argument["arg"])["as_tensor"])["name"])
            for node in json_list(graph["nodes"])
            if json_object(node).get("target") == _LINEAR
            for argument in map(json_object, json_list(json_object(node)["inputs"]))
            if argument.get("name") == "weight" and "as_tensor" in json_object(argument["arg"])
        }
        sizes = {name: _sizes(json_object(values[name])) for name in parameters}
    except (KeyError, TypeError, ValueError):
        return None
    elements = sum(prod(size) for size in sizes.values())
    if elements == 0:
        return None
    return LinearWeights(
        elements=elements,
        shapes=tuple(
            (size[0], size[1]) for name, size in sizes.items() if name in linear and len(size) == 2
        ),
    )


def _sizes(meta: dict[str, object]) -> list[int]:
    dimensions = []
    for size in json_list(meta["sizes"]):
        value = json_object(size).get("as_int")
        if not isinstance(value, int):
            raise ValueError("a parameter of symbolic size")
        dimensions.append(value)
    return dimensions
