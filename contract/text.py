"""Strings from untrusted input, made safe to print on a line of their own.

Spec files, model files and what pods report come from anyone who opens a pull request, and
what our commands print lands in CI logs, where a line starting `::error ...::` is a GitHub
Actions command, and in pull request comments. A name holding a line break could forge such
a line, an ANSI escape could repaint the terminal, and a right-to-left override could show a
reviewer other text than the bytes hold. So every printer of a user string shows it through
`shown`, and the loaders name such characters with `describe_character`.
"""

import unicodedata
from collections.abc import Callable
from typing import Final

_NAMED: Final = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def is_unsafe(character: str) -> bool:
    """Whether a character does not print as itself: controls (C0, DEL, C1), format
    characters (zero-width, byte order mark, direction overrides), line and paragraph
    separators, spaces other than U+0020, surrogates, private-use and unassigned code
    points; Python's `str.isprintable` says just that."""
    return not character.isprintable()


def _escaped(character: str) -> str:
    named = _NAMED.get(character)
    if named is not None:
        return named
    code = ord(character)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def shown(text: str) -> str:
    """`text` with every character that does not print as itself written as its escape
    (`\\n`, `\\x1b`, `\\u202e`), so that it prints on one line and as what it holds."""
    if text.isprintable():
        return text
    return "".join(_escaped(c) if is_unsafe(c) else c for c in text)


def describe_character(character: str) -> str:
    """`U+0430 CYRILLIC SMALL LETTER A`: a character by code point and Unicode name."""
    name = unicodedata.name(character, "") or _CONTROL_NAMES.get(character, "")
    return f"U+{ord(character):04X} {name}".rstrip()


_CONTROL_NAMES: Final = {
    "\t": "CHARACTER TABULATION",
    "\n": "LINE FEED",
    "\r": "CARRIAGE RETURN",
    "\x00": "NULL",
    "\x1b": "ESCAPE",
    "\x7f": "DELETE",
    "\x85": "NEXT LINE",
}
"""Unicode gives control characters no name in its database, only aliases."""


def unprintable(text: str) -> str | None:
    """The first character of `text` that does not print as itself, named with its
    position, e.g. `U+FEFF ZERO WIDTH NO-BREAK SPACE at character 1`; None when there is
    none."""
    if text.isprintable():
        return None
    return _first(text, is_unsafe)


def non_ascii(text: str) -> str | None:
    """The first character of `text` outside ASCII, named with its position, e.g. `U+0430
    CYRILLIC SMALL LETTER A at character 2`: in a name, a look-alike of a Latin letter."""
    if text.isascii():
        return None
    return _first(text, lambda character: not character.isascii())


def _first(text: str, found: Callable[[str], bool]) -> str | None:
    for index, character in enumerate(text):
        if found(character):
            return f"{describe_character(character)} at character {index + 1}"
    return None


def plural(count: int, noun: str) -> str:
    """`1 variant`, `0 variants`, `3 variant runs`: for messages whose count may be 1."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
