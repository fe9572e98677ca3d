"""Errors that carry a hint, and the did-you-mean search behind most hints."""

import math
from collections.abc import Callable, Iterable
from typing import Final, TypeVar

from pydantic import ValidationError
from pydantic_core import InitErrorDetails

from contract.text import non_ascii

Validated = TypeVar("Validated")


class SpecError(ValueError):
    """A validation failure with advice; pydantic collects it like any ValueError.

    The loader unwraps it from pydantic's error context so that the hint is printed on its own
    line instead of being folded into "Value error, ...".
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def with_problems(
    validate: Callable[[object], Validated],
    data: object,
    found: list[tuple[tuple[str | int, ...], SpecError]],
) -> Validated:
    """`validate(data)` (a wrap validator's handler), raising one ValidationError with its
    errors and the problems `found` (each at its location, relative to `data`) together:
    for checks that relate fields, which would otherwise wait until the fields themselves
    were right."""
    errors = [
        InitErrorDetails(type="value_error", loc=loc, input=data, ctx={"error": error})
        for loc, error in found
    ]
    try:
        validated = validate(data)
    except ValidationError as error:
        own = [
            InitErrorDetails(type=d["type"], loc=d["loc"], input=d["input"], ctx=d.get("ctx", {}))
            for d in error.errors()
        ]
        raise ValidationError.from_exception_data(error.title, [*own, *errors]) from None
    if errors:
        raise ValidationError.from_exception_data(type(validated).__name__, errors)
    return validated


_LOOKALIKES: Final = ("0oO", "1lIi", "5sS", "2zZ", "-_")
"""Characters a reader (or a font) takes for each other: a slip between them is half a typo."""
_SHORTEST_ABBREVIATION: Final = 3
_CASE_ONLY: Final = 0.25
_LOOKALIKE: Final = 0.5


def _substitution(a: str, b: str) -> float:
    if a == b:
        return 0
    if a.lower() == b.lower():
        return _CASE_ONLY
    if any(a in group and b in group for group in _LOOKALIKES):
        return _LOOKALIKE
    return 1


def distance(word: str, candidate: str, limit: float) -> float:
    """The edit distance from `word` to `candidate` (insertions, deletions, substitutions
    and swaps of neighbours), where a change of case or to a look-alike character costs less
    than a typo; anything above `limit` is reported as infinity, without computing it all."""
    if abs(len(word) - len(candidate)) > limit:
        return math.inf
    previous2: list[float] = []
    previous = [float(j) for j in range(len(candidate) + 1)]
    for i in range(1, len(word) + 1):
        current = [float(i)]
        for j in range(1, len(candidate) + 1):
            cost = min(
                previous[j] + 1,
                current[j - 1] + 1,
                previous[j - 1] + _substitution(word[i - 1], candidate[j - 1]),
            )
            if (
                i > 1
                and j > 1
                and word[i - 1] == candidate[j - 2]
                and word[i - 2] == candidate[j - 1]
            ):
                cost = min(cost, previous2[j - 2] + 1)
            current.append(cost)
        if min(current) > limit:
            return math.inf
        previous2, previous = previous, current
    return previous[-1] if previous[-1] <= limit else math.inf


def likely(word: str, candidates: Iterable[str]) -> list[str]:
    """The candidates most like `word` (several only when equally close), if any is close
    enough to be a likely typo: at most one edit in three characters of the candidate, a
    change of case alone, `word` cut short, or a prefixed name without its prefix."""
    costs: dict[str, float] = {}
    for candidate in candidates:
        limit = max(1.0, len(candidate) / 3, _CASE_ONLY * len(candidate))
        cost = distance(word, candidate, limit)
        if len(word) >= _SHORTEST_ABBREVIATION and candidate.startswith(word):
            cost = min(cost, 1.0)
        if candidate.rpartition("/")[2].lower() == word.lower() != candidate.lower():
            # A prefixed name written without its prefix (`gpu` for `nvidia.com/gpu`) says
            # what it means more surely than a one-letter typo of another name (`cpu`).
            cost = min(cost, _LOOKALIKE)
        if cost < math.inf:
            costs[candidate] = cost
    best = min(costs.values(), default=math.inf)
    return sorted(candidate for candidate, cost in costs.items() if cost == best)


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The one candidate most like `word`, if one stands out (see `likely`)."""
    found = likely(word, candidates)
    return found[0] if len(found) == 1 else None


def did_you_mean(word: str, candidates: Iterable[str], *, what: str = "one of") -> str:
    """A hint naming the likely intended candidate, or else listing them all."""
    ordered = sorted(candidates)
    found = likely(word, ordered)
    listing = ", ".join(repr(c) for c in ordered)
    if found:
        return f"did you mean {' or '.join(repr(c) for c in found)}? {what}: {listing}"
    return f"{what}: {listing}"


def unknown(kind: str, word: str, candidates: Iterable[str], *, where: str = "") -> SpecError:
    """The error for a name that is not one of `candidates`."""
    known = list(candidates)
    suffix = f" {where}" if where else ""
    return SpecError(
        f"unknown {kind} {word!r}{suffix}{lookalike_note(word)}",
        did_you_mean(word, known, what="known"),
    )


def lookalike_note(word: str) -> str:
    """What to add to the message about a name or key that is not known or not allowed,
    where the word holds a character outside ASCII, as no name or key of the spec language
    does: usually a letter of another script that looks Latin (Cyrillic U+0430, Greek U+03BF),
    which the message would otherwise show as the very word the reader meant."""
    found = non_ascii(word)
    return f"; it holds {found}, which is not ASCII" if found else ""
