"""Compiled variants (config.json `compile`): the module the runner made from the verified
graph is compiled in the pod, its compile timed apart, and the compiled code is what warm-up,
the timed loop and the accuracy pass run; a pod that cannot compile says why."""

import os
from pathlib import Path

import pytest
import torch
from torch._dynamo.utils import counters

from contract.accuracy import default_gate, judge
from contract.config import PhaseConfig, RunConfig
from contract.errors import ExitCode
from contract.result import ErrorResult, OkResult, parse_result_line
from contract.variant import Precision, Quantization, Runtime
from runner.__main__ import main
from runner.compiling import CACHE_ENV, keep_caches_in
from runner.run import RunPaths, run_variant
from tests.runner.conftest import EXAMPLES, MakeConfig, group_config, group_variant, python_m_runner


def compiled(config: RunConfig, how: Runtime = Runtime.INDUCTOR) -> RunConfig:
    """`config` with its variants compiled as `how` says."""
    variants = tuple(v.model_copy(update={"runtime": how}) for v in config.variants)
    return config.model_copy(update={"variants": variants})


def _graphs() -> int:
    return counters["stats"]["unique_graphs"]


@pytest.mark.slow
def test_a_compiled_variant_runs_its_compiled_module_and_times_the_compile_apart(
    make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    config = compiled(make_config("tiny-mlp"))
    before = _graphs()
    result = run_variant(config, config.variants[0], RunPaths(models_dir, tmp_path))
    # One graph, compiled once: warm-up and the timed loop ran it without recompiling.
    assert _graphs() == before + 1
    assert result.variant is not None and result.variant.runtime is Runtime.INDUCTOR
    assert result.timings is not None and result.applied is not None
    assert result.timings.compile_s is not None and result.timings.compile_s > 0
    assert result.timings.warmup.iterations >= 3 and result.latency.count >= 3
    applied = result.applied.compiled
    assert applied is not None
    assert (applied.backend, applied.mode, applied.graphs) == ("inductor", "default", 1)
    assert "g++" in applied.toolchain or "clang" in applied.toolchain
    # The quantization's proof is counted on the module before it is compiled.
    assert result.applied.kernel_calls == {"aten.linear": 3}
    assert result.accuracy is not None
    assert judge(result.accuracy, default_gate(Precision.FP32, Quantization.NONE)).failures == ()


def test_an_eager_variant_compiles_nothing_and_says_nothing_of_compiling(
    make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    config = make_config("tiny-mlp")
    before = _graphs()
    result = run_variant(config, config.variants[0], RunPaths(models_dir, tmp_path))
    assert _graphs() == before
    assert result.timings is not None and result.timings.compile_s is None
    assert result.applied is not None and result.applied.compiled is None
    assert '"compile"' not in result.model_dump_json(exclude_none=True)


@pytest.mark.slow
def test_a_compiled_int8_dynamic_variant_proves_its_kernel_and_stays_within_its_gate(
    make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    """torchao's int8-dynamic is built for torch.compile, which fuses its per-call
    quantization: compiled, it must still run its int8 kernel on every layer."""
    config = compiled(make_config("tiny-transformer", quantization="int8-dynamic"))
    result = run_variant(config, config.variants[0], RunPaths(models_dir, tmp_path))
    assert result.applied is not None and result.applied.compiled is not None
    assert result.applied.quantized_layers == 10
    assert (result.applied.kernel_calls or {})["aten._int_mm"] == 10
    assert result.accuracy is not None
    gate = default_gate(Precision.FP32, Quantization.INT8_DYNAMIC)
    assert judge(result.accuracy, gate).failures == ()


@pytest.mark.slow
def test_an_interleaved_pod_pairs_a_compiled_variant_with_its_eager_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    eager = group_variant(0, "tiny-mlp")
    inductor = group_variant(1, "tiny-mlp").model_copy(update={"runtime": Runtime.INDUCTOR})
    measure = PhaseConfig(min_iterations=32, min_time_s=0.0, max_iterations=64, max_time_s=5.0)
    config = group_config((eager, inductor), ((0, 1),), measure=measure, interleave=True)
    config_path = tmp_path / "config.json"
    config_path.write_text(config.model_dump_json(), encoding="utf-8")
    log = tmp_path / "termination-log"
    arguments = ["--config", str(config_path), "--models", str(EXAMPLES), "--index", "0"]
    assert main([*arguments, "--termination-log", str(log)]) == ExitCode.OK
    lines = capsys.readouterr().out.splitlines()
    first, second = (parse_result_line(line) for line in lines)
    assert isinstance(first, OkResult) and isinstance(second, OkResult)
    assert second.variant is not None and second.variant.runtime is Runtime.INDUCTOR
    assert second.paired is not None and second.paired.against == eager.id
    assert first.rounds is not None and second.rounds is not None
    assert first.rounds.id == second.rounds.id
    assert second.applied is not None and second.applied.compiled is not None
    assert first.applied is not None and first.applied.compiled is None


@pytest.mark.slow
def test_a_pod_without_a_cpp_compiler_fails_the_compiled_variant_saying_what_to_fix(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    """An image without g++ (inductor compiles CPU kernels with it): unsupported_variant,
    which fails the index at once rather than retrying what would fail again."""
    config_path = tmp_path / "config.json"
    config_path.write_text(compiled(make_config("tiny-mlp")).model_dump_json(), encoding="utf-8")
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {
        "PATH": str(empty),
        "CONFIG_PATH": str(config_path),
        "MODEL_PATH": str(EXAMPLES),
        "JOB_COMPLETION_INDEX": "0",
        "TERMINATION_LOG": str(tmp_path / "termination-log"),
        "TMPDIR": str(tmp_path),
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    done = python_m_runner(env)
    assert done.returncode == ExitCode.UNSUPPORTED_VARIANT, done.stderr
    result = parse_result_line(done.stdout)
    assert isinstance(result, ErrorResult)
    assert result.error.type == "unsupported_variant"
    assert "a C++ compiler, and the image has none" in result.error.message
    assert "build the runner image from runner/Dockerfile" in result.error.message


def test_the_compile_caches_go_to_the_pods_scratch_unless_the_image_set_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(CACHE_ENV[0], raising=False)
    monkeypatch.setenv(CACHE_ENV[1], "/tmp/triton-from-the-image")
    keep_caches_in(tmp_path)
    assert os.environ[CACHE_ENV[0]] == str(tmp_path / "torchinductor")
    assert os.environ[CACHE_ENV[1]] == "/tmp/triton-from-the-image"


@pytest.mark.slow
@pytest.mark.gpu
def test_a_compiled_variant_on_a_gpu_compiles_with_triton(
    make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    device = f"nvidia-{torch.cuda.get_device_name(0).split()[1].lower()}"
    config = compiled(make_config("tiny-transformer", device_type=device))
    result = run_variant(config, config.variants[0], RunPaths(models_dir, tmp_path))
    assert result.applied is not None and result.applied.compiled is not None
    assert result.applied.compiled.toolchain.startswith("triton ")
    assert result.accuracy is not None
    assert judge(result.accuracy, default_gate(Precision.FP32, Quantization.NONE)).failures == ()
