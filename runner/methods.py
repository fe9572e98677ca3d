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

from contract.variant import Quantization
from runner.errors import UnsupportedVariant

INT4_GROUP_SIZES: Final = (128, 64, 32)
"""torchao's default group of 128 in-features per scale, else the largest the in-features
divide into; 32 is the smallest PyTorch's int4 CPU kernel takes."""
_INT4_CPU_OUT_MULTIPLE: Final = 16
"""The int4 CPU packing (`aten._convert_weight_to_int4pack_for_cpu`) needs out-features in
multiples of 16 (the CUDA packing pads them)."""
_FP8_MULTIPLE: Final = 16
"""`aten._scaled_mm` needs in- and out-features in multiples of 16."""


@dataclass(frozen=True)
class Method:
    """How one quantization runs on one kind of device."""

    configure: Callable[[torch.nn.Linear], AOBaseConfig | None]
    """The configuration for one layer, or None where the kernel cannot take it."""
    kernel: str
    """What a quantized layer runs, for the result."""
    kernel_op: str | None
    """The op every quantized layer must dispatch per call; None where the proof is the
    weights' storage alone (int8 weight-only converts them into an ordinary matmul)."""
    takes: str = "every linear layer with constant weights"
    """Which layers the kernel can take, for the error when it takes none."""
    weight_dtype: torch.dtype | None = None
    """The dtype the kernel's packing needs the float weight in, where it needs one."""


# Every configuration is built with set_inductor_config=False: True changes torch._inductor's
# process-wide settings, which would leak into the next variant of a grouped pod; nothing
# here compiles.


def _int8_weight_only(_: torch.nn.Linear) -> AOBaseConfig:
    return Int8WeightOnlyConfig(set_inductor_config=False)


def _int8_dynamic(_: torch.nn.Linear) -> AOBaseConfig:
    return Int8DynamicActivationInt8WeightConfig(set_inductor_config=False)


def _int4_group(layer: torch.nn.Linear) -> int | None:
    return next((g for g in INT4_GROUP_SIZES if layer.in_features % g == 0), None)


def _int4_cpu(layer: torch.nn.Linear) -> AOBaseConfig | None:
    group = _int4_group(layer)
    if group is None or layer.out_features % _INT4_CPU_OUT_MULTIPLE:
        return None
    return PrototypeInt4WeightOnlyConfig(group_size=group, set_inductor_config=False)


def _int4_cuda(layer: torch.nn.Linear) -> AOBaseConfig | None:
    group = _int4_group(layer)
    if group is None:
        return None
    return Int4WeightOnlyConfig(
        group_size=group, int4_packing_format="tile_packed_to_4d", set_inductor_config=False
    )


def _fp8_dynamic(layer: torch.nn.Linear) -> AOBaseConfig | None:
    # torchao leaves a layer of other sizes in float without a word; asking only for the
    # ones it takes keeps the report's count the configuration's own.
    if layer.in_features % _FP8_MULTIPLE or layer.out_features % _FP8_MULTIPLE:
        return None
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
        takes=f"in-features a multiple of {INT4_GROUP_SIZES[-1]} and out-features a multiple "
        f"of {_INT4_CPU_OUT_MULTIPLE}",
    ),
    (Quantization.INT4_WEIGHT_ONLY, "cuda"): Method(
        _int4_cuda,
        "Int4TilePackedTo4dTensor weights + aten._weight_int4pack_mm (tinygemm; activations "
        "cast to bf16 for it)",
        "aten._weight_int4pack_mm",
        takes=f"in-features a multiple of {INT4_GROUP_SIZES[-1]}",
        weight_dtype=torch.bfloat16,
    ),
    (Quantization.FP8_DYNAMIC, "cuda"): Method(
        _fp8_dynamic,
        "per-tensor e4m3 activations and weights + aten._scaled_mm",
        "aten._scaled_mm",
        takes=f"in- and out-features multiples of {_FP8_MULTIPLE}",
    ),
}
"""Every (quantization, device type) the runner can run; the catalogue offers those proven."""


def quantize_layer(layer: torch.nn.Linear, method: Method, scheme: Quantization) -> bool:
    """Quantize `layer` in place as `method` says; whether it now holds a quantized weight."""
    config = method.configure(layer)
    if config is None:
        return False
    try:
        quantize_(layer, config)
    except (RuntimeError, AssertionError, ValueError, ImportError) as error:
        raise UnsupportedVariant(
            f"{scheme} cannot quantize a linear layer of {layer.out_features} x "
            f"{layer.in_features}: {error}"
        ) from error
    return isinstance(layer.weight, TorchAOBaseTensor)
