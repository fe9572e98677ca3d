"""The GPU sampler reads NVML during the timed loop. There is no GPU here, so NVML is a stand-in
module: pynvml's own constants and error class, and the functions the sampler calls, answering
as a driver would (a busy H100 hitting its power cap, or a GPU without power readings, or
without an energy counter)."""

import time
from collections.abc import Callable, Iterator
from types import ModuleType

import pynvml
import pytest
import torch

from contract.result import ENERGY_ON_CPU, GpuTelemetry
from runner.gpu_telemetry import GpuSampler, energy, nvml_uuid

UUID = "GPU-6b1a0c3e-0000-4000-8000-000000000001"


ENERGY_MJ = (81_000_000, 81_420_000)
"""The energy counter (mJ since the driver loaded) as the loop starts and as it ends."""


def stand_in_nvml(
    reasons: int,
    power_mw: int | None = 350_000,
    energy_mj: Iterator[int] | int | None = None,
) -> ModuleType:
    """NVML answering for one GPU; its energy counter reads `energy_mj` in turn (ENERGY_MJ
    by default), or fails with that NVML error code where it is an int."""
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

    counter = iter(ENERGY_MJ) if energy_mj is None else energy_mj

    def total_energy(device: object) -> int:
        if isinstance(counter, int):
            raise pynvml.NVMLError(counter)
        return next(counter)

    clocks = iter(range(1980, 0, -15))
    vars(nvml).update(
        nvmlDeviceGetTotalEnergyConsumption=total_energy,
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


def test_the_energy_counter_is_read_as_the_loop_starts_and_as_it_ends() -> None:
    nvml = stand_in_nvml(0)
    with GpuSampler(UUID, interval_s=0.01, load_nvml=lambda: nvml) as sampler:
        pass
    telemetry = sampler.telemetry(device_s=0.5, wall_s=1.0)
    assert telemetry.energy_j == pytest.approx(420.0)
    assert telemetry.energy_s is not None and telemetry.energy_s >= 0
    assert telemetry.energy_unavailable is None


@pytest.mark.parametrize(
    ("counter", "why"),
    [
        (pynvml.NVML_ERROR_NOT_SUPPORTED, "this GPU has no total-energy counter"),
        (pynvml.NVML_ERROR_GPU_IS_LOST, "NVML's energy counter cannot be read: GPU is lost"),
        (iter((5_000, 1_200)), "the energy counter went back from 5000 to 1200 mJ"),
        # Issue #31: a counter that did not move gave 0 J, reported as a measurement.
        (iter((81_000_000, 81_000_000)), "the energy counter did not move in the loop's"),
    ],
)
def test_a_gpu_without_a_readable_energy_counter_says_why(
    counter: Iterator[int] | int, why: str
) -> None:
    nvml = stand_in_nvml(0, energy_mj=counter)
    with GpuSampler(UUID, interval_s=0.01, load_nvml=lambda: nvml) as sampler:
        pass
    telemetry = sampler.telemetry(device_s=0.5, wall_s=1.0)
    assert telemetry.energy_j is None
    assert telemetry.energy_unavailable is not None
    assert telemetry.energy_unavailable.startswith(why)
    # The other readings go on without it.
    assert telemetry.unavailable is None and telemetry.power_limit_w == 700.0


def test_a_variants_energy_is_its_share_of_the_loops_per_inference() -> None:
    telemetry = GpuTelemetry(
        readings=20, interval_s=0.1, device_s=1.8, wall_s=2.0, energy_j=300.0, energy_s=2.0
    )
    # An interleaved variant whose blocks took a quarter of the loop's time, 500 samples.
    found = energy(telemetry, 0.25, 500)
    assert (found.joules, found.joules_per_inference) == (75.0, 0.15)
    assert (found.average_w, found.share, found.unavailable) == (150.0, 0.25, None)


@pytest.mark.parametrize(
    ("telemetry", "why"),
    [
        (None, ENERGY_ON_CPU),
        (
            GpuTelemetry(
                readings=0, interval_s=0.1, device_s=1, wall_s=1, unavailable="NVML cannot load"
            ),
            "NVML cannot load",
        ),
        (
            GpuTelemetry(
                readings=3, interval_s=0.1, device_s=1, wall_s=1, energy_unavailable="no counter"
            ),
            "no counter",
        ),
    ],
)
def test_without_an_energy_reading_the_result_says_why(
    telemetry: GpuTelemetry | None, why: str
) -> None:
    found = energy(telemetry, 1, 100)
    assert (found.joules, found.joules_per_inference, found.average_w) == (None, None, None)
    assert found.unavailable == why


@pytest.mark.gpu
def test_a_real_gpu_reports_the_energy_of_a_loop_or_why_not() -> None:
    """On the GPU itself: a second of matmuls uses energy the counter sees, at a power
    between idle and the board's limit; or the GPU says it has no counter."""
    device = torch.device("cuda", 0)
    a = torch.randn(4096, 4096, device=device)
    with GpuSampler(nvml_uuid(device)) as sampler:
        began = time.perf_counter()
        while time.perf_counter() - began < 1.0:
            a = (a @ a).clamp_(-1, 1)
        torch.cuda.synchronize(device)
    telemetry = sampler.telemetry(device_s=1.0, wall_s=1.0)
    if telemetry.energy_j is None:
        assert telemetry.energy_unavailable is not None
        assert "NVML_ERROR_NOT_SUPPORTED" in telemetry.energy_unavailable
        return
    assert telemetry.energy_s is not None and telemetry.energy_s >= 1.0
    watts = telemetry.energy_j / telemetry.energy_s
    assert telemetry.power_limit_w is not None
    assert 10 < watts <= telemetry.power_limit_w * 1.1
