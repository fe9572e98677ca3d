"""Numbers where text enters, held to what their readers can use: finite, and within the
bounds their field declares (`Field(ge=0)` and the like, with `allow_inf_nan=False` on the
model). What this module decides is what happens to a number outside them: in a field that
may be left out (its default is None) it is left out, with a note naming it; anywhere else
the object is refused, naming the field. Nothing is kept half-valid either way.

Only pydantic is imported: the runner, the collector, the store and the records share it.
"""

import copy
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Final, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

_BOUNDS: Final = frozenset(
    {"finite_number", "greater_than", "greater_than_equal", "less_than", "less_than_equal"}
)
"""pydantic's errors for a number that is no finite one, or outside its field's bounds."""
_NOT_FINITE: Final = "should be a finite number (pydantic writes one that is not as null)"

Location = tuple[str | int, ...]


def is_bad_number(detail: ErrorDetails) -> bool:
    """Whether the error is a number's: not finite, or out of bounds. A null where a float
    is required is one too: pydantic writes infinity and NaN as null, which is how results
    stored before numbers were checked hold them."""
    return detail["type"] in _BOUNDS or (detail["type"] == "float_type" and detail["input"] is None)


def number_words(detail: ErrorDetails, skip: int = 0) -> str:
    """`latency.p50_ms = inf: should be a finite number`: the field, what it held and why
    that is no value of it (the first `skip` parts of its location left out: a union's tag)."""
    at = ".".join(map(str, detail["loc"][skip:]))
    if detail["type"] == "float_type":
        return f"{at} = null: {_NOT_FINITE}"
    return f"{at} = {detail['input']!r}: {detail['msg'].removeprefix('Input ')}"


def _optional_depth(model: type[BaseModel], location: Location) -> int | None:
    """How many parts of `location` (inside `model`) lead to the innermost field on it that
    may be left out (its default is None); None where no field on the way may be."""
    found = None
    current: object = model
    for depth, step in enumerate(location, 1):
        current = _unwrapped(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(step) if isinstance(step, str) else None
            if field is None:
                return found
            if not field.is_required() and field.default is None:
                found = depth
            current = field.annotation
        elif get_origin(current) in (list, tuple):
            current = get_args(current)[0]
        elif get_origin(current) is dict:
            current = get_args(current)[1]
        else:
            return found
    return found


def _unwrapped(annotation: object) -> object:
    """`annotation` without Annotated's metadata and a union's None."""
    while True:
        origin = get_origin(annotation)
        if origin is Annotated:
            annotation = get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            members = [a for a in get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


Kind = Callable[[Location], tuple[type[BaseModel], int] | None]
"""The model a value's error location falls in, and how many leading parts of the location
name it (a discriminated union's tag); None where it names none."""


def without_bad_numbers(
    data: object, error: ValidationError, kind: Kind
) -> tuple[object, tuple[str, ...]] | None:
    """`data` (as JSON parses) without the fields `error` found holding a bad number, and a
    note naming each; None where the error is not only such numbers in fields that may be
    left out (the object is then refused as it stands)."""
    drops: list[Location] = []
    notes: list[str] = []
    for detail in error.errors():
        found = kind(detail["loc"]) if is_bad_number(detail) else None
        if found is None:
            return None
        model, skip = found
        inner = detail["loc"][skip:]
        depth = _optional_depth(model, inner)
        if depth is None:
            return None
        drops.append(inner[:depth])
        notes.append(number_words(detail, skip))
    changed = copy.deepcopy(data)
    # A field inside one already left out goes with it.
    kept = [d for d in drops if not any(o != d and d[: len(o)] == o for o in drops)]
    if not all(_drop(changed, location) for location in set(kept)):
        return None
    return changed, tuple(notes)


def _drop(data: object, location: Sequence[str | int]) -> bool:
    """Remove what `location` names from `data`; whether it was there."""
    *parents, last = location
    for step in parents:
        named = isinstance(data, Mapping) and isinstance(step, str) and step in data
        placed = isinstance(data, list) and isinstance(step, int) and 0 <= step < len(data)
        if not (named or placed):
            return False
        data = data[step]  # type: ignore[index]
    if isinstance(data, dict) and isinstance(last, str):
        data.pop(last, None)
        return True
    return False


def not_an_amount(value: Any) -> bool:
    """Whether `value` is a number that is not finite and above 0: what a measured amount
    (energy, power) cannot be. Anything not a number is left to the field's own type."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return not 0 < value < float("inf")
