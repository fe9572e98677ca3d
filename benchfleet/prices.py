"""The fleet's prices for the collector, read from specs/clusters.yaml of the checkout, or as a
git commit held it (the prices when an older Job ran, for the report): through synth's
loader, so that the file is read as `make validate` reads it (bounded, every problem located
by line and field), and a file that breaks it prices nothing. Here, in the composition root,
so that the collector never imports synth."""

import tempfile
from pathlib import Path

import click

from contract.allocation import CAPACITIES
from contract.layout import FLEET_FILE
from contract.pricing import CHECKOUT, PriceList, table_name
from store.history import HistoryError, file_at
from synth.fleet import Fleet
from synth.limits import MAX_FILE_BYTES
from synth.load import load_fleet
from synth.problems import SpecProblems


def read_prices(root: Path, version: str = CHECKOUT) -> PriceList | None:
    """The price list of the fleet file under `root`, or of the one commit `version` of it
    holds; None where it has no `prices` (or there is no fleet file), and where the file is
    invalid, each problem said on stderr."""
    if version == CHECKOUT:
        return _read(root, "the report prices nothing")
    try:
        data = file_at(root, version, FLEET_FILE, MAX_FILE_BYTES)
    except HistoryError as error:
        click.echo(f"warning: {error}: the runs it would price are not priced", err=True)
        return None
    if data is None:
        return None
    with tempfile.TemporaryDirectory(prefix="benchfleet-prices-") as scratch:
        (Path(scratch) / FLEET_FILE).parent.mkdir()
        (Path(scratch) / FLEET_FILE).write_bytes(data)
        return _read(Path(scratch), "the runs it would price are not priced", version)


def _read(root: Path, otherwise: str, version: str = CHECKOUT) -> PriceList | None:
    if not (root / FLEET_FILE).exists():
        return None
    try:
        fleet = load_fleet(root)
    except SpecProblems as problems:
        name = FLEET_FILE if version == CHECKOUT else table_name(version)
        click.echo(
            f"warning: {name} cannot be read, so {otherwise} (device-seconds only):", err=True
        )
        for problem in problems.problems:
            click.echo(str(problem), err=True)
        return None
    return _price_list(fleet)


def _price_list(fleet: Fleet) -> PriceList | None:
    """The prices `fleet` gives each cluster, in the plain shape the collector reads."""
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
