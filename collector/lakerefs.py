"""The references a termination message gives to the lake objects its runner wrote, one per
variant (result schema 12): a result's `stored` (key, sha256, bytes), a stub's `sha256` and
`bytes` (its key is `raw_key` of the pod's attempt, which a stub has no room for), and a
result's `store_error` where the runner could not write it."""

from dataclasses import dataclass

from collector.pods import ResultReading
from contract.result import OmittedResult


@dataclass(frozen=True)
class Reference:
    """A termination message's word for the object holding one variant's whole result."""

    index: int | None
    """The variant's index, as the entry names it."""
    id: str | None
    key: str | None
    """None for a stub's: where the pod's attempt writes the variant (`raw_key`)."""
    sha256: str
    bytes: int


@dataclass(frozen=True)
class References:
    """What a pod's termination message says its runner wrote to the lake."""

    found: tuple[Reference, ...]
    unwritten: dict[int | None, str]
    """Why the runner wrote no object, by variant index (its `store_error`)."""

    def __bool__(self) -> bool:
        return bool(self.found or self.unwritten)


def references(message: ResultReading) -> References:
    """The objects a pod's termination message (as read) names, and why any were not
    written."""
    found: list[Reference] = []
    unwritten: dict[int | None, str] = {}
    for entry in (*message.results, *message.omitted):
        if isinstance(entry, OmittedResult):
            if entry.sha256 is not None and entry.bytes is not None:
                found.append(Reference(entry.index, entry.id, None, entry.sha256, entry.bytes))
            continue
        index = entry.variant.index if entry.variant else None
        variant_id = entry.variant.id if entry.variant else None
        if entry.stored is not None:
            stored = entry.stored
            found.append(Reference(index, variant_id, stored.key, stored.sha256, stored.bytes))
        elif entry.store_error is not None:
            unwritten[index] = f"its runner could not write it there: {entry.store_error}"
    return References(tuple(found), unwritten)
