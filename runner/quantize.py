"""Quantize an exported program's linear layers with torchao, PyTorch's quantization library.

torchao's `quantize_` swaps the weight of each `nn.Linear` for a quantized tensor whose
`F.linear` runs a quantized kernel. A loaded .pt2 has no `nn.Linear` (its layers are
`aten.linear` calls on attributes), so `quantize_` on it changes nothing, without a word.
Here each `aten.linear` whose weight (and bias) are constants first becomes a call of an
`nn.Linear` holding those same tensors, which computes the same thing, and `quantize_` then
acts on it as on the eager model people deploy. Every such layer is offered, the projections
of `nn.MultiheadAttention` too (on the eager module `quantize_` skips them: the in-projection
is no `nn.Linear`, the out-projection a `NonDynamicallyQuantizableLinear`).

What each quantization runs (`contract.variant.QUANTIZERS` says it in words, and is part of
the variant id) is a torchao configuration per device, each with the kernel op a quantized
layer must dispatch: `runner/kernels.py` counts them in a real call, so a layer that falls
back to a float matmul cannot pass as quantized.
"""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import torch
from torch.fx import GraphModule, Node

from contract.variant import Quantization, layers_taken, takes_layer
from runner.errors import UnsupportedVariant

if TYPE_CHECKING:
    from runner.methods import Method

_LINEAR: Final = torch.ops.aten.linear.default
_WEIGHTED: Final = {
    torch.ops.aten.conv1d.default: "conv1d",
    torch.ops.aten.conv2d.default: "conv2d",
    torch.ops.aten.conv3d.default: "conv3d",
    torch.ops.aten.convolution.default: "convolution",
    torch.ops.aten.embedding.default: "embedding",
}


@dataclass
class QuantizationReport:
    """What quantization did."""

    linear_layers: int = 0
    quantized_layers: int = 0
    quantized_weight_share: float | None = None
    """The quantized weights' elements over all parameters' (None without quantization)."""
    unquantized_weighted_layers: dict[str, int] = field(default_factory=dict)
    method: "Method | None" = None
    """What ran, with the kernel op to check (None without quantization)."""


def _linears(graph: torch.fx.Graph) -> list[Node]:
    return [n for n in graph.nodes if n.op == "call_function" and n.target == _LINEAR]


def _constant(module: GraphModule, node: object, dimensions: int) -> torch.Tensor | None:
    """The tensor behind a get_attr node, if it is a floating tensor of `dimensions`."""
    if not isinstance(node, Node) or node.op != "get_attr":
        return None
    value: object = module
    for name in str(node.target).split("."):
        value = getattr(value, name, None)
    if isinstance(value, torch.Tensor) and value.dim() == dimensions and value.is_floating_point():
        return value
    return None


def _drop_attribute(module: GraphModule, target: str) -> None:
    owner_path, _, name = target.rpartition(".")
    delattr(module.get_submodule(owner_path), name)


def _frozen(tensor: torch.Tensor, dtype: torch.dtype | None) -> torch.nn.Parameter:
    return torch.nn.Parameter(tensor.detach().to(dtype or tensor.dtype), requires_grad=False)


def linear_modules(module: GraphModule, weight_dtype: torch.dtype | None) -> list[torch.nn.Linear]:
    """Replace each aten.linear on constant tensors by a call of an nn.Linear holding them;
    the float attributes nothing else uses are dropped, so no weight is held twice."""
    graph = module.graph
    lifted: list[torch.nn.Linear] = []
    replaced: set[str] = set()
    for node in _linears(graph):
        x, weight_node, *rest = node.args
        bias_node = rest[0] if rest else node.kwargs.get("bias")
        weight = _constant(module, weight_node, 2)
        bias = None if bias_node is None else _constant(module, bias_node, 1)
        if weight is None or (bias_node is not None and bias is None):
            continue
        out_features, in_features = weight.shape
        layer = torch.nn.Linear(in_features, out_features, bias=bias is not None, device="meta")
        layer.weight = _frozen(weight, weight_dtype)
        if bias is not None:
            layer.bias = _frozen(bias, None)
        name = f"benchfleet_linear_{len(lifted)}"
        module.add_submodule(name, layer)
        with graph.inserting_before(node):
            call = graph.call_module(name, (x,))
        node.replace_all_uses_with(call)
        graph.erase_node(node)
        replaced |= {str(n.target) for n in (weight_node, bias_node) if isinstance(n, Node)}
        lifted.append(layer)
    for node in list(graph.nodes):
        if node.op == "get_attr" and str(node.target) in replaced and not node.users:
            graph.erase_node(node)
    still_used = {str(n.target) for n in graph.nodes if n.op == "get_attr"}
    for target in replaced - still_used:
        _drop_attribute(module, target)
    graph.lint()
    module.recompile()
    return lifted


def quantize(module: GraphModule, scheme: Quantization, device: torch.device) -> QuantizationReport:
    """Quantize `module`'s linear layers in place with `scheme`, as it runs on `device`."""
    report = QuantizationReport()
    graph = module.graph
    for node in graph.nodes:
        if node.op == "call_function" and node.target in _WEIGHTED:
            kind = _WEIGHTED[node.target]
            report.unquantized_weighted_layers[kind] = (
                report.unquantized_weighted_layers.get(kind, 0) + 1
            )
    report.linear_layers = len(_linears(graph))
    if scheme == Quantization.NONE:
        return report
    # torchao's import (about 1.3 s) only where a variant quantizes.
    from runner.methods import METHODS, quantize_layer  # noqa: PLC0415

    method = METHODS.get((scheme, device.type))
    if method is None:
        raise UnsupportedVariant(f"{scheme} has no kernel the runner uses on {device.type}")
    report.method = method
    layers = linear_modules(module, method.weight_dtype)
    on_gpu = device.type == "cuda"
    quantized = [
        layer
        for layer in layers
        if takes_layer(scheme, on_gpu, layer.out_features, layer.in_features)
        and quantize_layer(layer, method, scheme)
    ]
    report.quantized_layers = len(quantized)
    # Counted after the swap, where every lifted weight is a parameter (a weight that was a
    # constant, or that another op still uses, too), so the share cannot pass 1.
    total = sum(p.numel() for p in module.parameters())
    if total:
        report.quantized_weight_share = sum(layer.weight.numel() for layer in quantized) / total
    if not quantized:
        raise UnsupportedVariant(
            f"{scheme} found no linear layer it can quantize on {device.type} "
            f"({report.linear_layers} aten.linear calls, {len(layers)} with constant weights; "
            f"its kernel takes {layers_taken(scheme, on_gpu)}); measuring would "
            "report the unquantized model as quantized"
        )
    return report
