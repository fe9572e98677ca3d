"""`collector`: the collector's commands, handed synth's reader of the fleet's prices. They meet
here so that the collector never imports synth: following a cluster needs no spec machinery,
and the report prices its results with the fleet file read as `make validate` reads it."""

from typing import Final

from benchfleet.prices import read_prices
from collector.cli import collector_cli

cli: Final = collector_cli(read_prices)
