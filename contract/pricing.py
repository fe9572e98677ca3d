"""What a device-hour costs, as the fleet's price tables say (`prices` in specs/clusters.yaml,
read by benchfleet/prices.py): by cluster, device type and capacity. Plain data, so that a
report carries it and renders it without reading any spec. And the arithmetic of a price per
1,000 inferences, which gather's metrics and the report's cost tables both give."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from contract.allocation import Allocation, Capacity

INFERENCES: Final = 1000
"""Cost and device time are given per this many inferences (samples)."""


@dataclass(frozen=True)
class PriceList:
    """The prices of one device for one hour, in one currency."""

    currency: str
    per_hour: Mapping[str, Mapping[str, Mapping[Capacity, float]]]
    """By cluster, device type and capacity: the price of one GPU (one CPU for `cpu`)."""

    def price(self, cluster: str, allocation: Allocation) -> float | None:
        """The price per device-hour of what `allocation` held, where the table gives one."""
        if allocation.device_type is None or allocation.capacity is None:
            return None
        devices = self.per_hour.get(cluster, {})
        return devices.get(allocation.device_type, {}).get(allocation.capacity)

    def unpriced(self, cluster: str, allocation: Allocation) -> str:
        """Why `allocation` has no price, in words."""
        if allocation.device_type is None or allocation.capacity is None:
            return (
                "its Job does not say its device type and capacity (a synth before "
                "benchfleet.io/capacity): not priced"
            )
        if cluster not in self.per_hour:
            return f"specs/clusters.yaml prices nothing in cluster {cluster}"
        return (
            f"specs/clusters.yaml gives no {allocation.capacity} price for "
            f"{allocation.device_type} in {cluster}"
        )


def device_seconds_per_1000(devices: float, p50_per_sample_ms: float) -> float:
    """What 1,000 inferences hold at `p50_per_sample_ms` on `devices`: devices x seconds."""
    return devices * p50_per_sample_ms / 1000 * INFERENCES


def priced(device_seconds: float | None, per_hour: float | None) -> float | None:
    """`device_seconds` at `per_hour` a device-hour; None where either is unknown."""
    if device_seconds is None or per_hour is None:
        return None
    return device_seconds * per_hour / 3600
