"""Times read off other machines' clocks, held against each other and against the reader's own.

A pod's times come from three clocks: the API server's (its creation), the scheduler's (its
binding) and its node's kubelet (its runner's start and end). A node whose clock runs ahead
reports a finish in the future; one that runs behind, a finish before its pod was bound. Such
a time is never taken as it stands: what it would decide (an allocation, the age of the last
result) is unknown or bounded by the reader's own clock, and the skew is said.
"""

from datetime import UTC, datetime, timedelta
from typing import Final

CLOCK_TOLERANCE: Final = timedelta(seconds=60)
"""How far two clocks may disagree before it is said: the API's times are whole seconds
(truncated), localrun's milliseconds, and a clock NTP keeps is within a second of the others;
a minute leaves room for all of that and for a slow write between reading and storing."""

_UNITS: Final = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))


def skew_text(skew: timedelta) -> str:
    """A skew for a reader, in its two largest units: `3 d 0 h`, `2 h 5 min`, `90 s`."""
    seconds = int(abs(skew).total_seconds())
    parts: list[str] = []
    for unit, size in _UNITS:
        if seconds >= size or (parts and len(parts) < 2):
            value, seconds = divmod(seconds, size)
            parts.append(f"{value} {unit}")
        if len(parts) == 2:
            break
    return " ".join(parts) or "0 s"


def ahead_by(moment: datetime, reference: datetime) -> timedelta | None:
    """How far `moment` lies after `reference`, where that is beyond CLOCK_TOLERANCE; None
    where the two agree."""
    skew = moment - reference
    return skew if skew > CLOCK_TOLERANCE else None


def stamp(moment: datetime) -> str:
    """A time in a note about clocks, to the second as the API writes it (UTC)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
