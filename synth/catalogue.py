"""What the spec language knows about hardware: device types, numeric formats, resource presets.

This is data, kept in one place so that validation, the JSON Schema, the reference page and
synth all read the same facts. A cluster may override how a device type is selected (its node
labels) in `specs/clusters.yaml`; what a device can compute is a property of the silicon and
lives here.
"""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from contract.variant import Precision, Quantization

GPU_RESOURCE: Final = "nvidia.com/gpu"
"""The extended resource the NVIDIA device plugin advertises."""

DEFAULT_NODE_LABEL: Final = "gpu-type"
"""The node label the design note selects GPU nodes by; clusters may use others."""


@dataclass(frozen=True)
class DeviceType:
    """One entry of the device catalogue."""

    name: str
    description: str
    architecture: str
    is_gpu: bool
    compute_capability: tuple[int, int] | None
    precisions: frozenset[Precision]
    quantizations: frozenset[Quantization]


# Only what the runner applies and proves in its result (runner/quantize.py) is offered.
# int8-dynamic needs torch._int_mm, whose CUDA kernel takes only > 16 rows, and int4/fp8 need
# torchao kernels: none of them is proven on a GPU yet, so a spec cannot ask for them.
_GPU_QUANTIZATION = frozenset({Quantization.NONE, Quantization.INT8_WEIGHT_ONLY})
# Volta and Turing have fp16 tensor cores but neither bf16 nor tf32.
_PRE_AMPERE_PRECISION = frozenset({Precision.FP32, Precision.FP16})
_AMPERE_PRECISION = frozenset(Precision)

DEVICE_TYPES: Final = MappingProxyType(
    {
        device.name: device
        for device in (
            DeviceType(
                name="cpu",
                description="CPU only; no GPU is requested",
                architecture="x86-64 or arm64",
                is_gpu=False,
                compute_capability=None,
                precisions=frozenset({Precision.FP32, Precision.FP16, Precision.BF16}),
                quantizations=frozenset(
                    {Quantization.NONE, Quantization.INT8_DYNAMIC, Quantization.INT8_WEIGHT_ONLY}
                ),
            ),
            DeviceType(
                name="nvidia-t4",
                description="NVIDIA T4, 16 GB",
                architecture="Turing",
                is_gpu=True,
                compute_capability=(7, 5),
                precisions=_PRE_AMPERE_PRECISION,
                quantizations=_GPU_QUANTIZATION,
            ),
            DeviceType(
                name="nvidia-v100",
                description="NVIDIA V100, 16 or 32 GB",
                architecture="Volta",
                is_gpu=True,
                compute_capability=(7, 0),
                precisions=_PRE_AMPERE_PRECISION,
                quantizations=_GPU_QUANTIZATION,
            ),
            DeviceType(
                name="nvidia-a10g",
                description="NVIDIA A10G, 24 GB",
                architecture="Ampere",
                is_gpu=True,
                compute_capability=(8, 6),
                precisions=_AMPERE_PRECISION,
                quantizations=_GPU_QUANTIZATION,
            ),
            DeviceType(
                name="nvidia-a100",
                description="NVIDIA A100, 40 or 80 GB",
                architecture="Ampere",
                is_gpu=True,
                compute_capability=(8, 0),
                precisions=_AMPERE_PRECISION,
                quantizations=_GPU_QUANTIZATION,
            ),
            DeviceType(
                name="nvidia-l4",
                description="NVIDIA L4, 24 GB",
                architecture="Ada Lovelace",
                is_gpu=True,
                compute_capability=(8, 9),
                precisions=_AMPERE_PRECISION,
                quantizations=_GPU_QUANTIZATION,
            ),
            DeviceType(
                name="nvidia-h100",
                description="NVIDIA H100, 80 GB",
                architecture="Hopper",
                is_gpu=True,
                compute_capability=(9, 0),
                precisions=_AMPERE_PRECISION,
                quantizations=_GPU_QUANTIZATION,
            ),
        )
    }
)


@dataclass(frozen=True)
class ResourcePreset:
    """CPU and memory requests and limits under a short name (the design note's presets)."""

    name: str
    description: str
    requests: MappingProxyType[str, str]
    limits: MappingProxyType[str, str]


RESOURCE_PRESETS: Final = MappingProxyType(
    {
        preset.name: preset
        for preset in (
            ResourcePreset(
                name="small",
                description="conservative, cost-effective",
                requests=MappingProxyType({"cpu": "1", "memory": "2Gi"}),
                limits=MappingProxyType({"cpu": "2", "memory": "4Gi"}),
            ),
            ResourcePreset(
                name="large",
                description="aggressive, for performance",
                requests=MappingProxyType({"cpu": "8", "memory": "16Gi"}),
                limits=MappingProxyType({"cpu": "16", "memory": "32Gi"}),
            ),
            ResourcePreset(
                name="guaranteed",
                description=(
                    "requests equal to limits in whole CPUs: Guaranteed QoS, so a static CPU "
                    "manager pins cores and neighbours cannot steal cycles mid-measurement"
                ),
                requests=MappingProxyType({"cpu": "4", "memory": "8Gi"}),
                limits=MappingProxyType({"cpu": "4", "memory": "8Gi"}),
            ),
        )
    }
)
