"""Pick the device a target names, and time one iteration on it."""

import time
from collections.abc import Callable

import torch

from runner.errors import DeviceMissing


def select_device(device_type: str, gpus: int) -> torch.device:
    """The device to measure on; a GPU target without its GPU is an error, never a CPU run."""
    if device_type == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise DeviceMissing(
            f"target {device_type} needs {gpus} GPU(s) but torch sees none "
            f"(torch {torch.__version__}, built for CUDA {torch.version.cuda}); check the node's "
            "NVIDIA driver and device plugin, and that the image has a CUDA build of torch"
        )
    visible = torch.cuda.device_count()
    if visible < gpus:
        raise DeviceMissing(f"target {device_type} asks for {gpus} GPU(s), {visible} visible")
    # nvidia-a100 -> "A100", found in names like "NVIDIA A100-SXM4-80GB" or "Tesla T4".
    model = device_type.removeprefix("nvidia-").upper()
    name = torch.cuda.get_device_name(0)
    if model not in name.upper():
        raise DeviceMissing(
            f"target {device_type} expects an {model}, but the node's GPU is {name}: the "
            "cluster's node labels select the wrong nodes for this GPU type"
        )
    return torch.device("cuda", 0)


def device_name(device: torch.device, cpu_model: str) -> str:
    """The device's marketing name."""
    return torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_model


def timed_step(call: Callable[[], object], device: torch.device) -> Callable[[], int]:
    """A step for runner.measure: on a GPU, CUDA events around the call and a sync, because
    kernels run asynchronously and a host clock would time only their launch."""
    if device.type == "cuda":

        def cuda_step() -> int:
            start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            start.record()
            call()
            end.record()
            end.synchronize()
            return int(start.elapsed_time(end) * 1e6)

        return cuda_step

    def cpu_step() -> int:
        began = time.perf_counter_ns()
        call()
        return time.perf_counter_ns() - began

    return cpu_step
