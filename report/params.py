"""A family's members compared along each of their params (`models[].family`, `params`):
each value of one param against the family's smallest, every other param and setting held
fixed, and the inputs too. Only within one family: two families' params name other knobs."""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from contract.params import ParamValue, param_order
from contract.variant import SETTING_FIELDS
from report.model import AxisEntry, VariantRow, axis_entry


@dataclass(frozen=True)
class ParamComparison:
    """One param of one family: each member against the one at the param's smallest value,
    other params and settings (but the model, which the param tells apart) the same."""

    family: str
    param: str
    entries: tuple[AxisEntry, ...]
    """Grouped by what is held fixed, in key order."""


_HELD_SETTINGS = tuple(name for name in SETTING_FIELDS if name != "model")


def _value(row: VariantRow, param: str) -> ParamValue:
    return dict(row.params)[param]


def param_comparisons(rows: Sequence[VariantRow]) -> tuple[ParamComparison, ...]:
    """Per family and param with several values among `rows`, the comparison along it."""
    members: dict[str, list[VariantRow]] = defaultdict(list)
    for row in rows:
        if row.family is not None and row.params:
            members[row.family].append(row)
    found = []
    for family in sorted(members):
        names = sorted({name for row in members[family] for name, _ in row.params})
        for param in names:
            entries = _along(param, members[family])
            if entries:
                found.append(ParamComparison(family, param, tuple(entries)))
    return tuple(found)


def _along(param: str, rows: Sequence[VariantRow]) -> list[AxisEntry]:
    groups: dict[tuple[object, ...], list[VariantRow]] = defaultdict(list)
    for row in rows:
        if param not in dict(row.params):
            continue
        held = (
            row.key.cluster,
            row.key.target,
            *(row.key.value(name) for name in _HELD_SETTINGS),
            tuple(item for item in row.params if item[0] != param),
            row.inputs,
            row.recorded_inputs,
        )
        groups[held].append(row)
    entries: list[AxisEntry] = []
    for group in sorted(groups.values(), key=lambda group: min(row.key for row in group)):
        if len({_value(row, param) for row in group}) < 2:
            continue
        ordered = sorted(group, key=lambda row: (param_order(_value(row, param)), row.key))
        reference = ordered[0]
        entries.extend(axis_entry(row, reference) for row in ordered[1:])
    return entries
