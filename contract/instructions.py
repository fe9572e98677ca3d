"""What a precision or quantization needs of the silicon to run natively, and what a machine
lacks of it: the one table (`NEEDS`), which the runner's recorded CPU flags and GPU compute
capability (contract/result.py `Environment`) are held to by the report and `make plan`, and
from which synth's catalogue takes the precisions each GPU offers.

A variant on a machine without what it needs still runs, correctly and slowly: torch
converts or emulates. Nothing is refused for it; the note says why such numbers are slow.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from contract.result import Environment
from contract.variant import Precision, Quantization, VariantSettings

Architecture = Literal["x86", "arm"]

_ISA_FLAG: Final = re.compile(
    r"(avx\w*|amx\w*|sse\w*|ssse3|fma\w*|f16c|asimd\w*|sve\w*|sme(?!p)\w*|bf16|i8mm|fphp)"
)
"""The instruction-set families of /proc/cpuinfo's flags the runner records: x86's vector
and matrix extensions (SSE, AVX, AVX-512, AMX, FMA, F16C) and arm's (NEON's `asimd*`,
`fphp`, SVE, SME, `bf16`, `i8mm`); `smep`, a protection feature, is not one."""


def isa_flags(flags: Iterable[str]) -> tuple[str, ...]:
    """The instruction-set extensions among a CPU's flags, sorted: what the runner records
    (the rest, protection and virtualisation features, say nothing of speed)."""
    return tuple(sorted({flag for flag in flags if _ISA_FLAG.fullmatch(flag)}))


def architecture(flags: Iterable[str]) -> Architecture | None:
    """x86 (every x86-64 CPU has SSE2) or arm (every arm64 CPU has NEON, `asimd`); None
    where the flags say neither."""
    found = set(flags)
    if "sse2" in found:
        return "x86"
    if "asimd" in found:
        return "arm"
    return None


@dataclass(frozen=True)
class Need:
    """What variants of one precision or quantization (every variant, where both are None)
    need to run natively, and what they do without it."""

    name: str
    precision: Precision | None
    quantization: Quantization | None
    x86: tuple[str, ...]
    """Any one of these flags will do, sorted; empty: nothing to check on x86."""
    arm: tuple[str, ...]
    gpu: tuple[int, int] | None
    """The least compute capability whose tensor cores compute it; None: no GPU rule."""
    without: str
    """What such a variant does on a machine without it."""

    def applies(self, variant: VariantSettings) -> bool:
        return (self.precision is None or variant.precision == self.precision) and (
            self.quantization is None or variant.quantization == self.quantization
        )

    def cpu_lacks(self, flags: Iterable[str]) -> tuple[str, ...] | None:
        """The flags this CPU lacks (any one would do), or None where it has one of them or
        nothing is known to check."""
        found = set(flags)
        arch = architecture(found)
        wanted = self.x86 if arch == "x86" else self.arm if arch == "arm" else ()
        return wanted if wanted and found.isdisjoint(wanted) else None

    def gpu_lacks(self, capability: tuple[int, int]) -> bool:
        return self.gpu is not None and tuple(capability) < self.gpu


NEEDS: Final = (
    Need(
        name="bf16",
        precision=Precision.BF16,
        quantization=None,
        x86=("amx_bf16", "avx512_bf16"),
        arm=("bf16",),
        gpu=(8, 0),
        without="no bf16 dot-product instructions: torch converts to fp32 and back around "
        "each matmul and convolution, so bf16 runs slower than fp32 (1.8-2.5x on the CPU "
        "of issue 32)",
    ),
    Need(
        name="fp16",
        precision=Precision.FP16,
        quantization=None,
        x86=("amx_fp16", "avx512_fp16"),
        arm=("asimdhp",),
        gpu=(7, 0),
        without="no fp16 arithmetic instructions: torch converts to fp32 and back, so fp16 "
        "runs slower than fp32",
    ),
    Need(
        name="tf32",
        precision=Precision.TF32,
        quantization=None,
        x86=(),
        arm=(),
        gpu=(8, 0),
        without="no tf32 tensor cores (Ampere's): the matmuls run in fp32",
    ),
    Need(
        name="int8-dynamic",
        precision=None,
        quantization=Quantization.INT8_DYNAMIC,
        x86=("amx_int8", "avx512_vnni", "avx_vnni"),
        arm=("asimddp", "i8mm"),
        gpu=None,
        without="no int8 dot-product instructions (VNNI): its int8 matmuls are emulated with "
        "wider ones, on top of quantizing the activations each call (5-11x slower than fp32 "
        "on the CPU of issue 32, compiled too)",
    ),
    Need(
        name="int4-weight-only",
        precision=None,
        quantization=Quantization.INT4_WEIGHT_ONLY,
        x86=("avx2",),
        arm=(),
        gpu=(8, 0),
        without="torch's int4 CPU kernel has AVX2 and AVX-512 paths only: its scalar loop runs",
    ),
    Need(
        name="fp8-dynamic",
        precision=None,
        quantization=Quantization.FP8_DYNAMIC,
        x86=(),
        arm=(),
        gpu=(8, 9),
        without="no fp8 tensor cores (Ada Lovelace's, Hopper's): no fp8 matmul to run",
    ),
    Need(
        name="AVX-512",
        precision=None,
        quantization=None,
        x86=("avx512f",),
        arm=(),
        gpu=None,
        without="no AVX-512: torch's vectorized CPU kernels run at AVX2's width, half of "
        "AVX-512's; compare its numbers with CPUs of the same extensions only",
    ),
)
"""Every rule, in the order notes list them."""

TENSOR_CORES: Final = (
    ((7, 0), "1st-generation tensor cores (Volta): fp16"),
    ((7, 5), "2nd-generation tensor cores (Turing): fp16, int8, int4"),
    ((8, 0), "3rd-generation tensor cores (Ampere): fp16, bf16, tf32, int8"),
    ((8, 9), "4th-generation tensor cores (Ada Lovelace): fp16, bf16, tf32, int8, fp8"),
    ((9, 0), "4th-generation tensor cores (Hopper): fp16, bf16, tf32, int8, fp8"),
    ((10, 0), "5th-generation tensor cores (Blackwell): fp16, bf16, tf32, int8, fp8, fp4"),
)
"""The least compute capability of each tensor-core generation, and what it computes."""


def tensor_cores(capability: tuple[int, int]) -> str:
    """A GPU's tensor cores by its compute capability, in words."""
    found = [words for least, words in TENSOR_CORES if tuple(capability) >= least]
    return found[-1] if found else "no tensor cores (before Volta)"


def gpu_precisions(capability: tuple[int, int]) -> frozenset[Precision]:
    """The precisions a GPU of `capability` computes on its tensor cores (fp32 always)."""
    return frozenset(
        precision
        for precision in Precision
        if not any(
            need.precision == precision and need.quantization is None and need.gpu_lacks(capability)
            for need in NEEDS
        )
    )


@dataclass(frozen=True)
class Lack:
    """One rule a machine misses, for some of the variants it ran or will run."""

    need: Need
    missing: str
    """What it lacks, in words: the flags (any one would do), or the compute capability and
    the tensor cores it has instead."""
    variants: int


def lacks(
    variants: Iterable[VariantSettings],
    cpu_flags: Iterable[str] | None,
    gpu_capability: tuple[int, int] | None,
) -> tuple[Lack, ...]:
    """The rules of NEEDS that `variants` meet and the machine misses: on a GPU by its
    compute capability, on a CPU by its flags; nothing where neither is known."""
    found = []
    listed = tuple(variants)
    for need in NEEDS:
        count = sum(need.applies(variant) for variant in listed)
        if not count:
            continue
        if gpu_capability is not None:
            if need.gpu_lacks(gpu_capability):
                assert need.gpu is not None  # gpu_lacks says so
                least = ".".join(map(str, need.gpu))
                has = tensor_cores(gpu_capability)
                found.append(Lack(need, f"compute capability {least} or newer; has {has}", count))
        elif cpu_flags is not None and (missing := need.cpu_lacks(cpu_flags)) is not None:
            found.append(Lack(need, " or ".join(missing), count))
    return tuple(found)


@dataclass(frozen=True)
class Machine:
    """Where a result was measured, as far as NEEDS asks: the device's name and what it has."""

    name: str
    """The GPU's, or the CPU's model name."""
    cpu_flags: tuple[str, ...] | None
    gpu_capability: tuple[int, int] | None

    @classmethod
    def of(cls, environment: Environment) -> "Machine | None":
        """The machine of a result's environment; None where it says nothing NEEDS reads
        (results before schema 6)."""
        if environment.cpu_flags is None and environment.gpu_capability is None:
            return None
        return cls(environment.device_name, environment.cpu_flags, environment.gpu_capability)

    def lacks(self, variants: Iterable[VariantSettings]) -> tuple[Lack, ...]:
        return lacks(variants, self.cpu_flags, self.gpu_capability)
