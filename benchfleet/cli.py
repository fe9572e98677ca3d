"""`benchfleet`: synth's commands and the exporter's `export` in one group. They meet here so
that neither package imports the other: synth reads pull requests and never reaches the code
that runs a team's model; the exporter checks its entry against synth's spec fields."""

from typing import Final

import click

from exporter.cli import export
from synth.cli import cli as synth

cli: Final = click.Group(
    "benchfleet",
    commands=[*synth.commands.values(), export],
    callback=synth.callback,
    params=synth.params,
    help=synth.help,
    context_settings=synth.context_settings,
)
