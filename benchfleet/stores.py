"""The fleet's results stores for the collector, read from specs/clusters.yaml of the checkout
through synth's loader (bounded, every problem located by line and field): where each
cluster's runners write their whole results, for `collector gather` to read them there. Here,
in the composition root, so that the collector never imports synth."""

from pathlib import Path

import click

from collector.lakeread import StoreAddress
from contract.lake import parse_lake_url
from contract.layout import FLEET_FILE
from synth.load import load_fleet
from synth.problems import SpecProblems


def read_stores(root: Path) -> dict[str, StoreAddress]:
    """Each cluster's results store (`results_store`, its own or the fleet's) of the fleet
    file under `root`, by cluster; empty where there is none, or no fleet file, and where the
    file is invalid, each problem said on stderr."""
    if not (root / FLEET_FILE).exists():
        return {}
    try:
        fleet = load_fleet(root)
    except SpecProblems as problems:
        click.echo(
            f"warning: {FLEET_FILE} cannot be read, so no results store is known from it:",
            err=True,
        )
        for problem in problems.problems:
            click.echo(str(problem), err=True)
        return {}
    stores = {}
    for cluster in fleet.clusters:
        store = fleet.results_store_of(cluster)
        if store is not None:
            stores[cluster.name] = StoreAddress(
                url=parse_lake_url(store.url),
                endpoint=store.endpoint,
                region=store.region,
                ca_bundle=root / store.ca_bundle if store.ca_bundle else None,
            )
    return stores
