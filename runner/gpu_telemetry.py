"""The GPU's clocks, temperature, power and clock-event (throttle) reasons during the timed loop,
read through NVML (nvidia-ml-py) by a background thread: what says whether a GPU ran at its
speed. The thread sleeps between readings and each reading is a few driver calls, so it takes
nothing measurable from a loop that waits on the GPU. Where NVML cannot be read the telemetry
says why and the run goes on.

Energy is not summed from the power readings (a 10 Hz sample of a number the driver itself
averages misses short bursts): NVML's total-energy counter (millijoules since the driver
loaded, Volta and newer) is read as the loop starts and as it ends, and the difference is
what the whole board used in between, whatever else ran on it."""

import threading
import time
from collections.abc import Callable
from types import ModuleType, TracebackType
from typing import Any, Final, Self

import torch

from contract.result import ENERGY_ON_CPU, Energy, GpuTelemetry

INTERVAL_S: Final = 0.1
_SLOWDOWNS: Final = {
    "sw_power_cap": "nvmlClocksEventReasonSwPowerCap",
    "hw_slowdown": "nvmlClocksEventReasonHwSlowdown",
    "sw_thermal_slowdown": "nvmlClocksEventReasonSwThermalSlowdown",
    "hw_thermal_slowdown": "nvmlClocksEventReasonHwThermalSlowdown",
    "hw_power_brake_slowdown": "nvmlClocksEventReasonHwPowerBrakeSlowdown",
}
"""The reasons that lower a busy GPU's clocks. Idle, application-clock, sync-boost and display
settings also show up in the mask but do not slow a measured kernel down."""


def load_nvml() -> ModuleType:
    import pynvml  # noqa: PLC0415 - only GPU runs need the driver's library

    module: ModuleType = pynvml
    return module


def nvml_uuid(device: torch.device) -> str:
    """How NVML names the CUDA device torch calls `device`."""
    return f"GPU-{torch.cuda.get_device_properties(device).uuid}"


class GpuSampler:
    """Samples the GPU NVML knows as `uuid` from entering to leaving the context."""

    def __init__(
        self,
        uuid: str,
        interval_s: float = INTERVAL_S,
        load_nvml: Callable[[], ModuleType] = load_nvml,
    ) -> None:
        self._uuid = uuid
        self._interval_s = interval_s
        self._load_nvml = load_nvml
        self._nvml: Any = None
        self._handle: object = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._readings: list[dict[str, int | None]] = []
        self._limits: dict[str, int | None] = {}
        self._unavailable: str | None = None
        self._energy: list[tuple[int, float]] = []
        """The energy counter (mJ) and the clock (s) when it was read: at the start, at the end."""
        self._energy_unavailable: str | None = None

    def __enter__(self) -> Self:
        try:
            nvml = self._load_nvml()
            nvml.nvmlInit()
        except Exception as error:  # ImportError, or NVMLError when the driver is missing
            self._unavailable = f"NVML cannot be loaded: {error}"
            return self
        self._nvml = nvml
        try:
            self._handle = nvml.nvmlDeviceGetHandleByUUID(self._uuid)
        except nvml.NVMLError as error:
            self._unavailable = f"NVML has no {self._uuid}: {error}"
            nvml.nvmlShutdown()
            self._nvml = None
            return self
        self._limits = {
            "sm_clock_mhz_limit": self._query("nvmlDeviceGetMaxClockInfo", nvml.NVML_CLOCK_SM),
            "power_limit_mw": self._query("nvmlDeviceGetEnforcedPowerLimit"),
        }
        self._thread = threading.Thread(target=self._sample, name="gpu-telemetry", daemon=True)
        self._thread.start()
        self._read_energy()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._nvml is not None:
            # First, as close to the loop's end as the start's reading was to its start.
            self._read_energy()
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._nvml is not None:
            self._nvml.nvmlShutdown()

    def _read_energy(self) -> None:
        """Read the energy counter, once it has not failed: where it fails, say why."""
        if self._energy_unavailable is not None:
            return
        try:
            millijoules = int(self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle))
        except self._nvml.NVMLError as error:
            self._energy_unavailable = _energy_failure(self._nvml, error)
            return
        self._energy.append((millijoules, time.perf_counter()))

    def telemetry(self, device_s: float, wall_s: float) -> GpuTelemetry:
        """What the readings saw, beside the loop's device and wall time."""
        readings = self._readings
        clocks = [r["sm_clock_mhz"] for r in readings if r["sm_clock_mhz"] is not None]
        temperatures = [r["temperature_c"] for r in readings if r["temperature_c"] is not None]
        powers = [r["power_mw"] for r in readings if r["power_mw"] is not None]
        masks = [r["reasons"] for r in readings if r["reasons"] is not None]
        power_limit = self._limits.get("power_limit_mw")
        return GpuTelemetry(
            readings=len(readings),
            interval_s=self._interval_s,
            device_s=device_s,
            wall_s=wall_s,
            sm_clock_mhz_min=min(clocks, default=None),
            sm_clock_mhz_max=max(clocks, default=None),
            sm_clock_mhz_limit=self._limits.get("sm_clock_mhz_limit"),
            temperature_c_max=max(temperatures, default=None),
            power_w_max=max(powers) / 1000 if powers else None,
            power_limit_w=power_limit / 1000 if power_limit is not None else None,
            throttle_reasons=self._slowdowns(masks),
            unavailable=self._unavailable,
            **self._energy_used(),
        )

    def _energy_used(self) -> dict[str, float | str | None]:
        """The energy counter's difference and the time between its readings, or why not."""
        if self._nvml is None:
            return {}
        if self._energy_unavailable is not None or len(self._energy) != 2:
            return {"energy_unavailable": self._energy_unavailable or "NVML was not read"}
        (start, began), (end, ended) = self._energy
        if end < start:
            # The counter restarts with the driver: the loop's energy is then unknown.
            return {
                "energy_unavailable": f"the energy counter went back from {start} to {end} mJ "
                "during the loop (the driver was reloaded)"
            }
        if end == start:
            # The driver updates the counter in steps: a loop shorter than one saw none, which
            # says nothing of what it used (0 J would read as a measurement).
            return {
                "energy_unavailable": f"the energy counter did not move in the loop's "
                f"{ended - began:.3g} s (it stayed at {end} mJ), so the loop's energy is unknown"
            }
        return {"energy_j": (end - start) / 1000, "energy_s": ended - began}

    def _slowdowns(self, masks: list[int]) -> list[str]:
        if self._nvml is None:
            return []
        seen = 0
        for mask in masks:
            seen |= mask
        return [name for name, bit in _SLOWDOWNS.items() if seen & getattr(self._nvml, bit)]

    def _sample(self) -> None:
        nvml = self._nvml
        while True:
            self._readings.append(
                {
                    "sm_clock_mhz": self._query("nvmlDeviceGetClockInfo", nvml.NVML_CLOCK_SM),
                    "temperature_c": self._query(
                        "nvmlDeviceGetTemperature", nvml.NVML_TEMPERATURE_GPU
                    ),
                    "power_mw": self._query("nvmlDeviceGetPowerUsage"),
                    "reasons": self._query("nvmlDeviceGetCurrentClocksEventReasons"),
                }
            )
            if self._stop.wait(self._interval_s):
                return

    def _query(self, function: str, *arguments: int) -> int | None:
        """One NVML reading; None where this GPU or driver does not offer it."""
        try:
            return int(getattr(self._nvml, function)(self._handle, *arguments))
        except self._nvml.NVMLError:
            return None


def _energy_failure(nvml: Any, error: Exception) -> str:
    if getattr(error, "value", None) == nvml.NVML_ERROR_NOT_SUPPORTED:
        return (
            "this GPU has no total-energy counter (NVML_ERROR_NOT_SUPPORTED: NVML keeps one on "
            "Volta and newer GPUs, not on a MIG instance)"
        )
    return f"NVML's energy counter cannot be read: {error}"


def energy(telemetry: GpuTelemetry | None, share: float, inferences: int) -> Energy:
    """A variant's energy: its `share` of the loop's (1, or its part of an interleaved loop's
    time), per each of the `inferences` (samples) its timed iterations computed, and the
    loop's average power; or why there is none."""
    if telemetry is None:
        return Energy(unavailable=ENERGY_ON_CPU)
    if telemetry.energy_j is None or not telemetry.energy_s:
        why = telemetry.energy_unavailable or telemetry.unavailable or "NVML was not read"
        return Energy(share=share, unavailable=why)
    joules = telemetry.energy_j * share
    return Energy(
        joules=joules,
        joules_per_inference=joules / inferences,
        average_w=telemetry.energy_j / telemetry.energy_s,
        share=share,
    )
