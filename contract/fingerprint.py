"""The stack a result was measured on (its `fingerprint`), and which of its fields make two
results comparable: the runner fills it (runner/fingerprint.py), the collector adds the
image's digest from the pod's status, the report compares like with like by it."""

import re
from collections.abc import Mapping
from typing import Final

from pydantic import BaseModel, ConfigDict, Field


class Fingerprint(BaseModel):
    """What the numbers were measured with, as the process had it loaded (never as pip
    says); each field None where the device has none or it could not be read."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, use_attribute_docstrings=True, allow_inf_nan=False
    )

    driver_version: str | None = None
    """The NVIDIA driver's version (NVML `nvmlSystemGetDriverVersion`); None on a CPU."""
    cuda_runtime: str | None = None
    """The CUDA runtime the process loaded (`cudaRuntimeGetVersion` of the loaded libcudart,
    "12.4"): not `torch.version.cuda`, the version torch was built against. None on a CPU."""
    cudnn: str | None = None
    """The loaded cuDNN's version (`torch.backends.cudnn.version()`, which asks the library
    itself, "9.1.0"); None on a CPU or where torch has none."""
    cublas: str | None = None
    """The loaded cuBLAS's version (`cublasGetProperty` of the loaded libcublas, "12.4.5");
    None on a CPU, or where no cuBLAS was loaded."""
    gpu_name: str | None = None
    """The GPU as NVML names it ("NVIDIA H100 80GB HBM3")."""
    gpu_uuid: str | None = None
    """NVML's UUID of the measured device (`GPU-...`, or `MIG-...` for a MIG instance)."""
    mig: str | None = None
    """"off", or the MIG instance's profile ("1g.10gb") where the device is one; None where
    the GPU has no MIG mode."""
    ecc: bool | None = None
    """Whether the GPU's ECC is on (its current mode); None where it has none."""
    power_limit_w: float | None = Field(default=None, ge=0)
    """The power limit the driver enforces, in watts."""
    sm_application_clock_mhz: int | None = Field(default=None, ge=0)
    """The SM clock the GPU's application clocks set."""
    memory_application_clock_mhz: int | None = Field(default=None, ge=0)
    """The memory clock the GPU's application clocks set."""
    cpu_model: str | None = None
    """The CPU's model name (/proc/cpuinfo)."""
    cpu_microcode: str | None = None
    """The CPU's microcode revision (/proc/cpuinfo `microcode`); None where it is not said
    (arm, most containers on other kernels)."""
    cpu_governor: str | None = None
    """cpufreq's scaling governor of CPU 0 ("performance"); None where /sys has none (most
    virtual machines)."""
    image_digest: str | None = None
    """The runner image's digest (`sha256:...`): a pod cannot read it, so the collector fills
    it from the pod's status (`containerStatuses[].imageID`) as it stores the result."""
    libraries: dict[str, str] = Field(default_factory=dict)
    """Versions of torch, torchao and each runtime module the process had loaded
    (`onnxruntime`, `tensorrt`...), read from the loaded module's `__version__`."""
    unavailable: str | None = None
    """Why the GPU fields are empty on a GPU (NVML could not be read)."""


STACK_FIELDS: Final = (
    "driver_version",
    "cuda_runtime",
    "cudnn",
    "cublas",
    "gpu_name",
    "mig",
    "ecc",
    "power_limit_w",
    "sm_application_clock_mhz",
    "memory_application_clock_mhz",
    "cpu_model",
    "libraries",
)
"""The fields that make a stack: two results that differ in any are not compared unless
asked (`--across-stacks`). Not the GPU's UUID or the image's digest (another GPU of the same
kind, or an image rebuilt with the same libraries, is the same stack), nor the microcode or
the governor (seldom readable in a pod: shown, not grouped by)."""


_DIGEST: Final = re.compile(r"(?:^|@)(sha256:[0-9a-f]{64})$")


def image_digest(image_id: object) -> str | None:
    """The digest in a container status's `imageID` (`registry/runner@sha256:...`, or
    `sha256:...` where the runtime names the image by its ID); None where it holds none."""
    if not isinstance(image_id, str) or len(image_id) > 1024:
        return None
    found = _DIGEST.search(image_id.strip())
    return found[1] if found else None


def with_image_digest(fingerprint: Fingerprint | None, digest: str | None) -> Fingerprint | None:
    """`fingerprint` with the image's digest its pod's status gave, where it has none."""
    if fingerprint is None or digest is None or fingerprint.image_digest is not None:
        return fingerprint
    return fingerprint.model_copy(update={"image_digest": digest})


def stack_differences(first: Fingerprint | None, second: Fingerprint | None) -> tuple[str, ...]:
    """Each stack field in which the two differ, in words ("driver_version 550.54.15 vs
    560.35.03"); nothing where either has no fingerprint (a result before it: an unknown
    stack, compared as before)."""
    if first is None or second is None:
        return ()
    words: list[str] = []
    for name in STACK_FIELDS:
        before, after = getattr(first, name), getattr(second, name)
        if name == "libraries":
            words.extend(_library_differences(before, after))
        elif before != after:
            words.append(f"{name} {_value(before)} vs {_value(after)}")
    return tuple(words)


def _library_differences(first: Mapping[str, str], second: Mapping[str, str]) -> list[str]:
    """The libraries both loaded, in different versions: one that only one side loaded is
    no other build (an eager variant runs before the pod loads onnxruntime for the next)."""
    return [
        f"libraries.{name} {first[name]} vs {second[name]}"
        for name in sorted(first.keys() & second.keys())
        if first[name] != second[name]
    ]


def _value(value: object) -> str:
    return "none" if value is None else str(value)
