"""Convert a variant's prepared module into what its runtime runs (config.json's `runtime`:
aotinductor, onnxruntime, tensorrt), and prove what then runs.

What is converted is the module the runner made from the verified graph, cast and quantized,
exported again with the variant's own inputs: nothing executable comes from the model file.
The package, ONNX graph or engines are built here, in the pod's scratch folder, and only what
this call built is loaded. The conversion's time is the variant's own (`timings.conversion_s`),
outside warm-up and the timed loop; of it, loading what was built (`timings.runtime_load_s`).
A runtime that cannot take the program, or would run it other than asked (a provider that
falls back to the CPU), fails the variant with `runtime_failed`: never a fallback to eager.

Only runner/run.py calls this, and only for such a variant: each runtime's imports are for
the pods that use it (Torch-TensorRT's only where the image has it).
"""

import hashlib
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import torch
from torch.utils import _pytree as pytree

from contract.variant import Runtime
from runner.compiling import CompiledModule, toolchain
from runner.errors import RuntimeFailed, UnsupportedVariant


@dataclass(frozen=True)
class Converted:
    """A variant's module in its runtime: a callable of the variant's inputs that returns
    outputs shaped as the program's, what converting it took and what runs, and inductor's
    compile where that is the runtime."""

    call: Callable[..., object]
    seconds: float
    proof: list[str]
    compiled: CompiledModule | None = None
    load_seconds: float | None = None
    """Of `seconds`, loading what the conversion built (aotinductor's package, onnxruntime's
    session); None where nothing built is loaded apart (inductor, tensorrt)."""


@dataclass(frozen=True)
class _Built:
    """What a runtime's builder made: the call, what proves it, and how long loading the
    built artifact took, where that is a step of its own."""

    call: Callable[..., object]
    proof: list[str]
    load_seconds: float | None = None


_OUT_OF_MEMORY: Final = (MemoryError, torch.OutOfMemoryError)
"""What stays `out_of_memory` when a conversion runs out: not the runtime's failure."""


def _first_line(error: BaseException) -> str:
    """The innermost cause's first line: the exporters wrap the failing op's own error (ONNX's
    "No ONNX function found for <OpOverload(op='prims.bessel_j0')>") in generic ones."""
    while error.__cause__ is not None:
        error = error.__cause__
    said = str(error).strip()
    return said.splitlines()[0] if said else type(error).__name__


def convert(
    module: torch.nn.Module,
    *,
    inputs: tuple[torch.Tensor, ...],
    output: object,
    runtime: Runtime,
    device: torch.device,
    scratch: Path,
) -> Converted:
    """`module` converted for `runtime` on `device`, its build under `scratch`; `output` is
    an eager call's output on `inputs` (its structure is the converted call's). Raises
    RuntimeFailed naming the runtime and the cause."""
    began = time.perf_counter()
    try:
        exported = torch.export.export(module, inputs, strict=False)
    except _OUT_OF_MEMORY:
        raise
    except Exception as error:  # torch.export raises many kinds
        raise RuntimeFailed(
            f"{runtime}: exporting the prepared program again failed: {_first_line(error)}"
        ) from error
    scratch.mkdir(parents=True, exist_ok=True)
    built = _BUILDERS[runtime](exported, inputs, output, device, scratch)
    return Converted(
        call=built.call,
        seconds=time.perf_counter() - began,
        proof=built.proof,
        load_seconds=built.load_seconds,
    )


def _aotinductor(
    exported: torch.export.ExportedProgram,
    inputs: tuple[torch.Tensor, ...],
    output: object,
    device: torch.device,
    scratch: Path,
) -> _Built:
    try:
        tools = toolchain(device)
    except UnsupportedVariant as error:
        raise RuntimeFailed(f"aotinductor cannot build its package: {error}") from error
    # A fresh name per build: only this build's package is ever loaded.
    path = scratch / f"aotinductor-{time.monotonic_ns()}.pt2"
    try:
        built = torch._inductor.aoti_compile_and_package(exported, package_path=str(path))
        began = time.perf_counter()
        loaded = torch._inductor.aoti_load_package(built)
        load_seconds = time.perf_counter() - began
    except _OUT_OF_MEMORY:
        raise
    except Exception as error:  # inductor's and the compiler's errors alike
        raise RuntimeFailed(
            f"aotinductor: building the package failed: {_first_line(error)}"
        ) from error
    with zipfile.ZipFile(built) as package:
        libraries = sorted(
            name.split("/", 1)[-1]
            for name in package.namelist()
            if name.endswith((".so", ".cubin", ".hsaco"))
        )
    if not libraries:
        raise RuntimeFailed(f"aotinductor: the package {path.name} holds no compiled library")
    digest = hashlib.sha256(Path(built).read_bytes()).hexdigest()
    return _Built(loaded, [*libraries, f"package sha256:{digest}", tools], load_seconds)


_GPU_PROVIDER: Final = "CUDAExecutionProvider"
"""ONNX Runtime's provider on a GPU, with no fallback to the CPU
(`session.disable_cpu_ep_fallback`). Not its TensorRT provider, which its GPU build always
lists: it loads TensorRT 10's libraries, which PyPI does not serve (they come from NVIDIA's
index) and which Torch-TensorRT 2.13 (TensorRT 11) would not share; asked for where they are
missing, ONNX Runtime falls back to CUDA by itself. Which provider runs a variant is what it
measures, so it is one, always the same, and proven."""


def _providers(device: torch.device) -> list[tuple[str, dict[str, Any]]]:
    import onnxruntime as ort  # noqa: PLC0415

    if device.type != "cuda":
        return [("CPUExecutionProvider", {})]
    available = ort.get_available_providers()
    if _GPU_PROVIDER not in available:
        raise RuntimeFailed(
            f"onnxruntime: this image's ONNX Runtime has no {_GPU_PROVIDER} (it has "
            f"{', '.join(available)}): the CPU build, where a GPU needs onnxruntime-gpu, which "
            "the image built on PyPI's torch carries (docs/container.md)"
        )
    return [(_GPU_PROVIDER, {"device_id": device.index or 0})]


_NUMPY_DTYPES: Final = {torch.float32: "float32", torch.float16: "float16", torch.int64: "int64"}


def _element_type(tensor: torch.Tensor) -> Any:
    import numpy as np  # noqa: PLC0415

    name = _NUMPY_DTYPES.get(tensor.dtype)
    if name is None:
        raise RuntimeFailed(f"onnxruntime: no binding for tensors of {tensor.dtype}")
    return np.dtype(name)


def _onnxruntime(
    exported: torch.export.ExportedProgram,
    inputs: tuple[torch.Tensor, ...],
    output: object,
    device: torch.device,
    scratch: Path,
) -> _Built:
    import onnxruntime as ort  # noqa: PLC0415

    path = scratch / f"onnx-{time.monotonic_ns()}.onnx"
    try:
        program = torch.onnx.export(exported, inputs, dynamo=True, verbose=False)
        if program is None:
            raise ValueError("the exporter returned no program")
        program.save(str(path))
    except _OUT_OF_MEMORY:
        raise
    except Exception as error:  # the exporter's errors have no common base
        raise RuntimeFailed(f"onnxruntime: the ONNX export failed: {_first_line(error)}") from error
    wanted = _providers(device)
    options = ort.SessionOptions()
    # The threads torch was given (runner/threads.py: the pod's CPU quota), not ONNX Runtime's
    # default of every core of the node: a runtime that takes more cores than its pod may use
    # would be measured throttled, or faster than the others on borrowed cores.
    options.intra_op_num_threads = torch.get_num_threads()
    options.inter_op_num_threads = 1
    if device.type == "cuda":
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
    began = time.perf_counter()
    try:
        session = ort.InferenceSession(str(path), options, providers=wanted)
    except _OUT_OF_MEMORY:
        raise
    except Exception as error:  # onnxruntime's errors are its own C++ ones
        needs = (
            " (the CUDA provider needs CUDA 13 and cuDNN 9, PyPI torch's own, and a GPU it can"
            " use: ONNX Runtime's log above names what it missed)"
            if device.type == "cuda"
            else ""
        )
        raise RuntimeFailed(
            f"onnxruntime could not load the exported graph with "
            f"{', '.join(name for name, _ in wanted)}: {_first_line(error)}{needs}"
        ) from error
    used = session.get_providers()
    missing = [name for name, _ in wanted if name not in used]
    if missing:
        raise RuntimeFailed(
            f"onnxruntime's session runs on {', '.join(used)}, not on {', '.join(missing)} as asked"
        )
    bound = _bound(session, inputs, output, device)
    return _Built(bound, used, time.perf_counter() - began)


@dataclass(frozen=True)
class BoundSession:
    """A session bound to the variant's inputs' own memory and to outputs allocated once, as
    the program's: the timed call is ONNX Runtime's run, with no copy of its own around it.
    It holds the bound tensors, which must outlive the binding."""

    session: Any
    binding: Any
    inputs: tuple[torch.Tensor, ...]
    outputs: list[torch.Tensor]
    spec: pytree.TreeSpec

    def __call__(self, *given: torch.Tensor) -> object:
        # Inputs that change by query (a preprocess's outputs, a recording's samples) are
        # copied into the bound ones, as a deployment fills the buffers it bound; a variant's
        # own drawn inputs are the bound tensors and cost no copy.
        for held, tensor in zip(self.inputs, given, strict=True):
            if tensor is held:
                continue
            if tensor.shape != held.shape:
                raise RuntimeFailed(
                    f"onnxruntime: a query's input of shape {tuple(tensor.shape)} where the "
                    f"session was bound to {tuple(held.shape)}: inputs that change shape by "
                    "query (a recording of varying lengths) need another runtime"
                )
            held.copy_(tensor)
        self.session.run_with_iobinding(self.binding)
        return pytree.tree_unflatten(self.outputs, self.spec)


def _bound(
    session: Any, inputs: tuple[torch.Tensor, ...], output: object, device: torch.device
) -> BoundSession:
    leaves, spec = pytree.tree_flatten(output)
    if not all(isinstance(leaf, torch.Tensor) for leaf in leaves):
        raise RuntimeFailed("onnxruntime: the program returns values other than tensors")
    outputs = [torch.empty_like(leaf).contiguous() for leaf in leaves]
    given, produced = session.get_inputs(), session.get_outputs()
    if len(given) != len(inputs) or len(produced) != len(outputs):
        raise RuntimeFailed(
            f"onnxruntime: the ONNX graph takes {len(given)} inputs and gives {len(produced)} "
            f"outputs where the program takes {len(inputs)} and gives {len(outputs)}"
        )
    held = tuple(tensor.contiguous() for tensor in inputs)
    binding = session.io_binding()
    kind, index = ("cuda", device.index or 0) if device.type == "cuda" else ("cpu", 0)
    for meta, tensor in zip(given, held, strict=True):
        binding.bind_input(
            meta.name, kind, index, _element_type(tensor), list(tensor.shape), tensor.data_ptr()
        )
    for meta, tensor in zip(produced, outputs, strict=True):
        binding.bind_output(
            meta.name, kind, index, _element_type(tensor), list(tensor.shape), tensor.data_ptr()
        )
    return BoundSession(session, binding, held, outputs, spec)


def _tensorrt(
    exported: torch.export.ExportedProgram,
    inputs: tuple[torch.Tensor, ...],
    output: object,
    device: torch.device,
    scratch: Path,
) -> _Built:
    if device.type != "cuda":
        raise RuntimeFailed("tensorrt builds engines for NVIDIA GPUs only, and this pod has none")
    try:
        import torch_tensorrt  # noqa: PLC0415
    except ImportError as error:
        raise RuntimeFailed(
            f"tensorrt: Torch-TensorRT is not in this image ({_first_line(error)})"
        ) from error
    dtypes = {tensor.dtype for tensor in inputs if tensor.is_floating_point()}
    try:
        # require_full_compilation: a graph TensorRT takes only in part would measure the
        # rest in torch under a TensorRT label.
        module = torch_tensorrt.dynamo.compile(
            exported,
            inputs=list(inputs),
            enabled_precisions=dtypes or {torch.float32},
            require_full_compilation=True,
            min_block_size=1,
        )
    except _OUT_OF_MEMORY:
        raise
    except Exception as error:  # TensorRT's builder errors have no common base
        raise RuntimeFailed(
            f"tensorrt: building the engines failed: {_first_line(error)}"
        ) from error
    engines = sorted(
        f"{name}: {type(child).__name__}"
        for name, child in module.named_children()
        if "TensorRT" in type(child).__name__
    )
    if not engines:
        raise RuntimeFailed("tensorrt: the compiled module holds no TensorRT engine")
    # The engines are built into the module they are called through: no load apart.
    return _Built(module, [*engines, f"torch_tensorrt {torch_tensorrt.__version__}"])


_Builder = Callable[
    [torch.export.ExportedProgram, tuple[torch.Tensor, ...], object, torch.device, Path],
    _Built,
]
_BUILDERS: Final[dict[Runtime, _Builder]] = {
    Runtime.AOTINDUCTOR: _aotinductor,
    Runtime.ONNXRUNTIME: _onnxruntime,
    Runtime.TENSORRT: _tensorrt,
}


def eager_proof() -> list[str]:
    """What runs an eager variant: torch itself."""
    return [f"torch {torch.__version__} eager"]
