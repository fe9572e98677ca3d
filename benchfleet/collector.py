"""`collector`: the collector's commands, handed synth's readers of the fleet's prices, of its
results stores, and of which workflows the specs schedule. They meet here so that the
collector never imports synth: following a cluster needs no spec machinery, the report
prices its results with the fleet file read as `make validate` reads it, gather reads whole
results where the fleet says each cluster's runners write them, and `check --scheduled`
knows a scheduled workflow that has no schedule file."""

from typing import Final

from benchfleet.prices import read_prices
from benchfleet.schedules import read_scheduled
from benchfleet.stores import read_stores
from collector.cli import collector_cli

cli: Final = collector_cli(read_prices, read_scheduled, read_stores)
