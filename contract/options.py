"""The command-line options every benchfleet command shares, defined once: where the
repository is, where the collector's database is in it, and --version."""

from pathlib import Path
from typing import Final

import click

from contract.layout import STORE_DIR

DEFAULT_DATABASE: Final = Path(STORE_DIR) / "results.sqlite"
"""The collector's database, relative to the repository root."""

root_option = click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=Path("."),
    help="The repository root: specs/, dist/, clusters/ and results/ are found under it.",
)

database_option = click.option(
    "--db",
    "database",
    type=click.Path(dir_okay=False, path_type=Path),
    default=DEFAULT_DATABASE,
    help="The SQLite results database (relative to --root); created when missing.",
)

version_option = click.version_option(
    package_name="benchfleet",
    message="benchfleet %(version)s",
    help="Print the installed benchfleet version and exit.",
)
"""`--version` on every command: the installed benchfleet distribution's version."""
