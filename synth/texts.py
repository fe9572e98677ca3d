"""Free text that reaches a manifest or a result: a description, an owner, a region.

Each has a documented length (synth/limits.py): text is copied into annotations, ConfigMaps
and reports, and Kubernetes caps an object's annotations at 256 KiB in all. One-line texts
hold only printable characters, so a line break cannot end up inside a name-like value.
"""

from dataclasses import dataclass
from typing import Final

from synth.fields import StringRule, line_break_hint, schema_pattern
from synth.hints import SpecError
from synth.problems import quoted

_LINE_PATTERN: Final = r"\S(?:[^\t\n\r]*\S)?"
"""For editors: one line, no spaces around it (validation checks every character)."""


@dataclass(frozen=True)
class Text(StringRule):
    """A non-blank text of at most `max_length` characters, named `kind`; `one_line` also
    refuses line breaks, tabs, other unprintable characters and spaces around it."""

    kind: str
    max_length: int
    one_line: bool = False

    def check(self, value: str) -> str:
        if not value.strip():
            raise ValueError(f"the {self.kind} is blank; write one")
        if len(value) > self.max_length:
            raise SpecError(
                f"the {self.kind} is {len(value):,} characters; at most {self.max_length:,} "
                "are allowed",
                "docs/specs.md lists the limits and why each is what it is",
            )
        allowed = "" if self.one_line else "\n\t"
        bad = next((c for c in value if not (c.isprintable() or c in allowed)), None)
        if bad is not None:
            where = "one line of printable characters" if self.one_line else "printable text"
            raise SpecError(
                f"the {self.kind} {quoted(value)} holds {bad!r}; it must be {where}",
                line_break_hint(value),
            )
        if self.one_line and value != value.strip():
            raise ValueError(f"the {self.kind} {value!r} has spaces around it; write it alone")
        return value

    def schema_keywords(self) -> dict[str, object]:
        keywords: dict[str, object] = {"minLength": 1, "maxLength": self.max_length}
        if self.one_line:
            keywords["pattern"] = schema_pattern(_LINE_PATTERN)
        return keywords
