"""Like with like: rows measured on different stacks (contract/fingerprint.py: the driver,
the CUDA and library builds loaded, MIG, power limit, CPU...) are compared only within their
stack, unless the reader asks for more (`--across-stacks`), and either way the report says
which field differs. A row without a fingerprint (a runner before it) is of an unknown stack:
compared as before, with whatever it would have been compared with."""

from collections.abc import Callable, Sequence
from typing import TypeVar

from contract.fingerprint import Fingerprint, stack_differences

Row = TypeVar("Row")


def split_by_stack(
    group: Sequence[Row],
    fingerprint_of: Callable[[Row], Fingerprint | None],
    label: Callable[[Sequence[Row]], str],
    *,
    across_stacks: bool,
) -> tuple[list[list[Row]], tuple[str, ...]]:
    """`group` in the parts a comparison may hold, and what was kept apart (or, with
    `across_stacks`, compared although it differs), in words naming the fields. A group of
    one known stack (rows of unknown stack beside it or not) stays whole; one of several is
    split by stack, the unknown rows a part of their own."""
    parts: list[list[Row]] = []
    unknown: list[Row] = []
    for row in group:
        fingerprint = fingerprint_of(row)
        if fingerprint is None:
            unknown.append(row)
            continue
        # The first part of the same stack: libraries one side never loaded do not count
        # (contract/fingerprint.py), so a stack is told by its first row.
        part = next(
            (p for p in parts if not stack_differences(fingerprint_of(p[0]), fingerprint)), None
        )
        if part is None:
            parts.append([row])
        else:
            part.append(row)
    if len(parts) < 2:
        return [list(group)], ()
    first = parts[0]
    reference = fingerprint_of(first[0])
    notes = tuple(
        f"{label(part)} ran on another stack than {label(first)} "
        f"({'; '.join(stack_differences(reference, fingerprint_of(part[0])))}): "
        + ("compared, as --across-stacks asks" if across_stacks else "not compared with it")
        for part in parts[1:]
    )
    if across_stacks:
        return [list(group)], notes
    return [*parts, unknown] if unknown else parts, notes
