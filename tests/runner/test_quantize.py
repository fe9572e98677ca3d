"""Quantization through torchao on exported programs: what it reaches, what it dispatches, and
the error it costs against fp32, on the CPU here and on a GPU where the `gpu` tests run."""

import tomllib
from pathlib import Path

import pytest
import torch
import torchao
from torchao.quantization import Int8WeightOnlyConfig, quantize_

from contract.archive import check_archive
from contract.variant import TORCHAO_VERSION, Quantization, takes_layer
from runner import kernels, precision, quantize
from runner.errors import UnsupportedVariant
from synth.catalogue import DEVICE_TYPES, QUANTIZATION_KERNELS
from tests.conftest import REPO_ROOT
from tests.runner.conftest import EXAMPLE_INPUTS

CPU = torch.device("cpu")

Gate = tuple[float, float]
"""The least cosine similarity and the largest max abs error (over the reference's largest
magnitude) against the fp32 program on the same inputs."""
# Measured on the example models: int8 0.99994-0.99999 and 0.4-1.5 %, int4 0.9957-0.9976 and
# 9-15 % (docs/decisions/runner.md).
GATES: list[tuple[Quantization, Gate]] = [
    (Quantization.INT8_WEIGHT_ONLY, (0.9999, 0.03)),
    (Quantization.INT8_DYNAMIC, (0.9995, 0.05)),
    (Quantization.INT4_WEIGHT_ONLY, (0.99, 0.25)),
]


def _load(path: Path, dtype: torch.dtype = torch.float32) -> torch.fx.GraphModule:
    module: torch.fx.GraphModule = torch.export.load(path).module().to(dtype=dtype)
    return module


def _inputs(model: str) -> torch.Tensor:
    generator = torch.Generator().manual_seed(1)
    return torch.randn(8, *EXAMPLE_INPUTS[model], generator=generator)


def _errors(output: torch.Tensor, reference: torch.Tensor) -> tuple[float, float]:
    """Cosine similarity and max abs error over the reference's largest magnitude."""
    out, ref = output.float().flatten(), reference.float().flatten()
    cosine = float(torch.nn.functional.cosine_similarity(out, ref, dim=0))
    return cosine, float((out - ref).abs().max() / ref.abs().max())


def _reference(path: Path, x: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        reference: torch.Tensor = _load(path)(x)
    return reference


def _proves(
    path: Path, scheme: Quantization, dtype: torch.dtype, device: torch.device, gate: Gate
) -> None:
    """`scheme` on the program at `path`, on `device`: each quantized layer dispatches its
    kernel, and the output stays within `gate` against the fp32 program on the CPU."""
    model = path.stem
    x = _inputs(model)
    module = _load(path, dtype).to(device)
    report = quantize.quantize(module, scheme, device)
    on_device = x.to(device, dtype)
    with torch.inference_mode():
        output = module(on_device)
        calls = kernels.kernel_calls(lambda: module(on_device))
    kernels.check_kernel(report, calls, f"{model} {dtype} {scheme}")
    cosine, error = _errors(output.cpu(), _reference(path, x))
    least_cosine, largest_error = gate
    assert cosine >= least_cosine
    assert 0 < error <= largest_error


def test_torchaos_quantize_misses_a_loaded_program(models_dir: Path) -> None:
    """Why runner/quantize.py gives the layers back their nn.Linear: quantize_ finds none in a
    loaded program and leaves it as it was, without a warning."""
    module = _load(models_dir / "tiny-mlp.pt2")
    before = precision.tensor_dtypes(module)
    quantize_(module, Int8WeightOnlyConfig())
    assert precision.tensor_dtypes(module) == before == {"float32": 6}


@pytest.mark.slow
@pytest.mark.parametrize("model", ["tiny-mlp", "tiny-transformer", "tiny-cnn"])
def test_linear_modules_compute_exactly_what_the_graph_did(model: str, models_dir: Path) -> None:
    path, x = models_dir / f"{model}.pt2", _inputs(model)
    module = _load(path)
    layers = quantize.linear_modules(module, None)
    assert layers
    assert not [n for n in module.graph.nodes if n.target is torch.ops.aten.linear.default]
    assert precision.tensor_bytes(module) == precision.tensor_bytes(_load(path))
    with torch.inference_mode():
        assert torch.equal(module(x), _reference(path, x))


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("model", ["tiny-mlp", "tiny-transformer"])
@pytest.mark.parametrize(("scheme", "gate"), GATES)
def test_quantized_outputs_stay_within_their_gate_on_cpu(
    scheme: Quantization, gate: Gate, model: str, dtype: torch.dtype, models_dir: Path
) -> None:
    _proves(models_dir / f"{model}.pt2", scheme, dtype, CPU, gate)


class _SharedAndBufferWeights(torch.nn.Module):
    """One weight used by two layers, and a third layer's weight held as a buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.first = torch.nn.Linear(64, 64)
        self.last: torch.Tensor
        self.register_buffer("last", torch.randn(32, 64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tied = torch.nn.functional.linear(self.first(x), self.first.weight)
        return torch.nn.functional.linear(tied, self.last)


def test_shared_and_buffer_weights_are_quantized_within_a_whole_share(tmp_path: Path) -> None:
    path = tmp_path / "shared.pt2"
    x = torch.randn(4, 64)
    torch.export.save(torch.export.export(_SharedAndBufferWeights().eval(), (x,)), path)
    module = _load(path)
    report = quantize.quantize(module, Quantization.INT8_DYNAMIC, CPU)
    assert report.quantized_layers == report.linear_layers == 3
    assert report.quantized_weight_share is not None
    assert 0.9 < report.quantized_weight_share <= 1
    with torch.inference_mode():
        cosine, _ = _errors(module(x), _reference(path, x))
    assert cosine > 0.999


def test_quantized_weights_take_less_memory_the_fewer_their_bits(models_dir: Path) -> None:
    path = models_dir / "tiny-mlp.pt2"
    stored = {}
    for scheme in (Quantization.NONE, Quantization.INT8_WEIGHT_ONLY, Quantization.INT4_WEIGHT_ONLY):
        module = _load(path)
        quantize.quantize(module, scheme, CPU)
        stored[scheme] = precision.tensor_bytes(module)
    none, int8, int4 = stored.values()
    # int8 keeps a float32 scale per row; int4 reaches 2 of the 3 layers (the head's 10
    # out-features do not pack) and keeps a scale and zero point per group of 64 or 128.
    assert none > 3 * int8 > 3 * int4


def test_float_weights_are_dropped_once_quantized(models_dir: Path) -> None:
    module = _load(models_dir / "tiny-mlp.pt2")
    quantize.quantize(module, Quantization.INT8_DYNAMIC, CPU)
    attributes = [n for n in module.graph.nodes if n.op == "get_attr"]
    assert attributes == []
    assert precision.tensor_dtypes(module) == {"float32": 6, "int8": 6}


def test_convolutions_are_reported_as_left_unquantized(models_dir: Path) -> None:
    module = _load(models_dir / "tiny-cnn.pt2")
    report = quantize.quantize(module, Quantization.INT8_DYNAMIC, CPU)
    assert (report.quantized_layers, report.unquantized_weighted_layers) == (1, {"conv2d": 3})
    assert report.quantized_weight_share is not None
    assert report.quantized_weight_share < 0.05


def test_quantizing_a_model_without_linear_layers_is_an_error(conv_only_model: Path) -> None:
    module = _load(conv_only_model)
    with pytest.raises(UnsupportedVariant, match="found no linear layer"):
        quantize.quantize(module, Quantization.INT8_WEIGHT_ONLY, CPU)


def test_int4_says_which_layers_its_cpu_kernel_takes_when_it_takes_none(models_dir: Path) -> None:
    """tiny-cnn's one linear layer has 10 out-features, which the int4 CPU packing refuses."""
    module = _load(models_dir / "tiny-cnn.pt2")
    with pytest.raises(UnsupportedVariant, match="out-features a multiple of 16"):
        quantize.quantize(module, Quantization.INT4_WEIGHT_ONLY, CPU)


@pytest.mark.parametrize("scheme", sorted(DEVICE_TYPES["cpu"].quantizations - {Quantization.NONE}))
@pytest.mark.parametrize("model", ["tiny-mlp", "tiny-cnn", "tiny-transformer"])
def test_synth_foresees_how_many_layers_the_runner_quantizes(
    model: str, scheme: Quantization, models_dir: Path
) -> None:
    """Synth refuses a quantized variant that would reach no layer from the archive alone
    (contract.weights, contract.variant.takes_layer): the runner must agree layer for layer."""
    path = models_dir / f"{model}.pt2"
    linear = check_archive(path).linear
    assert linear is not None
    foreseen = sum(takes_layer(scheme, False, out, in_) for out, in_ in linear.shapes)
    try:
        quantized = quantize.quantize(_load(path), scheme, CPU).quantized_layers
    except UnsupportedVariant:
        quantized = 0
    assert quantized == foreseen


def test_a_quantization_without_a_kernel_on_the_device_is_an_error(models_dir: Path) -> None:
    module = _load(models_dir / "tiny-mlp.pt2")
    with pytest.raises(UnsupportedVariant, match="fp8-dynamic has no kernel the runner uses"):
        quantize.quantize(module, Quantization.FP8_DYNAMIC, CPU)


@pytest.mark.parametrize(
    ("scheme", "kernel_op"),
    [
        (Quantization.INT8_DYNAMIC, "aten._int_mm"),
        (Quantization.INT4_WEIGHT_ONLY, "aten._weight_int4pack_mm_for_cpu"),
    ],
)
def test_each_quantized_layer_dispatches_its_kernel_once_per_call(
    scheme: Quantization, kernel_op: str, models_dir: Path
) -> None:
    module = _load(models_dir / "tiny-transformer.pt2")
    report = quantize.quantize(module, scheme, CPU)
    x = _inputs("tiny-transformer")
    with torch.inference_mode():
        calls = kernels.kernel_calls(lambda: module(x))
    assert calls[kernel_op] == report.quantized_layers
    kernels.check_kernel(report, calls, "tiny-transformer")


def test_a_layer_that_runs_a_float_matmul_fails_the_kernel_check(models_dir: Path) -> None:
    """What a silent fallback looks like to the check: the report of an int8-dynamic
    quantization beside the calls of the float program."""
    path, x = models_dir / "tiny-mlp.pt2", _inputs("tiny-mlp")
    report = quantize.quantize(_load(path), Quantization.INT8_DYNAMIC, CPU)
    module = _load(path)
    with torch.inference_mode():
        calls = kernels.kernel_calls(lambda: module(x))
    assert calls == {"aten.linear": 3}
    with pytest.raises(UnsupportedVariant, match=r"dispatched aten._int_mm 0 times"):
        kernels.check_kernel(report, calls, "tiny-mlp fp32 int8-dynamic batch 8")


def test_torchao_is_the_release_the_contract_and_pyproject_name() -> None:
    """Quantized variant ids hash TORCHAO_VERSION: a different torchao installed, or pinned,
    would measure something the id does not say."""
    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert f"torchao=={TORCHAO_VERSION}" in pyproject["project"]["optional-dependencies"]["runner"]
    assert torchao.__version__ == TORCHAO_VERSION


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize(("scheme", "gate"), [*GATES, (Quantization.FP8_DYNAMIC, (0.99, 0.25))])
def test_quantized_outputs_stay_within_their_gate_on_cuda(
    scheme: Quantization, gate: Gate, dtype: torch.dtype, models_dir: Path
) -> None:
    """The design note's int4 at fp16 among them (its kernel computes in bf16)."""
    kernel = QUANTIZATION_KERNELS[scheme]
    if kernel.gpu_capability is None:
        pytest.skip(f"{scheme} runs on no GPU")
    if torch.cuda.get_device_capability() < kernel.gpu_capability:
        pytest.skip(f"{scheme} needs compute capability {kernel.gpu_capability}")
    _proves(models_dir / "tiny-transformer.pt2", scheme, dtype, torch.device("cuda", 0), gate)


def test_synth_reads_a_linear_weight_held_as_a_buffer(tmp_path: Path) -> None:
    """The runner quantizes a layer whose weight is a buffer; synth, reading the archive, must
    count it, or it would refuse a variant the runner can run."""
    path = tmp_path / "shared.pt2"
    x = torch.randn(4, 64)
    torch.export.save(torch.export.export(_SharedAndBufferWeights().eval(), (x,)), path)
    linear = check_archive(path).linear
    assert linear is not None
    assert sorted(linear.shapes) == [(32, 64), (64, 64)]
    assert linear.share == (64 * 64 + 32 * 64) / (64 * 64 + 64 + 32 * 64)
