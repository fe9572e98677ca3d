"""What each quantization runs on each kind of device: a torchao configuration per layer and
the kernel op a quantized layer must dispatch (`contract.variant.QUANTIZERS` says it in words).

Only runner/quantize.py imports this module, and only for a variant that quantizes: importing
torchao takes about 1.3 s, which a pod of unquantized variants should not pay.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import torch
from torchao.core.config import AOBaseConfig
from torchao.prototype.quantization.int4.inference_workflow import PrototypeInt4WeightOnlyConfig
from torchao.quantization import (
    Float8DynamicActivationFloat8WeightConfig,
    Int4WeightOnlyConfig,
    Int8DynamicActivationInt8WeightConfig,
    Int8WeightOnlyConfig,
    quantize_,
)
from torchao.utils import TorchAOBaseTensor

from contract.variant import Quantization, int4_group
from runner.errors import UnsupportedVariant


@dataclass(frozen=True)
class Method:
    """How one quantization runs on one kind of device."""

    configure: Callable[[torch.nn.Linear], AOBaseConfig]
    """The configuration for one layer of those `contract.variant.takes_layer` takes (torchao
    leaves others in float without a word, or fails on them)."""
    kernel: str
    """What a quantized layer runs, for the result."""
    kernel_op: str | None
    """The op every quantized layer must dispatch per call; None where the proof is the
    weights' storage alone (int8 weight-only converts them into an ordinary matmul)."""
    weight_dtype: torch.dtype | None = None
    """The dtype the kernel's packing needs the float weight in, where it needs one."""


# Every configuration is built with set_inductor_config=False: True changes torch._inductor's
# process-wide settings, which would leak into the next variant of a grouped pod; nothing
# here compiles.


def _int8_weight_only(_: torch.nn.Linear) -> AOBaseConfig:
    return Int8WeightOnlyConfig(set_inductor_config=False)


def _int8_dynamic(_: torch.nn.Linear) -> AOBaseConfig:
    return Int8DynamicActivationInt8WeightConfig(set_inductor_config=False)


def _int4_group(layer: torch.nn.Linear) -> int:
    group = int4_group(layer.in_features)
    assert group is not None, "quantize() offers only the layers takes_layer() takes"
    return group


def _int4_cpu(layer: torch.nn.Linear) -> AOBaseConfig:
    return PrototypeInt4WeightOnlyConfig(group_size=_int4_group(layer), set_inductor_config=False)


def _int4_cuda(layer: torch.nn.Linear) -> AOBaseConfig:
    return Int4WeightOnlyConfig(
        group_size=_int4_group(layer),
        int4_packing_format="tile_packed_to_4d",
        set_inductor_config=False,
    )


def _fp8_dynamic(_: torch.nn.Linear) -> AOBaseConfig:
    return Float8DynamicActivationFloat8WeightConfig(set_inductor_config=False)


_INT8_WEIGHT_ONLY = Method(
    _int8_weight_only, "int8 weights converted per call + aten.mm, rescaled per row", None
)
METHODS: Final = {
    (Quantization.INT8_WEIGHT_ONLY, "cpu"): _INT8_WEIGHT_ONLY,
    (Quantization.INT8_WEIGHT_ONLY, "cuda"): _INT8_WEIGHT_ONLY,
    (Quantization.INT8_DYNAMIC, "cpu"): Method(
        _int8_dynamic,
        "per-row int8 activations + aten._int_mm (int8 x int8 -> int32), rescaled",
        "aten._int_mm",
    ),
    (Quantization.INT4_WEIGHT_ONLY, "cpu"): Method(
        _int4_cpu,
        "Int4OpaqueTensor weights + aten._weight_int4pack_mm_for_cpu",
        "aten._weight_int4pack_mm_for_cpu",
    ),
    (Quantization.INT4_WEIGHT_ONLY, "cuda"): Method(
        _int4_cuda,
        "Int4TilePackedTo4dTensor weights + aten._weight_int4pack_mm (tinygemm; activations "
        "cast to bf16 for it)",
        "aten._weight_int4pack_mm",
        weight_dtype=torch.bfloat16,
    ),
    (Quantization.FP8_DYNAMIC, "cuda"): Method(
        _fp8_dynamic,
        "per-tensor e4m3 activations and weights + aten._scaled_mm",
        "aten._scaled_mm",
    ),
}
"""Every (quantization, device type) the runner can run; the catalogue offers those proven."""


def quantize_layer(layer: torch.nn.Linear, method: Method, scheme: Quantization) -> bool:
    """Quantize `layer` in place as `method` says; whether it now holds a quantized weight."""
    try:
        quantize_(layer, method.configure(layer))
    except (RuntimeError, AssertionError, ValueError, ImportError) as error:
        raise UnsupportedVariant(
            f"{scheme} cannot quantize a linear layer of {layer.out_features} x "
            f"{layer.in_features}: {error}"
        ) from error
    return isinstance(layer.weight, TorchAOBaseTensor)
