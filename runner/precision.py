"""Cast a program to the variant's precision and set CUDA's fp32 math mode to match.

fp16 and bf16 cast weights, buffers and floating inputs (pure low-precision inference, what
`.half()` does); tf32 keeps fp32 tensors but lets CUDA matmuls and convolutions use TF32, and
fp32 forbids that explicitly, since cuDNN convolutions default to TF32 on Ampere and newer.
That mode is process-global, so each variant's step sets its own (`in_own_fp32_math`): the
variants of an interleaved pod take turns, and each must run in its own mode, not in the
one prepared last.
"""

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

import torch
from torch.fx import GraphModule
from torch.utils._python_dispatch import is_traceable_wrapper_subclass

from contract.variant import Precision
from runner.errors import UnsupportedVariant
from runner.measure import Step

COMPUTE_DTYPES: Final = {
    Precision.FP32: torch.float32,
    Precision.TF32: torch.float32,
    Precision.FP16: torch.float16,
    Precision.BF16: torch.bfloat16,
}


def compute_dtype(precision: Precision) -> torch.dtype:
    """The dtype floating tensors are computed in."""
    return COMPUTE_DTYPES[precision]


def set_fp32_math(precision: Precision, device: torch.device) -> str | None:
    """Set CUDA's fp32 matmul and convolution mode; return it, or None on CPU."""
    if device.type != "cuda":
        if precision == Precision.TF32:
            raise UnsupportedVariant("tf32 is a CUDA math mode; a CPU target cannot use it")
        return None
    mode = "tf32" if precision == Precision.TF32 else "ieee"
    _set_fp32_math(mode)
    return mode


def _set_fp32_math(mode: str) -> None:
    torch.backends.cuda.matmul.fp32_precision = mode
    # torch's stubs lack cudnn.conv and cudnn.rnn, which torch 2.9+ has at run time; both
    # are set, because torch refuses to run cuDNN when they disagree.
    torch.backends.cudnn.conv.fp32_precision = mode  # type: ignore[attr-defined]
    torch.backends.cudnn.rnn.fp32_precision = mode  # type: ignore[attr-defined]


def in_own_fp32_math(step: Step, mode: str | None) -> Step:
    """`step`, setting CUDA's fp32 math to `mode` (what `set_fp32_math` returned for its
    variant) before each call: an interleaved tf32 variant and fp32 one otherwise both ran
    in whichever mode was prepared last, and a compiled one, whose guards include the mode,
    would recompile mid-loop. On CUDA the setting (about 9 us) falls outside the CUDA events
    that time the call; on a CPU (`mode` None) the step is left as it is."""
    if mode is None:
        return step

    def in_mode() -> int:
        _set_fp32_math(mode)
        return step()

    return in_mode


@contextmanager
def ieee_fp32(device: torch.device) -> Iterator[None]:
    """CUDA's fp32 math forced to IEEE inside (what the fp32 precision sets), and back to what
    it was afterwards: the accuracy reference must not be computed in TF32 because a tf32
    variant of the pod set it."""
    if device.type != "cuda":
        yield
        return
    # torch's stubs lack cudnn.conv and cudnn.rnn (see set_fp32_math).
    cudnn = torch.backends.cudnn
    before = (
        torch.backends.cuda.matmul.fp32_precision,
        cudnn.conv.fp32_precision,  # type: ignore[attr-defined]
        cudnn.rnn.fp32_precision,  # type: ignore[attr-defined]
    )
    set_fp32_math(Precision.FP32, device)
    try:
        yield
    finally:
        torch.backends.cuda.matmul.fp32_precision = before[0]
        cudnn.conv.fp32_precision = before[1]  # type: ignore[attr-defined]
        cudnn.rnn.fp32_precision = before[2]  # type: ignore[attr-defined]


def cast(module: GraphModule, dtype: torch.dtype, device: torch.device) -> GraphModule:
    """Move the program to `device` with floating parameters and buffers in `dtype`."""
    return module.to(device=device, dtype=dtype)


def dtype_name(dtype: torch.dtype) -> str:
    """`float32` for torch.float32, as specs and results write dtypes."""
    return str(dtype).removeprefix("torch.")


def _stored(tensor: torch.Tensor) -> list[torch.Tensor]:
    """The plain tensors that hold `tensor`'s data: a quantized tensor (a torchao subclass)
    wears its float dtype and shape outside and keeps packed data and scales inside."""
    if not is_traceable_wrapper_subclass(tensor):
        return [tensor]
    names, _ = tensor.__tensor_flatten__()
    return [stored for name in names for stored in _stored(getattr(tensor, name))]


def _held(module: torch.nn.Module) -> list[torch.Tensor]:
    return [s for t in (*module.parameters(), *module.buffers()) for s in _stored(t)]


def tensor_dtypes(module: torch.nn.Module) -> dict[str, int]:
    """How many tensors of each dtype hold the parameters and buffers (a quantized weight's
    packed data and scales each count)."""
    return dict(sorted(Counter(dtype_name(t.dtype) for t in _held(module)).items()))


def tensor_bytes(module: torch.nn.Module) -> int:
    """Bytes held by parameters and buffers, as stored."""
    return sum(t.numel() * t.element_size() for t in _held(module))
