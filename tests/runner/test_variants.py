"""Every precision and quantization the spec language accepts takes effect, and the result
proves it; what cannot take effect is an error, never a silent fp32 run."""

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from contract.variant import Precision, Quantization
from runner import precision, quantize
from runner.errors import UnsupportedVariant
from runner.run import RunPaths, run_variant
from synth.catalogue import DEVICE_TYPES
from tests.runner.conftest import EXAMPLE_INPUTS, MakeConfig

CPU = DEVICE_TYPES["cpu"]
CPU_COMBINATIONS = sorted((p, q) for p in CPU.precisions for q in CPU.quantizations)


def test_the_runner_implements_every_option_the_catalogue_offers() -> None:
    offered_precisions = {p for d in DEVICE_TYPES.values() for p in d.precisions}
    offered_quantizations = {q for d in DEVICE_TYPES.values() for q in d.quantizations}
    assert offered_precisions <= set(precision.COMPUTE_DTYPES)
    assert offered_quantizations <= set(quantize.KERNELS) | {Quantization.NONE}


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
    if quantization == "none":
        assert applied.quantized_layers == 0
        assert set(applied.parameter_dtypes) == {dtype}
    else:
        assert applied.quantized_layers == 10
        assert applied.parameter_dtypes["int8"] == 10
        assert applied.kernel == quantize.KERNELS[quantization]


@pytest.mark.parametrize("scheme", sorted(quantize.KERNELS))
def test_quantized_outputs_stay_close_to_fp32(scheme: Quantization, models_dir: Path) -> None:
    path = models_dir / "tiny-transformer.pt2"
    inputs = torch.randn(
        4, *EXAMPLE_INPUTS["tiny-transformer"], generator=torch.Generator().manual_seed(1)
    )
    with torch.inference_mode():
        reference = torch.export.load(path).module()(inputs)
        module = torch.export.load(path).module()
        quantize.quantize(module, scheme)
        quantized = module(inputs)
    relative = float((quantized - reference).abs().max() / reference.abs().max())
    assert 0 < relative < 0.05


@pytest.mark.parametrize("scheme", sorted(quantize.KERNELS))
def test_quantization_replaces_float_weights_with_int8_and_frees_them(
    scheme: Quantization, models_dir: Path
) -> None:
    module = torch.export.load(models_dir / "tiny-mlp.pt2").module()
    before = precision.tensor_bytes(module)
    quantize.quantize(module, scheme)
    assert not [n for n in module.graph.nodes if n.target is torch.ops.aten.linear.default]
    assert precision.tensor_dtypes(module) == {"float32": 6, "int8": 3}
    assert precision.tensor_bytes(module) < before / 3


def test_convolutions_are_reported_as_left_unquantized(models_dir: Path) -> None:
    module = torch.export.load(models_dir / "tiny-cnn.pt2").module()
    report = quantize.quantize(module, Quantization.INT8_DYNAMIC)
    assert (report.quantized_layers, report.unquantized_weighted_layers) == (1, {"conv2d": 3})


def test_quantizing_a_model_without_linear_layers_is_an_error(conv_only_model: Path) -> None:
    module = torch.export.load(conv_only_model).module()
    with pytest.raises(UnsupportedVariant, match="found no linear layer"):
        quantize.quantize(module, Quantization.INT8_WEIGHT_ONLY)


def test_torchs_own_dynamic_quantization_misses_exported_programs(models_dir: Path) -> None:
    """Why runner/quantize.py rewrites the graph: quantize_dynamic finds no nn.Linear in a
    loaded program and returns it unchanged, without a warning about it."""
    module = torch.export.load(models_dir / "tiny-mlp.pt2").module()
    with pytest.warns(DeprecationWarning):
        quantized = torch.ao.quantization.quantize_dynamic(  # type: ignore[no-untyped-call]
            module, {torch.nn.Linear}, dtype=torch.qint8
        )
    assert precision.tensor_dtypes(quantized) == {"float32": 6}


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
