"""Deployment runtimes (config.json `runtime`: aotinductor, onnxruntime): the prepared module
is converted in the pod, the conversion timed apart, the converted form is what warm-up, the
timed loop and the accuracy pass run, the result proves what ran, and a runtime that cannot
take the program fails its variant with a class of its own, never running it eager."""

import os
from pathlib import Path

import pytest
import torch
from pydantic import ValidationError

from contract.accuracy import default_gate, judge
from contract.config import ModelConfig, RunConfig, VariantConfig
from contract.errors import ExitCode
from contract.result import ErrorResult, OkResult, parse_result_line, result_line
from contract.variant import Precision, Quantization, Runtime
from runner.__main__ import main
from runner.errors import RuntimeFailed
from runner.run import RunPaths, run_variant
from runner.runtimes import BoundSession, convert
from tests.runner.conftest import (
    EXAMPLES,
    MakeConfig,
    group_config,
    group_variant,
    python_m_runner,
    sha256_of,
)


def in_runtime(config: RunConfig, runtime: Runtime) -> RunConfig:
    """`config` with its variants run by `runtime`."""
    variants = tuple(v.model_copy(update={"runtime": runtime}) for v in config.variants)
    return config.model_copy(update={"variants": variants})


def within_gate(result: OkResult, precision: Precision = Precision.FP32) -> bool:
    assert result.accuracy is not None
    gate = default_gate(precision, Quantization.NONE)
    return judge(result.accuracy, gate).failures == ()


def test_an_eager_variant_names_torch_as_what_ran_and_converts_nothing(
    make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    config = make_config("tiny-mlp")
    result = run_variant(config, config.variants[0], RunPaths(models_dir, tmp_path))
    assert result.applied is not None and result.timings is not None
    assert result.applied.runtime_proof == [f"torch {torch.__version__} eager"]
    assert result.timings.conversion_s is None and result.timings.runtime_load_s is None
    assert '"runtime"' not in result_line(result)


@pytest.mark.slow
def test_an_onnxruntime_variant_runs_its_session_on_the_cpu_provider_within_its_gate(
    make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    config = in_runtime(make_config("tiny-cnn"), Runtime.ONNXRUNTIME)
    result = run_variant(config, config.variants[0], RunPaths(models_dir, tmp_path))
    assert result.variant is not None and result.variant.runtime is Runtime.ONNXRUNTIME
    assert result.applied is not None and result.timings is not None
    assert result.applied.runtime_proof == ["CPUExecutionProvider"]
    assert result.timings.conversion_s is not None and result.timings.conversion_s > 0
    # The session's load is a part of the conversion, told apart from the export.
    loaded = result.timings.runtime_load_s
    assert loaded is not None and 0 < loaded < result.timings.conversion_s
    assert result.timings.compile_s is None and result.applied.compiled is None
    assert result.timings.warmup.iterations >= 3 and result.latency.count >= 3
    assert within_gate(result)
    assert '"runtime":"onnxruntime"' in result_line(result)


@pytest.mark.slow
def test_an_onnxruntime_variant_at_fp16_keeps_its_precision(
    make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    config = in_runtime(make_config("tiny-mlp", precision="fp16"), Runtime.ONNXRUNTIME)
    result = run_variant(config, config.variants[0], RunPaths(models_dir, tmp_path))
    assert result.applied is not None and result.applied.output_dtype == "float16"
    assert within_gate(result, Precision.FP16)


@pytest.mark.slow
def test_an_aotinductor_variant_runs_the_package_it_built_within_its_gate(
    make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    config = in_runtime(make_config("tiny-mlp"), Runtime.AOTINDUCTOR)
    result = run_variant(config, config.variants[0], RunPaths(models_dir, tmp_path))
    assert result.variant is not None and result.variant.runtime is Runtime.AOTINDUCTOR
    assert result.applied is not None and result.timings is not None
    proof = result.applied.runtime_proof or []
    assert any(entry.endswith(".so") for entry in proof), proof
    assert any(entry.startswith("package sha256:") for entry in proof), proof
    assert result.timings.conversion_s is not None and result.timings.conversion_s > 0
    loaded = result.timings.runtime_load_s
    assert loaded is not None and 0 < loaded < result.timings.conversion_s
    # The quantization's proof is still counted on the module before it is converted.
    assert result.applied.kernel_calls == {"aten.linear": 3}
    assert within_gate(result)
    # Inductor's compile is timed as the runtime's own: time to first measurement holds it.
    assert result.timings.own_s > result.timings.conversion_s


class _Bessel(torch.nn.Module):
    """A layer, then an op ONNX has no function for (prims.bessel_j0)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = torch.special.bessel_j0(self.linear(x))
        return out


@pytest.fixture(scope="module")
def bessel_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("models")
    program = torch.export.export(_Bessel().eval(), (torch.randn(2, 8),))
    torch.export.save(program, folder / "bessel.pt2")
    return folder


@pytest.mark.slow
def test_an_onnx_export_that_fails_for_an_op_fails_its_variant_only_naming_the_op(
    bessel_models: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = group_config(
        tuple(group_variant(index, "tiny-mlp", shape=(8,)) for index in range(2)), ((0, 1),)
    )
    bessel = ModelConfig(
        source="file", location="bessel.pt2", sha256=sha256_of(bessel_models / "bessel.pt2")
    )
    variants = tuple(
        variant.model_copy(update={"model": "bessel", "runtime": runtime})
        for variant, runtime in zip(
            config.variants, (Runtime.EAGER, Runtime.ONNXRUNTIME), strict=True
        )
    )
    config = config.model_copy(update={"models": {"bessel": bessel}, "variants": variants})
    config_path = tmp_path / "config.json"
    config_path.write_text(config.model_dump_json(), encoding="utf-8")
    arguments = ["--config", str(config_path), "--models", str(bessel_models), "--index", "0"]
    log = tmp_path / "termination-log"
    assert main([*arguments, "--termination-log", str(log)]) == ExitCode.RUNTIME_FAILED
    eager, converted = (parse_result_line(line) for line in capsys.readouterr().out.splitlines())
    assert isinstance(eager, OkResult)
    assert isinstance(converted, ErrorResult)
    assert converted.error.type == "runtime_failed"
    assert converted.error.message.startswith("onnxruntime: the ONNX export failed: ")
    assert "bessel_j0" in converted.error.message


@pytest.mark.slow
def test_a_pod_without_a_cpp_compiler_fails_its_aotinductor_variant_as_the_runtimes(
    make_config: MakeConfig, tmp_path: Path
) -> None:
    config = in_runtime(make_config("tiny-mlp"), Runtime.AOTINDUCTOR)
    config_path = tmp_path / "config.json"
    config_path.write_text(config.model_dump_json(), encoding="utf-8")
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
    assert done.returncode == ExitCode.RUNTIME_FAILED, done.stderr
    result = parse_result_line(done.stdout)
    assert isinstance(result, ErrorResult)
    assert result.error.type == "runtime_failed"
    assert result.error.message.startswith("aotinductor cannot build its package: ")
    assert "a C++ compiler, and the image has none" in result.error.message


def test_a_result_of_a_runner_before_the_runtime_axis_reads_its_compile_as_the_runtime() -> None:
    """Schema 6 results of compiled variants say `variant.compile: inductor`."""
    line = (
        '{"schema_version":6,"status":"error","variant":{"index":0,"id":"v1","model":"m",'
        '"precision":"fp32","quantization":"none","batch_size":1,"compile":"inductor"},'
        '"error":{"type":"unsupported_variant","message":"x"}}'
    )
    result = parse_result_line("BENCH_RESULT " + line)
    assert result is not None and result.variant is not None
    assert result.variant.runtime is Runtime.INDUCTOR
    assert '"runtime":"inductor"' in result_line(result)


def test_a_variant_saying_both_compile_and_runtime_is_refused() -> None:
    written = group_variant(0, "tiny-mlp").model_dump()
    data = {**written, "compile": "inductor", "runtime": "aotinductor"}
    with pytest.raises(ValidationError, match="both compile and runtime"):
        VariantConfig.model_validate(data)


@pytest.mark.slow
@pytest.mark.gpu
def test_aotinductor_on_a_gpu_runs_its_package_within_its_gate(
    make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    device = f"nvidia-{torch.cuda.get_device_name(0).split()[1].lower()}"
    config = in_runtime(make_config("tiny-transformer", device_type=device), Runtime.AOTINDUCTOR)
    result = run_variant(config, config.variants[0], RunPaths(models_dir, tmp_path))
    assert result.applied is not None
    assert any(entry.endswith(".so") for entry in result.applied.runtime_proof or [])
    assert within_gate(result)


@pytest.mark.slow
@pytest.mark.gpu
def test_onnxruntime_on_a_gpu_runs_on_cuda_or_fails_naming_the_missing_provider(
    make_config: MakeConfig, models_dir: Path, tmp_path: Path
) -> None:
    """Never on the CPU provider under a GPU target's name: the image's CPU build of
    onnxruntime has no CUDAExecutionProvider, and the variant fails saying so."""
    import onnxruntime as ort  # noqa: PLC0415

    device = f"nvidia-{torch.cuda.get_device_name(0).split()[1].lower()}"
    config = in_runtime(make_config("tiny-cnn", device_type=device), Runtime.ONNXRUNTIME)
    paths = RunPaths(models_dir, tmp_path)
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        with pytest.raises(RuntimeFailed, match="has no CUDAExecutionProvider"):
            run_variant(config, config.variants[0], paths)
        return
    result = run_variant(config, config.variants[0], paths)
    assert result.applied is not None
    assert "CUDAExecutionProvider" in (result.applied.runtime_proof or [])
    assert "CPUExecutionProvider" not in (result.applied.runtime_proof or [])
    assert "TensorrtExecutionProvider" not in (result.applied.runtime_proof or [])
    assert within_gate(result)


def test_onnxruntimes_gpu_build_is_asked_for_its_cuda_provider_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """onnxruntime-gpu 1.31.1 lists its TensorRT provider where TensorRT's libraries are
    missing too (measured on this machine), and falls back to CUDA by itself when asked for
    it: so it is never asked for, and a variant's provider does not depend on the image."""
    import onnxruntime as ort  # noqa: PLC0415

    from runner import runtimes  # noqa: PLC0415

    gpu_build = ["TensorrtExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"]
    monkeypatch.setattr(ort, "get_available_providers", lambda: gpu_build)
    assert runtimes._providers(torch.device("cuda", 1)) == [
        ("CUDAExecutionProvider", {"device_id": 1})
    ]
    monkeypatch.setattr(ort, "get_available_providers", lambda: ["CPUExecutionProvider"])
    with pytest.raises(RuntimeFailed, match="a GPU needs onnxruntime-gpu"):
        runtimes._providers(torch.device("cuda", 0))


@pytest.mark.slow
def test_an_onnxruntime_session_uses_the_threads_torch_was_given(tmp_path: Path) -> None:
    """ONNX Runtime's default is every core of the node; the pod's quota gave torch fewer."""
    module = torch.nn.Linear(8, 4).eval()
    inputs = (torch.randn(2, 8),)
    given = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.inference_mode():
            converted = convert(
                module,
                inputs=inputs,
                output=module(*inputs),
                runtime=Runtime.ONNXRUNTIME,
                device=torch.device("cpu"),
                scratch=tmp_path,
            )
    finally:
        torch.set_num_threads(given)
    assert isinstance(converted.call, BoundSession)
    assert converted.call.session.get_session_options().intra_op_num_threads == 1
    assert torch.allclose(converted.call(*inputs), module(*inputs).detach())  # type: ignore[arg-type]


@pytest.mark.slow
def test_tensorrt_in_a_pod_without_a_gpu_fails_as_the_runtimes_never_eager(
    tmp_path: Path,
) -> None:
    """The catalogue refuses it on a CPU target; a config.json that asks anyway fails."""
    module = torch.nn.Linear(8, 4).eval()
    inputs = (torch.randn(2, 8),)
    with torch.inference_mode(), pytest.raises(RuntimeFailed, match="NVIDIA GPUs only"):
        convert(
            module,
            inputs=inputs,
            output=module(*inputs),
            runtime=Runtime.TENSORRT,
            device=torch.device("cpu"),
            scratch=tmp_path,
        )
