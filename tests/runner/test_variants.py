"""Every precision and quantization the spec language accepts takes effect, and the result
proves it; what cannot take effect is an error, never a silent fp32 run."""

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from contract.config import PhaseConfig
from contract.variant import QUANTIZERS, Precision, Quantization
from runner import precision
from runner.errors import UnsupportedVariant
from runner.methods import METHODS
from runner.rounds import ROUNDS, run_rounds
from runner.run import RunPaths, run_variant
from synth.catalogue import DEVICE_TYPES, QUANTIZATION_KERNELS
from tests.runner.conftest import MakeConfig

CPU = DEVICE_TYPES["cpu"]
CPU_DEVICE = torch.device("cpu")
CPU_COMBINATIONS = sorted((p, q) for p in CPU.precisions for q in CPU.quantizations)


def test_the_runner_implements_every_option_the_catalogue_offers() -> None:
    offered_precisions = {p for d in DEVICE_TYPES.values() for p in d.precisions}
    offered_quantizations = {
        (q, "cuda" if d.is_gpu else "cpu")
        for d in DEVICE_TYPES.values()
        for q in d.quantizations
        if q is not Quantization.NONE
    }
    assert offered_precisions <= set(precision.COMPUTE_DTYPES)
    assert offered_quantizations <= set(METHODS)


def test_the_runner_has_every_path_the_catalogue_expects_a_device_run_to_prove() -> None:
    """The GPU paths not offered yet are written: a device run only has to prove them."""
    paths = {
        (quantization, kind)
        for quantization, kernel in QUANTIZATION_KERNELS.items()
        if quantization is not Quantization.NONE
        for kind, has in (("cpu", kernel.cpu), ("cuda", kernel.gpu_capability is not None))
        if has
    }
    assert paths == set(METHODS)


@pytest.mark.slow
@pytest.mark.parametrize(("precision_name", "quantization"), CPU_COMBINATIONS)
def test_each_cpu_combination_shows_its_effect_in_the_result(
    make_config: MakeConfig,
    models_dir: Path,
    tmp_path: Path,
    precision_name: Precision,
    quantization: Quantization,
) -> None:
    config = make_config("tiny-transformer", precision=precision_name, quantization=quantization)
    applied = run_variant(config, config.variants[0], RunPaths(models_dir, tmp_path)).applied
    assert applied is not None
    dtype = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}[precision_name]
    assert (applied.compute_dtype, applied.input_dtypes, applied.output_dtype) == (
        dtype,
        [dtype],
        dtype,
    )
    assert applied.linear_layers == 10
    calls = applied.kernel_calls or {}
    if quantization == "none":
        assert applied.quantized_layers == 0
        assert set(applied.parameter_dtypes) == {dtype}
        assert calls["aten.linear"] == 10
        assert (applied.quantizer, applied.quantized_weight_share) == (None, None)
        return
    method = METHODS[quantization, "cpu"]
    # int4's CPU packing takes no layer with 10 out-features (the head) or 16 in-features
    # (the input projection): the other 8 of 10, 95 % of the weights.
    reached = 8 if quantization is Quantization.INT4_WEIGHT_ONLY else 10
    assert applied.quantized_layers == reached
    assert calls.get("aten.linear", 0) == 10 - reached
    if method.kernel_op is not None:
        assert calls[method.kernel_op] == reached
    assert applied.quantized_weight_share is not None
    assert 0.9 < applied.quantized_weight_share < 1
    assert (applied.kernel, applied.quantizer) == (method.kernel, QUANTIZERS[quantization])
    stored = {"int8-weight-only": "int8", "int8-dynamic": "int8", "int4-weight-only": "uint8"}
    assert applied.parameter_dtypes[stored[quantization]] >= reached


def test_tf32_on_a_cpu_is_an_error() -> None:
    with pytest.raises(UnsupportedVariant, match="tf32 is a CUDA math mode"):
        precision.set_fp32_math(Precision.TF32, torch.device("cpu"))


@pytest.fixture
def restore_fp32_math() -> Iterator[None]:
    """Put torch's process-wide fp32 math flags back, so no other test sees them changed."""
    backends = torch.backends
    flags = (backends.cuda.matmul, backends.cudnn.conv, backends.cudnn.rnn)  # type: ignore[attr-defined]
    saved = [flag.fp32_precision for flag in flags]
    yield
    for flag, value in zip(flags, saved, strict=True):
        flag.fp32_precision = value


@pytest.mark.usefixtures("restore_fp32_math")
@pytest.mark.parametrize(
    ("precision_name", "mode"),
    [(Precision.FP32, "ieee"), (Precision.TF32, "tf32"), (Precision.BF16, "ieee")],
)
def test_cuda_fp32_math_mode_follows_the_precision(precision_name: Precision, mode: str) -> None:
    assert precision.set_fp32_math(precision_name, torch.device("cuda", 0)) == mode
    assert torch.backends.cuda.matmul.fp32_precision == mode
    assert torch.backends.cudnn.conv.fp32_precision == mode  # type: ignore[attr-defined]
    assert torch.backends.cudnn.rnn.fp32_precision == mode  # type: ignore[attr-defined]


def _fp32_math() -> tuple[str, str, str]:
    backends = torch.backends
    return (
        backends.cuda.matmul.fp32_precision,
        backends.cudnn.conv.fp32_precision,  # type: ignore[attr-defined]
        backends.cudnn.rnn.fp32_precision,  # type: ignore[attr-defined]
    )


@pytest.mark.usefixtures("restore_fp32_math")
def test_interleaved_tf32_and_fp32_variants_each_run_every_round_in_their_own_mode() -> None:
    """The mode is process-global and was set once, as each variant was prepared: every
    round of an interleaved tf32 and fp32 pair ran in the mode of the one prepared last.
    The flags are torch's, set and read without a GPU."""
    cuda = torch.device("cuda", 0)
    seen: dict[Precision, set[tuple[str, str, str]]] = {}
    steps = []
    for name in (Precision.TF32, Precision.FP32):  # prepared in turn, as run_interleaved's are
        mode = precision.set_fp32_math(name, cuda)

        def step(name: Precision = name) -> int:
            seen.setdefault(name, set()).add(_fp32_math())
            return 1

        steps.append(precision.in_own_fp32_math(step, mode))
    rule = PhaseConfig(min_iterations=ROUNDS, min_time_s=0, max_iterations=ROUNDS, max_time_s=5)
    run_rounds(steps, rule)
    assert seen == {Precision.TF32: {("tf32",) * 3}, Precision.FP32: {("ieee",) * 3}}


def test_a_cpu_step_sets_no_cuda_mode() -> None:
    def step() -> int:
        return 1

    assert (
        precision.in_own_fp32_math(step, precision.set_fp32_math(Precision.FP32, CPU_DEVICE))
        is step
    )


@pytest.mark.gpu
@pytest.mark.usefixtures("restore_fp32_math")
def test_tf32_changes_cuda_matmul_results() -> None:
    """On the GPU itself: a matmul in TF32 (10-bit mantissa) differs from the IEEE fp32 one."""
    generator = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(1024, 1024, device="cuda", generator=generator)
    b = torch.randn(1024, 1024, device="cuda", generator=generator)
    precision.set_fp32_math(Precision.FP32, a.device)
    ieee = a @ b
    precision.set_fp32_math(Precision.TF32, a.device)
    tf32 = a @ b
    assert not torch.equal(ieee, tf32)
    assert torch.allclose(ieee, tf32, rtol=1e-2, atol=1e-1)
