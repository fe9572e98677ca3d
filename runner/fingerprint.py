"""The stack a result is measured on (contract/fingerprint.py), as this process has it loaded:
the GPU through NVML, the CUDA libraries by asking the copies the process mapped, the CPU from
/proc and /sys, the libraries from their loaded modules. A field that cannot be read is None;
nothing here fails a run."""

import ctypes
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import torch

from contract.bounded import read_at_most
from contract.fingerprint import Fingerprint
from runner.environment import CPUINFO, cpu_model
from runner.gpu_telemetry import load_nvml, nvml_uuid

LIBRARIES: Final = ("torch", "torchao", "onnxruntime", "tensorrt", "torch_tensorrt", "triton")
"""The modules whose versions a result names where the process loaded them: torch, its
quantizer and the runtimes a variant may run through."""
MAPS: Final = Path("/proc/self/maps")
GOVERNOR: Final = Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
_READ_LIMIT: Final = 4 << 20
"""More than /proc/cpuinfo of a few hundred CPUs, or the maps of a process with torch's
hundreds of libraries, hold: a bound, not a size."""


def stack_fingerprint(
    device: torch.device,
    load: Callable[[], ModuleType] = load_nvml,
    cpuinfo: Path = CPUINFO,
    governor: Path = GOVERNOR,
    maps: Path = MAPS,
) -> Fingerprint:
    """The stack `device` is measured on; the GPU's and CUDA's fields only on a GPU."""
    cpu = {
        "cpu_model": cpu_model(cpuinfo),
        "cpu_microcode": _cpuinfo_field(cpuinfo, "microcode"),
        "cpu_governor": _first_line(governor),
        "libraries": loaded_libraries(sys.modules),
    }
    if device.type != "cuda":
        return Fingerprint(**cpu)
    loaded = mapped_libraries(maps)
    return Fingerprint(
        **cpu,
        cuda_runtime=cuda_runtime(loaded),
        cudnn=_cudnn(),
        cublas=cublas(loaded),
        **gpu_fields(nvml_uuid(device), load),
    )


def failure_fingerprint(
    device_type: str, load: Callable[[], ModuleType] = load_nvml
) -> Fingerprint:
    """The stack a failed variant ran on, where the failure may be the GPU's own: the GPU's
    fields where torch sees one, else the CPU's with why not (`unavailable`)."""
    if device_type == "cpu":
        return stack_fingerprint(torch.device("cpu"))
    try:
        if torch.cuda.is_available():
            return stack_fingerprint(torch.device("cuda", 0), load)
        why = "torch sees no GPU"
    except Exception as error:  # a CUDA that fails to initialise: the failure being reported
        why = f"the GPU cannot be read: {type(error).__name__}: {error}"
    found = stack_fingerprint(torch.device("cpu"))
    return found.model_copy(update={"unavailable": why})


def loaded_libraries(modules: dict[str, ModuleType]) -> dict[str, str]:
    """The version of each of LIBRARIES the process loaded, from the module itself."""
    versions = {}
    for name in LIBRARIES:
        version = getattr(modules.get(name), "__version__", None)
        if version is not None:
            versions[name] = str(version)
    return versions


def _read(path: Path) -> str | None:
    try:
        with path.open("rb") as file:
            return read_at_most(file, _READ_LIMIT).decode("utf-8", errors="replace")
    except OSError:
        return None


def _first_line(path: Path) -> str | None:
    text = _read(path)
    line = text.strip().splitlines()[0].strip() if text and text.strip() else ""
    return line or None


def _cpuinfo_field(cpuinfo: Path, field: str) -> str | None:
    """The first processor's `field`, or None where /proc/cpuinfo does not say it."""
    for line in (_read(cpuinfo) or "").splitlines():
        key, _, value = line.partition(":")
        if key.strip() == field:
            return value.strip() or None
    return None


def mapped_libraries(maps: Path = MAPS) -> tuple[str, ...]:
    """The paths of the shared libraries this process has mapped."""
    return tuple(
        sorted({line.split()[-1] for line in (_read(maps) or "").splitlines() if ".so" in line})
    )


def _library(paths: Iterable[str], stem: str) -> Any:
    """The loaded library named `stem` (`libcudart.so`), never loading one: what the
    process calls, not whatever a search path would find. None where none is loaded."""
    for path in paths:
        if os.path.basename(path).startswith(stem + "."):
            try:
                return ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            except OSError:
                return None
    return None


def cuda_runtime(paths: Iterable[str]) -> str | None:
    """The loaded CUDA runtime's version, "12.4"; None where none is loaded (a torch that
    links it statically says only its build, which is not this)."""
    library = _library(paths, "libcudart.so")
    version = ctypes.c_int()
    if library is None or library.cudaRuntimeGetVersion(ctypes.byref(version)) != 0:
        return None
    return f"{version.value // 1000}.{version.value % 1000 // 10}"


def cublas(paths: Iterable[str]) -> str | None:
    """The loaded cuBLAS's version, "12.4.5"; None where none is loaded."""
    library = _library(paths, "libcublas.so")
    if library is None:
        return None
    parts = []
    for property_type in range(3):  # MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
        value = ctypes.c_int()
        if library.cublasGetProperty(property_type, ctypes.byref(value)) != 0:
            return None
        parts.append(str(value.value))
    return ".".join(parts)


def _cudnn() -> str | None:
    cudnn = torch.backends.cudnn
    # Asks the loaded library (cudnnGetVersion), unlike torch's compile-time constant.
    version = cudnn.version() if cudnn.is_available() else None  # type: ignore[no-untyped-call]
    return None if version is None else cudnn_words(version)


def cudnn_words(version: int) -> str:
    """cuDNN's version number in words: 9 counts major * 10000 + minor * 100 + patch, 8 and
    before major * 1000 + minor * 100 + patch."""
    major, rest = divmod(version, 10000 if version >= 90000 else 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def gpu_fields(uuid: str, load: Callable[[], ModuleType] = load_nvml) -> dict[str, Any]:
    """The GPU's fields from NVML for the device torch knows by `uuid` (`GPU-...`; NVML
    names a MIG instance `MIG-...`), or why there are none (`unavailable`)."""
    try:
        nvml = load()
        nvml.nvmlInit()
    except Exception as error:  # ImportError, or NVMLError when the driver is missing
        return {"unavailable": f"NVML cannot be loaded: {error}"}
    try:
        return _gpu_fields(nvml, uuid)
    finally:
        nvml.nvmlShutdown()


def _gpu_fields(nvml: Any, uuid: str) -> dict[str, Any]:
    instance = None
    for named in (uuid, "MIG-" + uuid.removeprefix("GPU-")):
        try:
            instance = nvml.nvmlDeviceGetHandleByUUID(named)
            break
        except nvml.NVMLError:
            continue
    if instance is None:
        return {"unavailable": f"NVML has no {uuid}"}

    def query(function: str, *arguments: Any) -> Any:
        try:
            return getattr(nvml, function)(*arguments)
        except nvml.NVMLError:
            return None

    is_mig = bool(query("nvmlDeviceIsMigDeviceHandle", instance))
    gpu = query("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", instance) if is_mig else instance
    gpu = gpu if gpu is not None else instance
    name = _text(query("nvmlDeviceGetName", instance))
    ecc = query("nvmlDeviceGetCurrentEccMode", gpu)
    power_mw = query("nvmlDeviceGetEnforcedPowerLimit", gpu)
    return {
        "driver_version": _text(query("nvmlSystemGetDriverVersion")),
        "gpu_name": _text(query("nvmlDeviceGetName", gpu)),
        "gpu_uuid": _text(query("nvmlDeviceGetUUID", instance)),
        "mig": _mig(nvml, is_mig, name, query("nvmlDeviceGetMigMode", gpu)),
        "ecc": None if ecc is None else bool(ecc == nvml.NVML_FEATURE_ENABLED),
        "power_limit_w": None if power_mw is None else power_mw / 1000,
        "sm_application_clock_mhz": query(
            "nvmlDeviceGetApplicationsClock", gpu, nvml.NVML_CLOCK_SM
        ),
        "memory_application_clock_mhz": query(
            "nvmlDeviceGetApplicationsClock", gpu, nvml.NVML_CLOCK_MEM
        ),
    }


def _mig(nvml: Any, is_mig: bool, name: str | None, modes: Any) -> str | None:
    """The MIG instance's profile (NVML names one "NVIDIA A100-SXM4-40GB MIG 1g.5gb"), "off"
    for a whole GPU, None where the GPU has no MIG mode."""
    if is_mig:
        return name.rpartition(" MIG ")[2] if name else "on"
    if modes is None:
        return None
    return "on" if modes[0] == nvml.NVML_DEVICE_MIG_ENABLE else "off"


def _text(value: object) -> str | None:
    """NVML's strings: bytes in older bindings, str in newer."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return None if value is None else str(value)
