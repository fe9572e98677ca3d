"""The fleet's prices, read from specs/clusters.yaml of the checkout for the report: through
synth's loader, so that the file is read as `make validate` reads it (bounded, every problem
located by line and field), and a file that breaks it prices nothing."""

from pathlib import Path

from contract.allocation import CAPACITIES
from contract.layout import FLEET_FILE
from contract.pricing import PriceList
from synth.load import load_fleet


def read_prices(root: Path) -> PriceList | None:
    """The price list of the fleet file under `root`; None where it has no `prices` (or
    there is no fleet file). Raises synth.problems.SpecProblems where the file is invalid."""
    if not (root / FLEET_FILE).exists():
        return None
    fleet = load_fleet(root)
    tables = {cluster.name: fleet.prices_in(cluster.name) for cluster in fleet.clusters}
    priced = {name: prices for name, prices in tables.items() if prices is not None}
    if not priced:
        return None
    # One currency for the fleet: its checks refuse two.
    currency = next(iter(priced.values())).currency
    return PriceList(
        currency=currency,
        per_hour={
            name: {
                device: {
                    capacity: value
                    for capacity in CAPACITIES
                    if (value := price.per_hour(capacity)) is not None
                }
                for device, price in prices.per_hour.items()
            }
            for name, prices in priced.items()
        },
    )
