"""The runner on a real GPU: every precision and quantization a Hopper target offers, run as a
pod runs it (`python -m runner`, config.json, JOB_COMPLETION_INDEX, a termination log).

    python -m bench.gpu_runner [OUT_DIR] [--smoke]    (on a machine with a CUDA GPU)

For each example model, each GPU precision (fp32, tf32, fp16, bf16) and quantization with a
GPU path that this GPU's compute capability has (none, int8-weight-only; int4-weight-only from
8.0, fp8-dynamic from 8.9, which this run is what proves) at batch 32, one index of a
config.json for the GPU the machine has (device type `nvidia-<model>`, from torch's device
name), in a process of its own. A quantized variant's `applied.kernel_calls` shows the kernel
each layer dispatched (the runner fails it, `unsupported_variant`, where one did not). Also
the wrong-GPU check: a target asking for an A100 on this GPU must exit `device_missing`.
And every runtime beside eager whose GPU path this compute capability has (inductor,
aotinductor, onnxruntime, tensorrt; synth/catalogue.py RUNTIMES) at fp16, unquantized: what
proves them (`gpu_proven`); its `applied.runtime_proof` says what ran, and a runtime the
machine lacks (onnxruntime's CPU build, no Torch-TensorRT) exits `runtime_failed` saying so.
Prints a table (p50, device time over wall time, the SM clock's range against its maximum,
the energy per inference and average power from NVML's energy counter, the validity flags and
NVML's slowdown reasons), each stack the results name (`fingerprint`), and writes every
result line to OUT_DIR/gpu_runner.jsonl.

The models are the committed examples when this torch loads them; a torch older than the
one that exported them may not, and then they are exported again here (models/make_models.py,
same seeds) with this torch, which the table says. `--smoke` runs tiny-mlp at fp32 alone
(and the wrong-GPU check), for the test-suite (tests/bench/, marked `gpu`).
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final

import torch

from models.make_models import EXAMPLES, export_bytes
from synth.catalogue import QUANTIZATION_KERNELS, RUNTIMES

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
INPUTS: Final = {"tiny-mlp": [64], "tiny-cnn": [3, 64, 64], "tiny-transformer": [32, 16]}
PRECISIONS: Final = ("fp32", "tf32", "fp16", "bf16")
BATCHES: Final = (32,)
FLAGS: Final = ("noisy", "contended", "cpu_throttled", "gpu_throttled", "stopped_early")
WARMUP: Final = {
    "min_iterations": 10,
    "min_time_s": 0.2,
    "max_iterations": 10000,
    "max_time_s": 5.0,
}
MEASURE: Final = {
    "min_iterations": 200,
    "min_time_s": 1.0,
    "max_iterations": 1000000,
    "max_time_s": 5.0,
}


def _models(folder: Path) -> tuple[dict[str, Any], str]:
    """The models' config entries, written into `folder`; and where they came from."""
    committed = REPO_ROOT / "models" / "examples"
    source = "committed"
    try:
        torch.export.load(committed / "tiny-mlp.pt2")
    except Exception as error:
        source = f"re-exported with torch {torch.__version__} ({type(error).__name__})"
    models = {}
    for recipe in EXAMPLES:
        data = (
            (committed / f"{recipe.name}.pt2").read_bytes()
            if source == "committed"
            else export_bytes(recipe)
        )
        (folder / f"{recipe.name}.pt2").write_bytes(data)
        models[recipe.name] = {
            "source": "file",
            "location": f"{recipe.name}.pt2",
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    return models, source


def _quantizations(capability: tuple[int, int]) -> list[str]:
    """The quantizations whose GPU kernel this compute capability has, proven or not yet:
    this run is what proves them (docs/runner.md)."""
    return [
        str(quantization)
        for quantization, kernel in QUANTIZATION_KERNELS.items()
        if kernel.gpu_capability is not None and capability >= kernel.gpu_capability
    ]


def _runtimes(capability: tuple[int, int]) -> list[str]:
    """The runtimes beside eager whose GPU path this compute capability has."""
    return [
        str(runtime)
        for runtime, kernel in RUNTIMES.items()
        if runtime != "eager"
        and kernel.gpu_capability is not None
        and capability >= kernel.gpu_capability
    ]


def _config(device_type: str, models: dict[str, Any], *, smoke: bool) -> dict[str, Any]:
    variants: list[dict[str, Any]] = []
    quantizations = _quantizations(torch.cuda.get_device_capability(0))
    for model in list(INPUTS)[:1] if smoke else INPUTS:
        for precision in PRECISIONS[:1] if smoke else PRECISIONS:
            for quantization in quantizations[:1] if smoke else quantizations:
                for batch in BATCHES:
                    variants.append(
                        {
                            "index": len(variants),
                            "id": f"v{len(variants):04d}",
                            "model": model,
                            "precision": precision,
                            "quantization": quantization,
                            "batch_size": batch,
                            "inputs": [{"shape": INPUTS[model], "dtype": "float32"}],
                        }
                    )
        for runtime in [] if smoke else _runtimes(torch.cuda.get_device_capability(0)):
            variants.append(
                {
                    "index": len(variants),
                    "id": f"v{len(variants):04d}",
                    "model": model,
                    "precision": "fp16",
                    "quantization": "none",
                    "batch_size": BATCHES[0],
                    "runtime": runtime,
                    "inputs": [{"shape": INPUTS[model], "dtype": "float32"}],
                }
            )
    return {
        "schema_version": 1,
        "workflow": "gpu-check",
        "target": device_type,
        "device_type": device_type,
        "gpus": 1,
        "warmup": WARMUP,
        "measure": MEASURE,
        "models": models,
        "variants": variants,
    }


def _run(
    config: Path, models: Path, index: int, scratch: Path
) -> tuple[int, dict[str, Any] | None, str]:
    log = scratch / f"termination-{index}"
    env = {
        **os.environ,
        "CONFIG_PATH": str(config),
        "MODEL_PATH": str(models),
        "JOB_COMPLETION_INDEX": str(index),
        "TERMINATION_LOG": str(log),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, "-m", "runner"], env=env, capture_output=True, text=True, check=False,
        timeout=300,
    )  # fmt: skip
    line = next(
        (line for line in reversed(done.stdout.splitlines()) if line.startswith("BENCH_RESULT ")),
        None,
    )
    result = json.loads(line.removeprefix("BENCH_RESULT ")) if line else None
    return done.returncode, result, done.stderr[-400:]


def _kernels(result: dict[str, Any]) -> str:
    """The quantized layers and the matrix ops one call dispatched, or the error."""
    applied = result.get("applied") or {}
    if not applied:
        return str((result.get("error") or {}).get("message", ""))[:200]
    calls = " ".join(f"{op}x{n}" for op, n in (applied.get("kernel_calls") or {}).items())
    ran = ", ".join(applied.get("runtime_proof") or [])[:120]
    return (
        f"{applied.get('quantized_layers')}/{applied.get('linear_layers')} layers: {calls}; {ran}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu_runner", description=__doc__)
    parser.add_argument("out", nargs="?", type=Path, default=Path("."))
    parser.add_argument("--smoke", action="store_true", help="tiny-mlp at fp32 alone")
    arguments = parser.parse_args()
    out, smoke = arguments.out, arguments.smoke
    out.mkdir(parents=True, exist_ok=True)
    name = torch.cuda.get_device_name(0)
    device_type = "nvidia-" + name.split()[-1].lower()
    print(
        f"{name}: torch {torch.__version__}, CUDA {torch.version.cuda}, device type {device_type}"
    )
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        models, source = _models(scratch)
        print(f"models: {source}")
        config = scratch / "config.json"
        config.write_text(json.dumps(_config(device_type, models, smoke=smoke)))
        wrong = scratch / "wrong.json"
        wrong.write_text(
            json.dumps({**_config("nvidia-a100", models, smoke=True), "device_type": "nvidia-a100"})
        )
        rows = []
        with (out / "gpu_runner.jsonl").open("w") as lines:
            for index, variant in enumerate(json.loads(config.read_text())["variants"]):
                began = time.perf_counter()
                code, result, stderr = _run(config, scratch, index, scratch)
                seconds = time.perf_counter() - began
                lines.write(json.dumps({"variant": variant, "exit": code, "result": result,
                                        "stderr": stderr, "seconds": seconds}) + "\n")  # fmt: skip
                rows.append((variant, code, result))
            wrong_exit, wrong_result, _ = _run(wrong, scratch, 0, scratch)
            lines.write(
                json.dumps({"wrong_gpu": True, "exit": wrong_exit, "result": wrong_result}) + "\n"
            )
    print(f"{'model':<17}{'precision':<10}{'quant':<18}{'batch':>5}{'exit':>5}{'p50 ms':>9}"
          f"{'samples/s':>12}{'device/wall':>12}{'SM MHz':>16}{'mJ/inf':>9}{'W':>6}"
          "  flags; kernels")  # fmt: skip
    for variant, code, reported in rows:
        result = reported or {}
        latency = result.get("latency") or {}
        validity = result.get("validity") or {}
        gpu = result.get("gpu") or {}
        flags = [flag for flag in FLAGS if validity.get(flag)] or [
            ((result.get("error") or {}).get("type") or "ok")
        ]
        clocks = f"{gpu.get('sm_clock_mhz_min')}-{gpu.get('sm_clock_mhz_max')}/" + str(
            gpu.get("sm_clock_mhz_limit")
        )
        busy = gpu.get("device_s", 0) / gpu["wall_s"] if gpu.get("wall_s") else float("nan")
        energy = result.get("energy") or {}
        per_inference = (energy.get("joules_per_inference") or float("nan")) * 1000
        watts = energy.get("average_w") or float("nan")
        quantization = "/".join(filter(None, (variant["quantization"], variant.get("runtime"))))
        print(f"{variant['model']:<17}{variant['precision']:<10}{quantization:<18}"
              f"{variant['batch_size']:>5}{code:>5}{latency.get('p50_ms', float('nan')):>9.3f}"
              f"{result.get('throughput_samples_per_s') or 0:>12.0f}{busy:>12.2f}{clocks:>16}"
              f"{per_inference:>9.3f}{watts:>6.0f}  "
              f"{' '.join(flags)} {' '.join(gpu.get('throttle_reasons', []))}; "
              f"{_kernels(result)}")  # fmt: skip
        if energy.get("unavailable"):
            print(f"  energy not measured: {energy['unavailable']}")
    # The stack as loaded (docs/runner.md): the CUDA runtime, cuDNN and cuBLAS the process
    # mapped beside the build torch names, the driver and GPU settings from NVML.
    stacks = {
        json.dumps(r["fingerprint"], sort_keys=True)
        for _, _, r in rows
        if r and r.get("fingerprint")
    }
    for stack in sorted(stacks):
        print(f"stack: {stack}")
    wrong_error = ((wrong_result or {}).get("error") or {}).get("type")
    print(f"A100 target on this GPU: exit {wrong_exit}, error {wrong_error}")


if __name__ == "__main__":
    main()
