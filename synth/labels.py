"""Kubernetes label keys and values, as the fleet file writes them into node selectors and
tolerations: the API server refuses a pod whose selector or toleration breaks these rules,
and a Job's pods would never be created (k8s.io/apimachinery's IsQualifiedName and
IsValidLabelValue)."""

import re
from dataclasses import dataclass
from typing import Final

from synth.fields import StringRule, line_break_hint, schema_pattern
from synth.hints import SpecError

MAX_NAME: Final = 63
"""A label value, and a label key's name after the prefix."""
MAX_PREFIX: Final = 253
"""A label key's optional prefix: a DNS subdomain."""

_NAME: Final = r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_PREFIX: Final = r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*"
_KEY: Final = re.compile(rf"(?:{_PREFIX}/)?{_NAME}")
_VALUE: Final = re.compile(rf"(?:{_NAME})?")


def _spaces_hint(value: str) -> str | None:
    if " " in value.strip():
        return f"labels hold no spaces; write e.g. {value.replace(' ', '-')!r}"
    return line_break_hint(value)


@dataclass(frozen=True)
class LabelKey(StringRule):
    """A label key (a toleration's key too): an optional DNS subdomain and '/', then a name."""

    kind: str

    def check(self, value: str) -> str:
        prefix, _, name = value.rpartition("/")
        # Lengths first: the pattern then only ever reads a few hundred characters.
        if len(name) > MAX_NAME or len(prefix) > MAX_PREFIX or not _KEY.fullmatch(value):
            raise SpecError(
                f"{self.kind} {value!r} is not a Kubernetes label key: an optional DNS "
                f"subdomain and '/' (at most {MAX_PREFIX} characters), then at most {MAX_NAME} "
                "letters, digits, '-', '_' or '.', beginning and ending with a letter or digit",
                _spaces_hint(value),
            )
        return value

    def schema_keywords(self) -> dict[str, object]:
        return {"pattern": schema_pattern(_KEY), "maxLength": MAX_PREFIX + 1 + MAX_NAME}


@dataclass(frozen=True)
class LabelValue(StringRule):
    """A label value (a toleration's value too), which may be empty."""

    kind: str

    def check(self, value: str) -> str:
        if len(value) > MAX_NAME or not _VALUE.fullmatch(value):
            raise SpecError(
                f"{self.kind} {value!r} is not a Kubernetes label value: at most {MAX_NAME} "
                "letters, digits, '-', '_' or '.', beginning and ending with a letter or digit",
                _spaces_hint(value),
            )
        return value

    def schema_keywords(self) -> dict[str, object]:
        return {"pattern": schema_pattern(_VALUE), "maxLength": MAX_NAME}
