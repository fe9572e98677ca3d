"""The calls of the model before a variant's first measurement: every one of them is start-up a
pod pays, seconds each for a model of real size on a CPU. The runner makes the cold first
iteration and the warm-up's, and a cast or quantized variant the reference's, and no call of
its own besides: the kernel count rides on the warm-up's first call, and an fp32 variant's
first call is its reference."""

from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch.export import ExportedProgram
from torch.fx import GraphModule

from contract.config import PhaseConfig
from contract.variant import Quantization
from runner import accuracy, kernels, programs, quantize, run
from runner.errors import UnsupportedVariant
from runner.loading import load_program
from runner.run import RunPaths, run_variant
from tests.runner.conftest import MakeConfig, sha256_of

NO_WARMUP = PhaseConfig(min_iterations=0, min_time_s=0.0, max_iterations=10, max_time_s=5.0)
"""A warm-up whose rule asks for no iteration."""


@pytest.fixture
def forward_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the model was called, on every module the runner made of a program (the
    variant's and the reference's)."""
    calls = [0]

    def counting(made: Callable[..., GraphModule]) -> Callable[..., GraphModule]:
        def module_for(program: ExportedProgram, *args: object, **kwargs: object) -> GraphModule:
            module = made(program, *args, **kwargs)

            def called(*_: object) -> None:
                calls[0] += 1

            module.register_forward_pre_hook(called)
            return module

        return module_for

    monkeypatch.setattr(run, "module_for", counting(programs.module_for))
    monkeypatch.setattr(accuracy, "module_for", counting(programs.module_for))
    return calls


@pytest.mark.parametrize(
    ("precision", "quantization", "reference_calls"),
    [
        # Its first call is the reference: the program's own module, fp32, the same inputs.
        ("fp32", "none", 0),
        # A cast or quantized module must not give the reference: a call of the untouched one.
        ("bf16", "none", 1),
        ("fp32", "int8-weight-only", 1),
    ],
)
def test_the_model_is_called_for_the_first_iteration_warmup_timed_loop_and_no_more(
    make_config: MakeConfig,
    models_dir: Path,
    tmp_path: Path,
    forward_calls: list[int],
    precision: str,
    quantization: str,
    reference_calls: int,
) -> None:
    config = make_config("tiny-mlp", precision=precision, quantization=quantization)
    result = run_variant(config, config.variants[0], RunPaths(models_dir, tmp_path))
    assert result.timings is not None and result.applied is not None
    first_iteration = 1
    made = first_iteration + result.timings.warmup.iterations + result.latency.count
    assert forward_calls[0] == made + reference_calls
    assert result.applied.kernel_calls, "counted all the same, on the warm-up's first call"


def test_a_warmup_that_asks_for_none_runs_once_to_count_the_kernels(
    make_config: MakeConfig, models_dir: Path, tmp_path: Path, forward_calls: list[int]
) -> None:
    config = make_config("tiny-mlp", quantization="int8-dynamic")
    config = config.model_copy(update={"warmup": NO_WARMUP})
    result = run_variant(config, config.variants[0], RunPaths(models_dir, tmp_path))
    assert result.timings is not None and result.applied is not None
    assert result.timings.warmup.iterations == 1
    assert result.applied.kernel_calls == {"aten._int_mm": 3}
    reference_call = 1
    assert forward_calls[0] == reference_call + 1 + 1 + result.latency.count


def _tiny_mlp(models_dir: Path) -> tuple[GraphModule, torch.Tensor]:
    path = models_dir / "tiny-mlp.pt2"
    return load_program(path, sha256_of(path)).module(), torch.randn(2, 64)


def test_only_the_first_call_counts_the_kernels(models_dir: Path) -> None:
    module, x = _tiny_mlp(models_dir)
    calls = [0]

    def step() -> int:
        calls[0] += 1
        module(x)
        return 7

    counted = kernels.CountedFirst(step, quantize.QuantizationReport(), "tiny-mlp")
    with torch.inference_mode():
        assert [counted() for _ in range(3)] == [7, 7, 7], "the step's own durations"
    assert calls[0] == 3
    assert counted.calls == {"aten.linear": 3}, "one call's, not three calls'"


def test_a_kernel_that_did_not_run_fails_the_call_that_counts(
    models_dir: Path,
) -> None:
    """A silent fallback to a float matmul: the report of an int8-dynamic quantization beside
    the float program's calls fails the variant on the call that counts, before the rest of
    its warm-up."""
    path = models_dir / "tiny-mlp.pt2"
    report = quantize.quantize(
        load_program(path, sha256_of(path)).module(), Quantization.INT8_DYNAMIC, torch.device("cpu")
    )
    module, x = _tiny_mlp(models_dir)
    counted = kernels.CountedFirst(lambda: len([module(x)]), report, "tiny-mlp int8-dynamic")
    with torch.inference_mode(), pytest.raises(UnsupportedVariant, match=r"aten\._int_mm 0 times"):
        counted()
    assert counted.calls == {"aten.linear": 3}
