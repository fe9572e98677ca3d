"""Runtime a variant's prepared module with `torch.compile` (config.json's `compile`).

What is compiled is the module the runner made from the verified graph, cast and quantized:
nothing executable comes from the model file (its AOTInductor members are refused by the
archive check), and the kernels are generated and compiled here, in the pod, into its
scratch folder. The compile's time is the variant's own (`timings.compile_s`), outside warmup
and the timed loop, whose first iterations then run the compiled code.

Only runner/run.py calls this, and only for a compiled variant: inductor's imports, like
torchao's, are for the pods that use them.
"""

import os
import shutil
import subprocess
import sysconfig
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import torch

from contract.result import Compiled
from contract.variant import Runtime
from runner.errors import UnsupportedVariant

MODES: Final = {Runtime.INDUCTOR: ("inductor", "default")}
"""Each compiled value's backend and mode, as torch.compile names them."""
CACHE_ENV: Final = ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")
"""Where inductor and Triton write generated code and compiled kernels."""


@dataclass(frozen=True)
class CompiledModule:
    """A variant's module compiled, with what its compile took and did."""

    module: Callable[..., object]
    seconds: float
    applied: Compiled


def keep_caches_in(scratch: Path) -> None:
    """Point inductor's and Triton's caches into the pod's scratch folder (its writable /tmp;
    the root filesystem is read-only), unless the image set them: a pod starts with an empty
    cache, as it does in a cluster, whichever host ran earlier compiles."""
    for name in CACHE_ENV:
        os.environ.setdefault(name, str(scratch / name.removesuffix("_CACHE_DIR").lower()))


_FIX: Final = "build the runner image from runner/Dockerfile, which installs them"


def toolchain(device: torch.device) -> str:
    """What compiles the generated kernels on `device`, in words; UnsupportedVariant where the
    pod lacks it (a compiler, Python's headers, a GPU Triton supports): the compile would
    fail on it deep inside torch, and on every retry."""
    headers = Path(sysconfig.get_path("include")) / "Python.h"
    if device.type == "cuda":
        from torch.utils._triton import has_triton  # noqa: PLC0415

        if not has_triton():
            raise UnsupportedVariant(
                f"inductor compiles GPU kernels with Triton, which this image or GPU lacks "
                f"(torch {torch.__version__}; Triton needs compute capability 7.0 or newer)"
            )
        # Triton builds its launcher, a Python extension, with the host's C compiler.
        if not (os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")):
            raise UnsupportedVariant(
                f"Triton builds its kernel launcher with a C compiler, and the image has none: "
                f"{_FIX}"
            )
        if not headers.exists():
            raise UnsupportedVariant(f"Triton's launcher includes {headers}, missing: {_FIX}")
        import triton  # type: ignore[import-untyped]  # noqa: PLC0415

        return f"triton {triton.__version__}"
    if not headers.exists():
        raise UnsupportedVariant(
            f"inductor's CPU kernels are Python extensions, and Python's headers ({headers}) "
            f"are missing: {_FIX}"
        )
    from torch._inductor.cpp_builder import get_cpp_compiler  # noqa: PLC0415
    from torch._inductor.exc import InvalidCxxCompiler  # noqa: PLC0415

    try:
        compiler = get_cpp_compiler()
    except InvalidCxxCompiler as error:
        raise UnsupportedVariant(
            "inductor compiles CPU kernels with a C++ compiler, and the image has none "
            f"({str(error).splitlines()[0]}): {_FIX}"
        ) from error
    version = subprocess.run(
        [compiler, "--version"], capture_output=True, text=True, check=True
    ).stdout
    return version.splitlines()[0] if version else compiler


def _counts() -> tuple[int, int]:
    """Graphs dynamo compiled in this process, and those inductor found in its cache."""
    from torch._dynamo.utils import counters  # noqa: PLC0415

    return counters["stats"]["unique_graphs"], counters["inductor"]["fxgraph_cache_hit"]


def compile_module(
    module: torch.nn.Module,
    how: Runtime,
    device: torch.device,
    run: Callable[[Callable[..., object]], object],
    described: str,
) -> CompiledModule:
    """`module` compiled as `how` says, and compiled for real: `run` calls it once on the
    variant's inputs, which is when torch.compile traces and compiles. UnsupportedVariant
    where it cannot be compiled whole."""
    backend, mode = MODES[how]
    tools = toolchain(device)
    graphs, hits = _counts()
    began = time.perf_counter()
    # fullgraph: an exported program is one graph; a break would measure part of it eager
    # under a compiled label. dynamic=False: a variant's inputs never change shape.
    compiled = torch.compile(
        module,
        backend=backend,
        mode=None if mode == "default" else mode,
        fullgraph=True,
        dynamic=False,
    )
    from torch._dynamo.exc import TorchDynamoException  # noqa: PLC0415

    try:
        run(compiled)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    except TorchDynamoException as error:
        said = str(error).strip()
        first = said.splitlines()[0] if said else type(error).__name__
        raise UnsupportedVariant(
            f"{described}: torch.compile ({backend}) failed: {first}"
        ) from error
    seconds = time.perf_counter() - began
    graphs_after, hits_after = _counts()
    if graphs_after == graphs:
        # torch.compile runs the module eager without a word where dynamo is disabled
        # (TORCHDYNAMO_DISABLE=1) or skips the frame.
        raise UnsupportedVariant(
            f"{described}: torch.compile compiled no graph, so the module ran eager; is "
            "TORCHDYNAMO_DISABLE set in the pod?"
        )
    return CompiledModule(
        module=compiled,
        seconds=seconds,
        applied=Compiled(
            backend=backend,
            mode=mode,
            graphs=graphs_after - graphs,
            cache_hits=hits_after - hits,
            toolchain=tools,
        ),
    )
