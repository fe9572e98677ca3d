"""The GPU sampler reads NVML during the timed loop. There is no GPU here, so NVML is a stand-in
module: pynvml's own constants and error class, and the functions the sampler calls, answering
as a driver would (a busy H100 hitting its power cap, or a GPU without power readings)."""

import time
from collections.abc import Callable
from types import ModuleType

import pynvml
import pytest

from runner.gpu_telemetry import GpuSampler

UUID = "GPU-6b1a0c3e-0000-4000-8000-000000000001"


def stand_in_nvml(reasons: int, power_mw: int | None = 350_000) -> ModuleType:
    nvml = ModuleType("pynvml")
    for name in dir(pynvml):
        if name.startswith(("NVML_", "nvmlClocksEventReason")) or name == "NVMLError":
            setattr(nvml, name, getattr(pynvml, name))
    handle = object()

    def by_uuid(uuid: str) -> object:
        if uuid != UUID:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return handle

    def power(device: object) -> int:
        if power_mw is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return power_mw

    clocks = iter(range(1980, 0, -15))
    vars(nvml).update(
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByUUID=by_uuid,
        nvmlDeviceGetMaxClockInfo=lambda device, clock: 1980,
        nvmlDeviceGetEnforcedPowerLimit=lambda device: 700_000,
        nvmlDeviceGetClockInfo=lambda device, clock: next(clocks),
        nvmlDeviceGetTemperature=lambda device, sensor: 61,
        nvmlDeviceGetPowerUsage=power,
        nvmlDeviceGetCurrentClocksEventReasons=lambda device: reasons,
    )
    return nvml


def test_readings_during_the_loop_become_the_telemetry() -> None:
    nvml = stand_in_nvml(pynvml.nvmlClocksEventReasonSwPowerCap | 0x1)
    with GpuSampler(UUID, interval_s=0.01, load_nvml=lambda: nvml) as sampler:
        time.sleep(0.1)
    telemetry = sampler.telemetry(device_s=0.08, wall_s=0.1)
    assert telemetry.readings >= 3
    assert telemetry.sm_clock_mhz_max == 1980
    assert telemetry.sm_clock_mhz_min is not None
    assert telemetry.sm_clock_mhz_min < 1980
    assert (telemetry.sm_clock_mhz_limit, telemetry.temperature_c_max) == (1980, 61)
    assert (telemetry.power_w_max, telemetry.power_limit_w) == (350.0, 700.0)
    # GPU idle (0x1) is in the mask too, but does not slow a kernel down.
    assert telemetry.throttle_reasons == ["sw_power_cap"]
    assert telemetry.unavailable is None


def test_a_reading_the_gpu_does_not_offer_is_left_out() -> None:
    nvml = stand_in_nvml(0, power_mw=None)
    with GpuSampler(UUID, interval_s=0.01, load_nvml=lambda: nvml) as sampler:
        time.sleep(0.03)
    telemetry = sampler.telemetry(device_s=0.02, wall_s=0.03)
    assert telemetry.power_w_max is None
    assert telemetry.throttle_reasons == []


def failing_import() -> ModuleType:
    raise ImportError("No module named 'pynvml'")


@pytest.mark.parametrize(
    ("uuid", "load", "why"),
    [
        (UUID, failing_import, "NVML cannot be loaded: No module named 'pynvml'"),
        ("GPU-other", lambda: stand_in_nvml(0), "NVML has no GPU-other"),
    ],
)
def test_without_nvml_the_telemetry_says_why(
    uuid: str, load: Callable[[], ModuleType], why: str
) -> None:
    with GpuSampler(uuid, load_nvml=load) as sampler:
        pass
    telemetry = sampler.telemetry(device_s=1, wall_s=1)
    assert telemetry.readings == 0
    assert telemetry.unavailable is not None
    assert telemetry.unavailable.startswith(why)
