"""Errors that carry a hint, and the did-you-mean search behind most hints."""

import difflib
from collections.abc import Iterable


class SpecError(ValueError):
    """A validation failure with advice; pydantic collects it like any ValueError.

    The loader unwraps it from pydantic's error context so that the hint is printed on its own
    line instead of being folded into "Value error, ...".
    """

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate most like `word`, if any is close enough to be a likely typo."""
    matches = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def did_you_mean(word: str, candidates: Iterable[str], *, what: str = "one of") -> str:
    """A hint naming the likely intended candidate, or else listing them all."""
    ordered = sorted(candidates)
    match = closest(word, ordered)
    listing = ", ".join(repr(c) for c in ordered)
    if match is not None:
        return f"did you mean {match!r}? {what}: {listing}"
    return f"{what}: {listing}"


def unknown(kind: str, word: str, candidates: Iterable[str], *, where: str = "") -> SpecError:
    """The error for a name that is not one of `candidates`."""
    known = list(candidates)
    suffix = f" {where}" if where else ""
    return SpecError(f"unknown {kind} {word!r}{suffix}", did_you_mean(word, known, what="known"))
