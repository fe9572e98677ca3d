"""What a device-hour costs, as the fleet's price tables say (`prices` in specs/clusters.yaml,
read by benchfleet/prices.py): by cluster, device type and capacity. Plain data, so that a
report carries it and renders it without reading any spec. And the arithmetic of a price per
1,000 inferences, which gather's metrics and the report's cost tables both give."""

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from contract.allocation import Allocation, Capacity
from contract.layout import FLEET_FILE

INFERENCES: Final = 1000
"""Cost and device time are given per this many inferences (samples)."""


CHECKOUT: Final = "checkout"
"""The version of the fleet file the checkout holds, with whatever edits it has."""


def table_name(version: str) -> str:
    """A version of the fleet file, for a reader: "specs/clusters.yaml at 1a2b3c4d5e6f", or
    the file's name alone for the checkout's (as every message before versions meant it)."""
    return str(FLEET_FILE) if version == CHECKOUT else f"{FLEET_FILE} at {version[:12]}"


def device_seconds_per_1000(devices: float, p50_per_sample_ms: float) -> float:
    """What 1,000 inferences hold at `p50_per_sample_ms` on `devices`: devices x seconds."""
    return devices * p50_per_sample_ms / 1000 * INFERENCES


def hourly(devices: float, per_device_hour: float | None) -> float | None:
    """What holding `devices` for an hour costs at `per_device_hour`; None without a price."""
    return priced(devices * 3600, per_device_hour)


def priced(device_seconds: float | None, per_hour: float | None) -> float | None:
    """`device_seconds` at `per_hour` a device-hour; None where either is unknown."""
    if device_seconds is None or per_hour is None:
        return None
    return device_seconds * per_hour / 3600


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

    def unpriced(self, cluster: str, allocation: Allocation, table: str = CHECKOUT) -> str:
        """Why `allocation` has no price in this list, version `table` of the fleet file, in
        words."""
        if allocation.device_type is None or allocation.capacity is None:
            return (
                "its Job does not say its device type and capacity (a synth before "
                "benchfleet.io/capacity): not priced"
            )
        if cluster not in self.per_hour:
            return f"{table_name(table)} prices nothing in cluster {cluster}"
        return (
            f"{table_name(table)} gives no {allocation.capacity} price for "
            f"{allocation.device_type} in {cluster}"
        )


Version = tuple[str, PriceList | None]
"""A version of the fleet's prices: the commit that made it (or CHECKOUT), and its list
(None: that version prices nothing)."""


@dataclass(frozen=True)
class Pricing:
    """Which prices each Job's runs are priced at: those in force when it ran, the fleet file
    as the commit that added the Job's record held it (gather records a Job as it finishes);
    a Job git holds no record of yet (it ran last) at the checkout's."""

    checkout: PriceList | None = None
    """The fleet file's prices as the checkout holds it."""
    recorded: Mapping[str, Mapping[str, Version]] = field(default_factory=dict)
    """By cluster and Job: the version its record's commit held, where that is not the
    checkout's (the checkout's bytes, or no fleet file in either)."""

    def version(self, cluster: str, job: str) -> Version:
        """The prices of Job `job` of `cluster`."""
        return self.recorded.get(cluster, {}).get(job, (CHECKOUT, self.checkout))

    @property
    def currency(self) -> str | None:
        """What the report's costs are in: the checkout's currency; without prices there,
        the first (by name) of the older versions'. A version in another currency prices
        nothing (its costs would not add up with the others)."""
        if self.checkout is not None:
            return self.checkout.currency
        versions = (version for jobs in self.recorded.values() for version in jobs.values())
        return min((prices.currency for _, prices in versions if prices), default=None)
