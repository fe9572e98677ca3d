"""Keys written with nothing in them: `precision:` with no value, `exclude: []`, `{}`.

Such a key reads as null, or as an empty list or mapping, and validation would take it for
the default or for nothing at all: an exclude entry `{precision: }` excluded nothing, a
device's empty node labels selected every node. Nowhere in the spec language does an empty
value mean something that leaving the key out does not, so each one is a located error.
"""

from collections.abc import Iterator

from synth.yaml_source import Loc

NO_VALUE = "no value is given"
EMPTY_LIST = "the list is empty"
EMPTY_MAPPING = "the mapping is empty"

HINT = (
    "write a value, or remove the key where it is optional: an empty value would silently "
    "stand for the default, or for nothing"
)


def empty_entries(data: object, loc: Loc = ()) -> Iterator[tuple[Loc, str]]:
    """Where `data` holds a mapping entry whose value is null, an empty list or an empty
    mapping, with which of the three it is."""
    if isinstance(data, dict):
        for key, value in data.items():
            here = (*loc, key)
            if value is None:
                yield here, NO_VALUE
            elif isinstance(value, list | dict) and not value:
                yield here, EMPTY_LIST if isinstance(value, list) else EMPTY_MAPPING
            else:
                yield from empty_entries(value, here)
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield from empty_entries(item, (*loc, index))
