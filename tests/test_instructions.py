"""contract/instructions.py: what a precision or quantization needs of a CPU's flags or a GPU's
compute capability, held to this machine's /proc/cpuinfo and to the flag sets of CPUs that
have and lack them (as their /proc/cpuinfo lists them)."""

from pathlib import Path

import pytest

from contract.instructions import (
    Machine,
    architecture,
    gpu_precisions,
    isa_flags,
    lacks,
    tensor_cores,
)
from contract.result import Environment
from contract.variant import Precision, Quantization, Runtime, VariantSettings
from runner.environment import cpu_flags

# The flags of real CPUs, the ISA extensions of their /proc/cpuinfo lines (with a few of the
# others, which isa_flags leaves out).
HASWELL = "fpu vme sse sse2 ssse3 fma cx16 sse4_1 sse4_2 avx f16c avx2 smep bmi2 erms"
"""AVX2 only: no AVX-512, VNNI or bf16, as issue 32's CPU."""
ALDER_LAKE = HASWELL + " avx_vnni"
"""AVX2 with AVX-VNNI: int8 dot products, still no bf16 or AVX-512."""
CASCADE_LAKE = HASWELL + " avx512f avx512dq avx512cd avx512bw avx512vl avx512_vnni"
SAPPHIRE_RAPIDS = CASCADE_LAKE + " avx512_bf16 avx512_fp16 amx_bf16 amx_tile amx_int8"
NEOVERSE_N1 = "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimddp"
"""Graviton2: NEON's dot product, no bf16."""
NEOVERSE_V1 = NEOVERSE_N1 + " sve i8mm bf16 svebf16"
"""Graviton3."""


def variant(
    precision: Precision = Precision.FP32,
    quantization: Quantization = Quantization.NONE,
    runtime: Runtime = Runtime.EAGER,
) -> VariantSettings:
    return VariantSettings(
        model="resnet50",
        precision=precision,
        quantization=quantization,
        batch_size=1,
        runtime=runtime,
    )


SWEEP = (
    variant(),
    variant(Precision.BF16),
    variant(quantization=Quantization.INT8_DYNAMIC),
    variant(Precision.BF16, Quantization.INT8_DYNAMIC, Runtime.INDUCTOR),
)
"""Issue 32's sweep: fp32 and bf16, none and int8-dynamic."""


def lacking(flags: str, variants: tuple[VariantSettings, ...] = SWEEP) -> dict[str, str]:
    """Each rule the CPU of `flags` misses for `variants`: its name -> what is missing."""
    return {
        lack.need.name: lack.missing for lack in lacks(variants, isa_flags(flags.split()), None)
    }


def test_issue_32s_cpu_lacks_what_bf16_and_int8_dynamic_need_and_avx_512() -> None:
    assert lacking(HASWELL) == {
        "bf16": "amx_bf16 or avx512_bf16",
        "int8-dynamic": "amx_int8 or avx512_vnni or avx_vnni",
        "AVX-512": "avx512f",
    }


def test_each_cpu_lacks_only_what_its_flags_do_not_have() -> None:
    assert lacking(ALDER_LAKE).keys() == {"bf16", "AVX-512"}
    assert lacking(CASCADE_LAKE).keys() == {"bf16"}
    assert lacking(SAPPHIRE_RAPIDS) == {}
    assert lacking(NEOVERSE_N1) == {"bf16": "bf16"}
    assert lacking(NEOVERSE_V1) == {}


def test_a_rule_applies_to_the_variants_that_use_it_counted() -> None:
    found = {lack.need.name: lack.variants for lack in lacks(SWEEP, HASWELL.split(), None)}
    assert found == {"bf16": 2, "int8-dynamic": 2, "AVX-512": 4}
    fp32 = lacks([variant()], HASWELL.split(), None)
    assert [lack.need.name for lack in fp32] == ["AVX-512"]


def test_int4_on_a_cpu_needs_avx2_for_its_vectorized_kernel() -> None:
    int4 = (variant(Precision.BF16, Quantization.INT4_WEIGHT_ONLY),)
    assert "int4-weight-only" not in lacking(HASWELL, int4)
    assert lacking("fpu sse sse2 ssse3 sse4_1 sse4_2 avx", int4)["int4-weight-only"] == "avx2"


def test_flags_that_name_no_architecture_or_none_at_all_say_nothing() -> None:
    assert lacks(SWEEP, ["fpu", "vme"], None) == ()
    assert lacks(SWEEP, None, None) == ()


def test_a_gpu_is_held_to_its_tensor_cores_not_to_the_hosts_flags() -> None:
    t4 = {lack.need.name: lack.missing for lack in lacks(SWEEP, HASWELL.split(), (7, 5))}
    assert t4 == {
        "bf16": "compute capability 8.0 or newer; has 2nd-generation tensor cores (Turing): "
        "fp16, int8, int4"
    }
    fp8 = (variant(Precision.BF16, Quantization.FP8_DYNAMIC),)
    assert [lack.need.name for lack in lacks(fp8, None, (8, 0))] == ["fp8-dynamic"]
    assert lacks(fp8, None, (9, 0)) == ()


def test_tensor_core_generations_by_compute_capability() -> None:
    assert tensor_cores((6, 1)) == "no tensor cores (before Volta)"
    assert tensor_cores((8, 6)).startswith("3rd-generation tensor cores (Ampere)")
    assert tensor_cores((9, 0)).startswith("4th-generation tensor cores (Hopper)")
    assert tensor_cores((12, 0)).startswith("5th-generation tensor cores (Blackwell)")
    assert gpu_precisions((7, 5)) == {Precision.FP32, Precision.FP16}
    assert gpu_precisions((8, 0)) == frozenset(Precision)


def test_isa_flags_keeps_the_instruction_set_extensions_only() -> None:
    assert isa_flags(HASWELL.split()) == (
        "avx",
        "avx2",
        "f16c",
        "fma",
        "sse",
        "sse2",
        "sse4_1",
        "sse4_2",
        "ssse3",
    )
    assert "smep" not in isa_flags(["smep", "sme", "sme2"])
    assert architecture(isa_flags(NEOVERSE_V1.split())) == "arm"


def test_this_machines_flags_as_the_runner_records_them(tmp_path: Path) -> None:
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.is_file():
        pytest.skip("no /proc/cpuinfo")
    lines = cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines()
    listed = next(
        (
            set(value.split())
            for key, _, value in (line.partition(":") for line in lines)
            if key.strip() in {"flags", "Features"}
        ),
        None,
    )
    if listed is None:
        pytest.skip("/proc/cpuinfo lists no flags here")
    recorded = cpu_flags()
    assert recorded is not None and set(recorded) <= listed
    assert architecture(recorded) in ("x86", "arm")
    # Each rule judges this CPU by what it lists: a flag any rule names is recorded.
    for lack in lacks(SWEEP, recorded, None):
        assert not set(lack.missing.split(" or ")) & listed, lack
    for flag in listed - set(recorded):
        assert lacks(SWEEP, [*recorded, flag], None) == lacks(SWEEP, recorded, None), flag


def test_the_runner_reads_x86_flags_and_arm_features_and_nothing_else(tmp_path: Path) -> None:
    x86 = tmp_path / "x86"
    x86.write_text(f"processor\t: 0\nmodel name\t: Xeon\nflags\t\t: {HASWELL}\n\nprocessor\t: 1\n")
    arm = tmp_path / "arm"
    arm.write_text(f"processor\t: 0\nFeatures\t: {NEOVERSE_N1}\nCPU part\t: 0xd0c\n")
    none = tmp_path / "none"
    none.write_text("processor\t: 0\n")
    assert cpu_flags(x86) == isa_flags(HASWELL.split())
    assert cpu_flags(arm) == isa_flags(NEOVERSE_N1.split())
    assert cpu_flags(none) is None
    assert cpu_flags(tmp_path / "missing") is None


def test_a_result_before_schema_8_names_no_machine() -> None:
    older = Environment(
        python="3.13", torch="2.13", device="cpu", device_name="Xeon", cpu_model="Xeon", threads=2,
        hostname="pod",
    )  # fmt: skip
    assert Machine.of(older) is None
    newer = older.model_copy(update={"cpu_flags": isa_flags(HASWELL.split())})
    machine = Machine.of(newer)
    assert machine is not None and machine.name == "Xeon"
    assert [lack.need.name for lack in machine.lacks([variant(Precision.BF16)])] == [
        "bf16",
        "AVX-512",
    ]
