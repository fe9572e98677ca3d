"""The command-line options every benchfleet command shares, defined once: where the
repository is, where the collector's database is in it, --version, and the simulated clock
of the commands that read one."""

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TypeVar

import click

from contract.instant import EARLIEST, LATEST, instant
from contract.layout import STORE_DIR

_Decorated = TypeVar("_Decorated", bound=Callable[..., Any])

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


def now_option(what: str) -> Callable[[_Decorated], _Decorated]:
    """`--now`: do `what` as if it were this time (a simulated clock, for trials and tests)."""
    return click.option(
        "--now",
        help=f"{what} as if it were this time (ISO 8601, UTC where it names no zone) "
        "[default: the clock's time]",
    )


def moment_of(text: str | None) -> datetime:
    """`--now` as an instant; the clock's without it."""
    if text is None:
        return datetime.now(UTC)
    moment = instant(text)
    if moment is None:
        raise click.BadParameter(
            f"{text!r} is not a time like 2026-12-07T02:00:00Z, from {EARLIEST:%Y} to {LATEST:%Y}",
            param_hint="--now",
        )
    return moment
