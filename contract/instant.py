"""Times where text enters, parsed once: `Instant`, the type of every time a record or a
store row holds, and `instant`, the one reading of a time in the API's raw objects (pods,
events, Jobs).

A time is held to the years a reader can count in: a period start of 9999-12-31 plus a day
overflows `datetime`, and one in year 1 prints as `1-01-01`, which is no ISO 8601.
"""

from datetime import UTC, datetime
from typing import Annotated, Final

from pydantic import AfterValidator, AwareDatetime, PlainSerializer

EARLIEST: Final = datetime(1970, 1, 1, tzinfo=UTC)
"""No run, record or schedule period comes before the Unix epoch that periods count from."""
LATEST: Final = datetime(9000, 1, 1, tzinfo=UTC)
"""Far enough ahead that any period, deadline or grace added to a time still fits in
`datetime` (which ends at 9999-12-31)."""


def bounded(moment: datetime) -> datetime:
    """`moment`, or ValueError where it falls outside EARLIEST..LATEST."""
    if not EARLIEST <= moment <= LATEST:
        raise ValueError(
            f"{moment.isoformat()} is outside {EARLIEST:%Y-%m-%d} to {LATEST:%Y-%m-%d}"
        )
    return moment


def instant_text(moment: datetime) -> str:
    """A time as its writers spell it, so that a record or row read and written again keeps
    its bytes: the API server's whole seconds in UTC as `2026-12-03T05:59:00Z`, a local
    run's milliseconds as `2026-12-03T05:59:00.123+00:00`."""
    if moment.microsecond == 0 and moment.utcoffset() == UTC.utcoffset(None):
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    micro = moment.microsecond
    spec = "auto" if micro % 1000 else "milliseconds" if micro else "seconds"
    return moment.isoformat(timespec=spec)


Instant = Annotated[
    AwareDatetime,
    AfterValidator(bounded),
    PlainSerializer(instant_text, return_type=str),
]
"""A time in a record or a store row: ISO 8601 with its zone, within EARLIEST..LATEST.
Anything else is refused where the text enters, naming the field."""


def instant(text: object) -> datetime | None:
    """One of the API's times, from a raw object: None where it is missing, not a time, or
    out of bounds; UTC where it names no zone (the API's always do, a hand-made object may
    not, and one naive time among aware ones cannot be compared with them)."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return moment if EARLIEST <= moment <= LATEST else None
