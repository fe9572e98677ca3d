"""The fleet file's `git:` fields, as Flux's GitRepository takes them: a value its CRD or
git refuses stops Flux from applying the cluster's whole folder, so each is checked here,
at its line, instead."""

import re
from dataclasses import dataclass
from typing import Final

from contract.addresses import masked_address
from synth.fields import StringRule, line_break_hint, schema_pattern, split_url, url_port
from synth.hints import SpecError
from synth.limits import MAX_BRANCH_CHARS, MAX_DURATION_SECONDS

_GO_DURATION: Final = re.compile(r"(?:[0-9]+(?:\.[0-9]+)?(?:ms|s|m|h))+")
"""The GitRepository CRD's pattern for `interval` (Go's time.ParseDuration, without signs
and the units below a millisecond)."""
_GO_DURATION_PART: Final = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
_SECONDS: Final = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
_LONGEST_DURATION: Final = 64
"""Characters of a Go duration read at all: '720h' is the longest allowed, written plainly."""

GIT_SCHEMES: Final = ("http", "https", "ssh")
"""What the GitRepository CRD's `url` pattern allows."""

_REF_FORBIDDEN: Final = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//")


@dataclass(frozen=True)
class GoDuration(StringRule):
    """A positive Go duration of at most 30 days, such as '5m' or '1h30m'."""

    kind: str

    def check(self, value: str) -> str:
        if len(value) > _LONGEST_DURATION or not _GO_DURATION.fullmatch(value):
            raise SpecError(
                f"{self.kind} {value!r} is not a duration Flux reads: write a number and a unit "
                "(ms, s, m, h), e.g. '5m', '90s' or '1h30m'",
                line_break_hint(value),
            )
        seconds = sum(
            float(number) * _SECONDS[unit] for number, unit in _GO_DURATION_PART.findall(value)
        )
        if not 0 < seconds <= MAX_DURATION_SECONDS:
            raise ValueError(
                f"{self.kind} {value!r} must be more than 0 and at most 30 days"
                f" ({MAX_DURATION_SECONDS:,} seconds)"
            )
        return value

    def schema_keywords(self) -> dict[str, object]:
        return {"pattern": schema_pattern(_GO_DURATION), "examples": ["5m", "1h"]}


@dataclass(frozen=True)
class Branch(StringRule):
    """A name `git check-ref-format --branch` accepts."""

    def check(self, value: str) -> str:
        broken = _broken_ref_rule(value)
        if broken is not None:
            raise SpecError(
                f"branch {value!r} is not a name git allows for a branch: {broken}",
                line_break_hint(value) or "`git check-ref-format --branch NAME` says why",
            )
        return value

    def schema_keywords(self) -> dict[str, object]:
        return {"minLength": 1, "maxLength": MAX_BRANCH_CHARS}


def _broken_ref_rule(name: str) -> str | None:
    """The first rule of git-check-ref-format(1) that `name` breaks, if any."""
    if not name:
        return "it is empty"
    if len(name) > MAX_BRANCH_CHARS:
        return f"it is {len(name):,} characters; at most {MAX_BRANCH_CHARS} fit a file name"
    if forbidden := _REF_FORBIDDEN.search(name):
        return f"it holds {forbidden[0]!r}"
    if name.startswith(("-", "/")) or name.endswith(("/", ".")) or name == "@":
        return "it begins with '-' or '/', ends with '/' or '.', or is '@'"
    if any(part.startswith(".") or part.endswith(".lock") for part in name.split("/")):
        return "a part of it begins with '.' or ends with '.lock'"
    return None


@dataclass(frozen=True)
class GitUrl(StringRule):
    """The repository Flux clones: http, https or ssh, with a host, and no password."""

    def check(self, value: str) -> str:
        parts = split_url(value)
        if parts.scheme not in GIT_SCHEMES:
            schemes = ", ".join(scheme + "://" for scheme in GIT_SCHEMES)
            raise SpecError(
                f"git url {masked_address(value)!r} must begin with {schemes}",
                "Flux's GitRepository takes no other form: write git@host:path as "
                "ssh://git@host/path",
            )
        url_port(parts, value)
        if parts.password is not None:
            raise SpecError(
                "the git url carries a password; clusters/ would publish it",
                "put the credentials in a Secret in flux-system and name it in git.secret_name",
            )
        return value

    def schema_keywords(self) -> dict[str, object]:
        return {"pattern": schema_pattern(rf"(?:{'|'.join(GIT_SCHEMES)})://\S+")}
