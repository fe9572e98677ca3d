"""Quantize the linear layers of an exported program by rewriting its graph.

`torch.ao.quantization.quantize_dynamic` looks for nn.Linear modules; a loaded .pt2 has none
(its layers are aten.linear calls on attributes), so it quantizes nothing without a word.
Here every aten.linear whose weight is a constant 2-D tensor is replaced by a call that
uses int8 weights, and the run reports how many layers that was, so an option that did not
take effect cannot go unnoticed.

- int8-weight-only: per-output-channel symmetric int8 weights, dequantized in the compute
  dtype at each call (weights take a quarter of fp32's memory; eager PyTorch has no fused
  kernel, so it is usually slower, and that is what gets measured).
- int8-dynamic: activations quantized per row at each call, int8 x int8 -> int32 matmul
  (`torch._int_mm`, real int8 kernels on CPU), rescaled in fp32 to avoid fp16 overflow.
"""

from dataclasses import dataclass, field
from typing import Final

import torch
from torch.fx import GraphModule, Node

from contract.variant import Quantization
from runner.errors import UnsupportedVariant

_LINEAR: Final = torch.ops.aten.linear.default
_WEIGHTED: Final = {
    torch.ops.aten.conv1d.default: "conv1d",
    torch.ops.aten.conv2d.default: "conv2d",
    torch.ops.aten.conv3d.default: "conv3d",
    torch.ops.aten.convolution.default: "convolution",
    torch.ops.aten.embedding.default: "embedding",
}
_INT8_MAX: Final = 127.0
KERNELS: Final = {
    Quantization.INT8_WEIGHT_ONLY: "int8 weights dequantized per call + aten.linear",
    Quantization.INT8_DYNAMIC: "per-row int8 activations + torch._int_mm (int8 x int8 -> int32)",
}


def int8_weight_only_linear(
    x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor | None
) -> torch.Tensor:
    """aten.linear with int8 weights and per-output-channel scales."""
    return torch.nn.functional.linear(x, weight.to(x.dtype) * scale.to(x.dtype), bias)


def int8_dynamic_linear(
    x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor | None
) -> torch.Tensor:
    """aten.linear as an int8 matmul; `weight` is the int8 weight transposed (in x out)."""
    rows = x.reshape(-1, x.shape[-1])
    row_scale = rows.abs().amax(dim=1, keepdim=True).float().clamp(min=1e-12) / _INT8_MAX
    quantized = torch.round(rows.float() / row_scale).clamp(-_INT8_MAX, _INT8_MAX).to(torch.int8)
    out = torch._int_mm(quantized, weight).float() * (row_scale * scale)
    out = out.to(x.dtype).reshape(*x.shape[:-1], weight.shape[1])
    return out if bias is None else out + bias


@dataclass
class QuantizationReport:
    """What the rewrite did."""

    linear_layers: int = 0
    quantized_layers: int = 0
    unquantized_weighted_layers: dict[str, int] = field(default_factory=dict)


def _constant_weight(module: GraphModule, node: object) -> torch.Tensor | None:
    """The tensor behind a get_attr node, if it is a 2-D floating weight."""
    if not isinstance(node, Node) or node.op != "get_attr":
        return None
    value: object = module
    for name in str(node.target).split("."):
        value = getattr(value, name, None)
    if isinstance(value, torch.Tensor) and value.dim() == 2 and value.is_floating_point():
        return value
    return None


def _per_channel_int8(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    scale = weight.detach().abs().amax(dim=1).float().clamp(min=1e-12) / _INT8_MAX
    quantized = torch.round(weight.detach().float() / scale[:, None]).clamp(-_INT8_MAX, _INT8_MAX)
    return quantized.to(torch.int8), scale


def _drop_attribute(module: GraphModule, target: str) -> None:
    owner_path, _, name = target.rpartition(".")
    delattr(module.get_submodule(owner_path), name)


def quantize(module: GraphModule, scheme: Quantization) -> QuantizationReport:
    """Rewrite `module` in place with the quantization `scheme`."""
    report = QuantizationReport()
    graph = module.graph
    for node in graph.nodes:
        if node.op == "call_function" and node.target in _WEIGHTED:
            kind = _WEIGHTED[node.target]
            report.unquantized_weighted_layers[kind] = (
                report.unquantized_weighted_layers.get(kind, 0) + 1
            )
    linears = [n for n in graph.nodes if n.op == "call_function" and n.target == _LINEAR]
    report.linear_layers = len(linears)
    if scheme == Quantization.NONE:
        return report
    replaced: set[str] = set()
    for index, node in enumerate(linears):
        x, weight_node, *rest = node.args
        weight = _constant_weight(module, weight_node)
        if weight is None:
            continue
        quantized, scale = _per_channel_int8(weight)
        if scheme == Quantization.INT8_DYNAMIC:
            call, stored, stored_scale = int8_dynamic_linear, quantized.t().contiguous(), scale
        else:
            call, stored, stored_scale = int8_weight_only_linear, quantized, scale[:, None]
        prefix = f"benchfleet_int8_{index}"
        module.register_buffer(f"{prefix}_weight", stored)
        module.register_buffer(f"{prefix}_scale", stored_scale)
        with graph.inserting_before(node):
            new_weight = graph.get_attr(f"{prefix}_weight")
            new_scale = graph.get_attr(f"{prefix}_scale")
            bias = rest[0] if rest else None
            replacement = graph.call_function(call, (x, new_weight, new_scale, bias))
        node.replace_all_uses_with(replacement)
        graph.erase_node(node)
        assert isinstance(weight_node, Node)
        replaced.add(str(weight_node.target))
        report.quantized_layers += 1
    for node in list(graph.nodes):
        if node.op == "get_attr" and str(node.target) in replaced and not node.users:
            graph.erase_node(node)
    still_used = {str(n.target) for n in graph.nodes if n.op == "get_attr"}
    for target in replaced - still_used:
        _drop_attribute(module, target)
    graph.lint()
    module.recompile()
    if report.quantized_layers == 0:
        raise UnsupportedVariant(
            f"{scheme} found no linear layer with constant weights to quantize "
            f"({report.linear_layers} aten.linear calls); measuring would report the "
            "unquantized model as quantized"
        )
    return report
