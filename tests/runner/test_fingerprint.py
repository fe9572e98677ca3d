"""The stack fingerprint: the CPU's fields as this machine has them, the GPU's from a stand-in
NVML (pynvml's own constants and error class, answering as a driver would for a whole GPU,
a MIG instance, an old GPU without MIG or ECC), the libraries from the modules loaded."""

import sys
from pathlib import Path
from types import ModuleType

import pynvml
import pytest
import torch

from contract.fingerprint import Fingerprint
from runner.environment import cpu_model
from runner.fingerprint import (
    cublas,
    cuda_runtime,
    cudnn_words,
    gpu_fields,
    loaded_libraries,
    mapped_libraries,
    stack_fingerprint,
)

GPU = "GPU-6b1a0c3e-0000-4000-8000-000000000001"
MIG = "MIG-6b1a0c3e-0000-4000-8000-000000000001"


def stand_in_nvml(*, mig: bool = False, old: bool = False) -> ModuleType:
    """NVML for one H100: whole (MIG off), or with torch's device a 1g.10gb MIG instance of
    it; `old`: a GPU without MIG and ECC modes."""
    nvml = ModuleType("pynvml")
    for name in dir(pynvml):
        if name.startswith("NVML_") or name == "NVMLError":
            setattr(nvml, name, getattr(pynvml, name))
    gpu, instance = object(), object()
    handles = {MIG: instance} if mig else {GPU: gpu}

    def by_uuid(uuid: str) -> object:
        if uuid not in handles:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return handles[uuid]

    def unsupported(*arguments: object) -> object:
        raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)

    def whole_gpu_only(device: object) -> object:
        assert device is gpu, "the GPU's settings are its own, not its MIG instance's"
        return device

    clocks = {pynvml.NVML_CLOCK_SM: 1755, pynvml.NVML_CLOCK_MEM: 2619}
    vars(nvml).update(
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlSystemGetDriverVersion=lambda: "550.54.15",
        nvmlDeviceGetHandleByUUID=by_uuid,
        nvmlDeviceIsMigDeviceHandle=lambda device: device is instance,
        nvmlDeviceGetDeviceHandleFromMigDeviceHandle=lambda device: gpu,
        nvmlDeviceGetName=lambda device: (
            b"NVIDIA H100 80GB HBM3 MIG 1g.10gb" if device is instance else b"NVIDIA H100 80GB HBM3"
        ),
        nvmlDeviceGetUUID=lambda device: MIG if device is instance else GPU,
        nvmlDeviceGetMigMode=unsupported
        if old
        else lambda device: (
            [pynvml.NVML_DEVICE_MIG_ENABLE if mig else pynvml.NVML_DEVICE_MIG_DISABLE] * 2
        ),
        nvmlDeviceGetCurrentEccMode=unsupported
        if old
        else lambda device: whole_gpu_only(device) and pynvml.NVML_FEATURE_ENABLED,
        nvmlDeviceGetEnforcedPowerLimit=lambda device: whole_gpu_only(device) and 700_000,
        nvmlDeviceGetApplicationsClock=lambda device, clock: (
            whole_gpu_only(device) and clocks[clock]
        ),
    )
    return nvml


def test_a_whole_gpu_is_fingerprinted_through_nvml() -> None:
    fields = gpu_fields(GPU, stand_in_nvml)
    assert Fingerprint(**fields) == Fingerprint(
        driver_version="550.54.15",
        gpu_name="NVIDIA H100 80GB HBM3",
        gpu_uuid=GPU,
        mig="off",
        ecc=True,
        power_limit_w=700.0,
        sm_application_clock_mhz=1755,
        memory_application_clock_mhz=2619,
    )


def test_a_mig_instance_names_its_profile_and_its_gpu_settings() -> None:
    # torch names a MIG instance by its UUID alone; NVML by `MIG-` and that UUID.
    fields = gpu_fields(GPU, lambda: stand_in_nvml(mig=True))
    assert (fields["mig"], fields["gpu_uuid"], fields["gpu_name"]) == (
        "1g.10gb",
        MIG,
        "NVIDIA H100 80GB HBM3",
    )
    assert (fields["power_limit_w"], fields["ecc"]) == (700.0, True)


def test_a_gpu_without_mig_or_ecc_says_none_for_them() -> None:
    fields = gpu_fields(GPU, lambda: stand_in_nvml(old=True))
    assert (fields["mig"], fields["ecc"]) == (None, None)
    assert fields["driver_version"] == "550.54.15"


def test_without_nvml_the_fingerprint_says_why() -> None:
    def missing() -> ModuleType:
        raise ImportError("No module named 'pynvml'")

    assert gpu_fields(GPU, missing) == {
        "unavailable": "NVML cannot be loaded: No module named 'pynvml'"
    }
    assert gpu_fields("GPU-other", stand_in_nvml) == {"unavailable": "NVML has no GPU-other"}


def test_a_cpu_run_has_this_machines_cpu_fields_and_no_gpu_fields(tmp_path: Path) -> None:
    governor = tmp_path / "scaling_governor"
    governor.write_text("performance\n")
    found = stack_fingerprint(torch.device("cpu"), governor=governor)
    assert found.cpu_model == cpu_model() != ""
    assert found.cpu_governor == "performance"
    assert found.libraries["torch"] == str(torch.__version__)
    gpu_only = {
        name: value
        for name, value in found.model_dump().items()
        if name not in {"cpu_model", "cpu_microcode", "cpu_governor", "libraries"}
    }
    assert set(gpu_only.values()) == {None}
    assert stack_fingerprint(torch.device("cpu"), governor=tmp_path / "none").cpu_governor is None


def test_microcode_is_read_where_cpuinfo_says_it(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Some CPU\nmicrocode\t: 0x2b000571\n")
    found = stack_fingerprint(torch.device("cpu"), cpuinfo=cpuinfo)
    assert (found.cpu_model, found.cpu_microcode) == ("Some CPU", "0x2b000571")
    cpuinfo.write_text("processor\t: 0\nFeatures\t: fp asimd\n")
    assert stack_fingerprint(torch.device("cpu"), cpuinfo=cpuinfo).cpu_microcode is None


def test_library_versions_come_from_the_loaded_modules() -> None:
    runtime = ModuleType("onnxruntime")
    runtime.__version__ = "1.20.1"  # type: ignore[attr-defined]
    modules = {"torch": sys.modules["torch"], "onnxruntime": runtime, "numpy": runtime}
    assert loaded_libraries(modules) == {"torch": str(torch.__version__), "onnxruntime": "1.20.1"}


def test_cuda_libraries_are_asked_only_where_the_process_loaded_them(tmp_path: Path) -> None:
    absent = (str(tmp_path / "libcudart.so.12"), str(tmp_path / "libcublas.so.12"))
    assert (cuda_runtime(absent), cublas(absent)) == (None, None)
    loaded = mapped_libraries()
    if not any("/libcudart.so." in path for path in loaded):
        pytest.skip("this torch maps no CUDA runtime")
    # The build of torch here ships the runtime it was built against.
    assert cuda_runtime(loaded) == torch.version.cuda
    version = cublas(loaded)
    assert version is not None
    assert version.split(".")[0] == str(torch.version.cuda).split(".")[0]


@pytest.mark.parametrize(
    ("number", "words"), [(90100, "9.1.0"), (92000, "9.20.0"), (8907, "8.9.7")]
)
def test_cudnn_versions_in_both_numberings(number: int, words: str) -> None:
    assert cudnn_words(number) == words
