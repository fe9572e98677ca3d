"""Repeats in a list that is used as a set: each one is a located error rather than a value
counted twice or quietly dropped."""

from collections.abc import Hashable, Iterable, Iterator


def repeats(items: Iterable[Hashable]) -> Iterator[tuple[int, int]]:
    """(index, index of its first occurrence) for every item equal to an earlier one."""
    first: dict[Hashable, int] = {}
    for index, item in enumerate(items):
        earlier = first.setdefault(item, index)
        if earlier != index:
            yield index, earlier
