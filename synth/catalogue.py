"""What the spec language knows about hardware: device types, numeric formats, resource presets.

This is data, kept in one place so that validation, the JSON Schema, the reference page and
synth all read the same facts. A cluster may override how a device type is selected (its node
labels) in `specs/clusters.yaml`; what a device can compute is a property of the silicon and
lives here.
"""

from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from contract.instructions import gpu_precisions
from contract.variant import QUANTIZERS, Precision, Quantization, Runtime

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

    @property
    def precisions(self) -> frozenset[Precision]:
        """What it computes: a GPU what its tensor cores do (contract/instructions.py), a
        CPU all but tf32 (a GPU's format), slowly where it lacks the instructions."""
        if self.compute_capability is None:
            return _CPU_PRECISIONS
        return gpu_precisions(self.compute_capability)

    @property
    def quantizations(self) -> frozenset[Quantization]:
        """The quantizations the runner runs, and has proven, on this device."""
        return frozenset(
            q for q in Quantization if unoffered_because(q, self.compute_capability) is None
        )

    @property
    def runtimes(self) -> frozenset[Runtime]:
        """The runtimes the runner has proven here."""
        return frozenset(
            r for r in Runtime if runtime_unoffered_because(r, self.compute_capability) is None
        )


@dataclass(frozen=True)
class Kernel:
    """Where the runner runs a quantization (runner/quantize.py) or a compiler's code
    (runner/compiling.py), and what it needs."""

    cpu: bool
    gpu_capability: tuple[int, int] | None
    """The least compute capability its GPU kernel needs; None: it runs on no GPU."""
    gpu_proven: bool
    """Whether a run on a GPU has proven it (`pytest -m gpu`, bench/gpu_runner.py)."""
    needs: str = ""
    """What its kernel needs, for the message where a device lacks it."""
    cpu_vectorized: frozenset[Precision] = frozenset(Precision)
    """The precisions its CPU kernel has a vectorized path for; others run, slowly."""


# Only what the runner applies and proves in its result is offered. The GPU paths of int4 and
# fp8 are written and tested on CPUs as far as a CPU can, but wait for a device run.
QUANTIZATION_KERNELS: Final = MappingProxyType(
    {
        Quantization.NONE: Kernel(cpu=True, gpu_capability=(0, 0), gpu_proven=True),
        Quantization.INT8_WEIGHT_ONLY: Kernel(cpu=True, gpu_capability=(0, 0), gpu_proven=True),
        Quantization.INT8_DYNAMIC: Kernel(
            cpu=True,
            gpu_capability=None,
            gpu_proven=False,
            needs="its int8 matmul (torch._int_mm) has a CUDA kernel only for more than 16 "
            "rows, which batch-1 inference lacks, and torchao then falls back to a float matmul",
        ),
        Quantization.INT4_WEIGHT_ONLY: Kernel(
            cpu=True,
            gpu_capability=(8, 0),
            gpu_proven=False,
            needs="PyTorch's int4 GPU kernel (aten._weight_int4pack_mm) needs compute "
            "capability 8.0 (Ampere) or newer",
            # aten._weight_int4pack_mm_for_cpu's AVX2/AVX512 tinygemm takes bf16; fp32 and
            # fp16 go through its scalar loop (bench/quantization.py: 5-51x slower than the
            # unquantized program, against 0.5-0.9x at bf16).
            cpu_vectorized=frozenset({Precision.BF16}),
        ),
        Quantization.FP8_DYNAMIC: Kernel(
            cpu=False,
            gpu_capability=(8, 9),
            gpu_proven=False,
            needs="fp8 matmuls (aten._scaled_mm) need fp8 tensor cores: a GPU of compute "
            "capability 8.9 (Ada Lovelace, Hopper) or newer",
        ),
    }
)
_TRITON = "inductor's GPU kernels are Triton's, which needs compute capability 7.0 (Volta) or newer"
RUNTIMES: Final = MappingProxyType(
    {
        Runtime.EAGER: Kernel(cpu=True, gpu_capability=(0, 0), gpu_proven=True),
        # On a CPU inductor needs a C++ compiler in the image (runner/Dockerfile installs g++);
        # the runner says so where it finds none.
        Runtime.INDUCTOR: Kernel(cpu=True, gpu_capability=(7, 0), gpu_proven=False, needs=_TRITON),
        Runtime.AOTINDUCTOR: Kernel(
            cpu=True, gpu_capability=(7, 0), gpu_proven=False, needs=_TRITON
        ),
        # Its CUDA provider is written (runner/runtimes.py) but waits for a device.
        Runtime.ONNXRUNTIME: Kernel(cpu=True, gpu_capability=(0, 0), gpu_proven=False),
        Runtime.TENSORRT: Kernel(
            cpu=False,
            gpu_capability=(7, 5),
            gpu_proven=False,
            needs="TensorRT builds engines for NVIDIA GPUs only, of compute capability 7.5 "
            "(Turing) or newer",
        ),
    }
)
_TORCH_QUANTIZED: Final = frozenset({Runtime.EAGER, Runtime.INDUCTOR, Runtime.AOTINDUCTOR})
"""The runtimes that run torchao's quantized tensors: torch itself and inductor's code. ONNX
and TensorRT have no op for them: torch's ONNX exporter fails on int8-dynamic and lowers
int8 weight-only to a dequantize and a float matmul, not the quantization the variant names."""
_ONNXRUNTIME_CPU_PRECISIONS: Final = frozenset({Precision.FP32, Precision.FP16})
"""ONNX Runtime 1.32's CPU provider has no bf16 kernels for Gemm, Conv or Mul (its session
refuses the example models' bf16 graphs)."""


def variant_unrun_because(
    runtime: Runtime,
    precision: Precision,
    quantization: Quantization,
    capability: tuple[int, int] | None,
) -> str | None:
    """Why `runtime` cannot run a variant at `precision` and `quantization` on a device of
    compute `capability` (None: a CPU), or None where it can."""
    if quantization is not Quantization.NONE and runtime not in _TORCH_QUANTIZED:
        return (
            f"{runtime} runs the exported graph in its own kernels, which have no op for "
            f"torchao's quantized tensors ({QUANTIZERS[quantization]})"
        )
    if (
        runtime is Runtime.ONNXRUNTIME
        and capability is None
        and precision not in _ONNXRUNTIME_CPU_PRECISIONS
    ):
        return f"ONNX Runtime's CPU provider has no {precision} kernels for common ops"
    return None


_CPU_PRECISIONS: Final = frozenset({Precision.FP32, Precision.FP16, Precision.BF16})
_AWAITS_GPU = (
    "its GPU path awaits a run on a GPU (`pytest -m gpu` and bench/gpu_runner.py, docs/runner.md)"
)


def unoffered_because(quantization: Quantization, capability: tuple[int, int] | None) -> str | None:
    """Why a device of compute `capability` (None: a CPU) is not offered `quantization`, or
    None where it is."""
    return _unoffered(QUANTIZATION_KERNELS[quantization], capability)


def runtime_unoffered_because(runtime: Runtime, capability: tuple[int, int] | None) -> str | None:
    """Why a device of compute `capability` (None: a CPU) is not offered `runtime`, or None
    where it is."""
    return _unoffered(RUNTIMES[runtime], capability)


def _unoffered(kernel: Kernel, capability: tuple[int, int] | None) -> str | None:
    if capability is None:
        return None if kernel.cpu else kernel.needs
    if kernel.gpu_capability is None or capability < kernel.gpu_capability:
        return kernel.needs
    return None if kernel.gpu_proven else _AWAITS_GPU


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
            ),
            DeviceType(
                name="nvidia-t4",
                description="NVIDIA T4, 16 GB",
                architecture="Turing",
                is_gpu=True,
                compute_capability=(7, 5),
            ),
            DeviceType(
                name="nvidia-v100",
                description="NVIDIA V100, 16 or 32 GB",
                architecture="Volta",
                is_gpu=True,
                compute_capability=(7, 0),
            ),
            DeviceType(
                name="nvidia-a10g",
                description="NVIDIA A10G, 24 GB",
                architecture="Ampere",
                is_gpu=True,
                compute_capability=(8, 6),
            ),
            DeviceType(
                name="nvidia-a100",
                description="NVIDIA A100, 40 or 80 GB",
                architecture="Ampere",
                is_gpu=True,
                compute_capability=(8, 0),
            ),
            DeviceType(
                name="nvidia-l4",
                description="NVIDIA L4, 24 GB",
                architecture="Ada Lovelace",
                is_gpu=True,
                compute_capability=(8, 9),
            ),
            DeviceType(
                name="nvidia-h100",
                description="NVIDIA H100, 80 GB",
                architecture="Hopper",
                is_gpu=True,
                compute_capability=(9, 0),
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
