"""The references a termination message gives to the lake objects its runner wrote: one
per variant (`stored`: key, sha256, bytes), beside the compacted result or its stub."""

import json
from dataclasses import dataclass
from typing import Final

from pydantic import ValidationError

from contract.lake import StoredObject

STORED_FIELD: Final = "stored"
"""The field of a termination message's entry that names the object its runner wrote."""


@dataclass(frozen=True)
class Reference:
    """A termination message's word for the object holding one variant's whole result."""

    index: int | None
    """The variant's index, as the entry names it."""
    id: str | None
    stored: StoredObject


def references(message: str | None) -> tuple[tuple[Reference, ...], str | None]:
    """The objects a termination message names (a result's or a group's), and what was wrong
    with any reference it holds, in words (None where nothing was)."""
    if not message or not message.lstrip().startswith(("{", "[")):
        return (), None
    try:
        data = json.loads(message)
    except ValueError:
        return (), None
    entries = data if isinstance(data, list) else [data]
    found: list[Reference] = []
    problems: list[str] = []
    for entry in entries:
        raw = entry.get(STORED_FIELD) if isinstance(entry, dict) else None
        if raw is None:
            continue
        index, variant_id = _claimed(entry)
        try:
            found.append(Reference(index, variant_id, StoredObject.model_validate(raw)))
        except ValidationError as error:
            at = f"variant index {index}" if index is not None else "an entry"
            problems.append(
                f"the termination message's reference to the lake object of {at} is not one "
                f"({error.error_count()} problems: {error.errors()[0]['msg']})"
            )
    return tuple(found), "; ".join(problems) or None


def _claimed(entry: dict[str, object]) -> tuple[int | None, str | None]:
    """The variant an entry names: a result's `variant`, a stub's own index and id."""
    variant = entry.get("variant")
    named = variant if isinstance(variant, dict) else entry
    index, variant_id = named.get("index"), named.get("id")
    return (
        index if isinstance(index, int) else None,
        variant_id if isinstance(variant_id, str) else None,
    )
