"""Problems found in spec files, and how pydantic's errors become them.

Every problem prints as ``file:line:column: field.path: message`` with an optional indented
``hint:`` line, the format compilers use, so editors and CI annotate the right line.
"""

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Final, Literal

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from contract.text import shown
from synth.empty import HINT as EMPTY_HINT
from synth.hints import SpecError, closest, did_you_mean, lookalike_note
from synth.yaml_source import Loc, YamlSource


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with one spec file, located as precisely as the file allows."""

    file: str
    line: int
    column: int
    path: str
    message: str
    hint: str | None = None
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        # File names, keys and messages quote what a spec holds: shown, so that no line
        # break or control character in them can forge a line (a CI annotation) of its own.
        where = f"{shown(self.file)}:{self.line}:{self.column}: "
        label = "" if self.severity == "error" else "warning: "
        field = f"{shown(self.path)}: " if self.path else ""
        text = f"{where}{label}{field}{shown(self.message)}"
        return f"{text}\n    hint: {shown(self.hint)}" if self.hint else text


class SpecProblems(Exception):
    """Raised when any spec is invalid; carries every problem of every file."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = sorted(problems)
        super().__init__("\n".join(str(problem) for problem in self.problems))


_PLAIN_KEY: Final = re.compile(r"[A-Za-z0-9_./-]+")
"""Keys written as they are in a field path: the spec's own, and label keys such as
`nvidia.com/gpu.product`; any other key is quoted, so that a line break or a space in it
cannot break the `file:line:column: path: message` line."""

_KEY_OF: Final = "[key]"
"""What pydantic appends to the path of a mapping's key that failed validation."""


def format_loc(loc: Loc) -> str:
    """``("models", 1, "file")`` -> ``models[1].file``; ``("a", "b c")`` -> ``a['b c']``."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not _PLAIN_KEY.fullmatch(part):
            text += f"[{part!r}]"
        else:
            text += f".{part}" if text else part
    return text


def problem_at(
    source: YamlSource,
    file: str,
    loc: Loc,
    message: str,
    hint: str | None = None,
    *,
    of_key: bool = False,
    severity: Literal["error", "warning"] = "error",
) -> Problem:
    """A problem located at `loc` in `source`."""
    line, column = source.position(loc, of_key=of_key)
    return Problem(file, line, column, format_loc(loc), message, hint, severity)


def empty_problems(
    source: YamlSource, file: str, empty: Iterable[tuple[Loc, str]]
) -> list[Problem]:
    """The keys written with nothing in them (synth.empty), as located problems."""
    return [problem_at(source, file, loc, message, EMPTY_HINT) for loc, message in empty]


def problems_from_validation(
    error: ValidationError,
    model: type[BaseModel],
    source: YamlSource,
    file: str,
    empty: Mapping[Loc, str],
) -> list[Problem]:
    """Every entry of a pydantic ValidationError, as located problems with hints, and the
    `empty` keys: at one of those, pydantic's own message is kept only where it explains
    more, a rule of ours (`matrix: {}` sweeps nothing) or an unknown key, than a type does
    (null is not a string)."""
    details = error.errors(include_url=False)
    explained = {
        tuple(d["loc"])
        for d in details
        if d["type"] == "extra_forbidden" or (d.get("ctx") or {}).get("error")
    }
    details = [d for d in details if tuple(d["loc"]) in explained or not _within(d["loc"], empty)]
    missing = {tuple(d["loc"]) for d in details if d["type"] == "missing"}
    renamed_by_typo: set[Loc] = set()
    problems = []
    for detail in details:
        loc = tuple(detail["loc"])
        if detail["type"] == "extra_forbidden":
            known = _known_keys(model, loc[:-1])
            guess = closest(str(loc[-1]), known)
            if guess is not None and (*loc[:-1], guess) in missing:
                renamed_by_typo.add((*loc[:-1], guess))
            problems.append(
                problem_at(
                    source,
                    file,
                    loc,
                    f"unknown key {loc[-1]!r}{lookalike_note(str(loc[-1]))}",
                    did_you_mean(str(loc[-1]), known, what="allowed keys") if known else None,
                    of_key=True,
                )
            )
    for detail in details:
        loc = tuple(detail["loc"])
        if detail["type"] == "extra_forbidden" or loc in renamed_by_typo:
            continue
        message, hint = _message(detail)
        value = detail["input"]
        if isinstance(value, str) and detail["type"] in _ABOUT_A_NAME:
            note = lookalike_note(value)
            message += "" if note in message else note
        if loc[-1:] == (_KEY_OF,):
            problems.append(problem_at(source, file, loc[:-1], message, hint, of_key=True))
        else:
            problems.append(problem_at(source, file, loc, message, hint))
    unexplained = [(loc, message) for loc, message in empty.items() if loc not in explained]
    return problems + empty_problems(source, file, unexplained)


def _within(loc: Iterable[str | int], empty: Mapping[Loc, str]) -> bool:
    """Whether `loc` is one of the `empty` keys or inside one (`kueue: {}` lacks its keys)."""
    path = tuple(loc)
    return any(path[:depth] in empty for depth in range(len(path) + 1))


def _message(detail: ErrorDetails) -> tuple[str, str | None]:
    context: Mapping[str, Any] = detail.get("ctx") or {}
    cause = context.get("error")
    if isinstance(cause, SpecError):
        return cause.message, cause.hint
    if isinstance(cause, ValueError):
        return str(cause), None
    kind = detail["type"]
    value = detail["input"]
    if kind == "missing":
        return f"required key {detail['loc'][-1]!r} is missing", None
    if kind in ("enum", "literal_error"):
        expected = _expected_values(str(context.get("expected", "")))
        hint = did_you_mean(str(value), expected, what="allowed") if expected else None
        return f"{value!r} is not allowed here", hint
    return f"{detail['msg']} (got {quoted(value)})", _TYPE_HINTS.get(kind)


_ABOUT_A_NAME: frozenset[str] = frozenset({"value_error", "enum", "literal_error"})
"""Errors that say a word is not a name the spec allows (a pattern, a choice, a reference),
where a look-alike letter is the likeliest cause."""

_TYPE_HINTS: Mapping[str, str] = {
    "string_type": "YAML reads unquoted digits, true/false and null as other types; quote the "
    "value to make it a string",
    "bool_type": "write true or false, without quotes",
    "int_type": "write a whole number without quotes",
    "int_parsing": "write a whole number without quotes",
    "list_type": "write a list, e.g. [a, b] or one '- item' per line",
    "dict_type": "write a mapping of keys to values",
    "too_long": "split the workflow into several files; docs/specs.md lists the limits",
}


def _expected_values(expected: str) -> list[str]:
    # pydantic renders the choices as "'a', 'b' or 'c'".
    return [part.strip().strip("'") for part in expected.replace(" or ", ", ").split(",") if part]


def quoted(value: object) -> str:
    """`value` as Python writes it, cut to 60 characters for a message."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _known_keys(model: type[BaseModel], loc: Loc) -> list[str]:
    """The keys the spec allows at `loc`, found by walking the model's JSON Schema."""
    schema = _json_schema(model)
    definitions = schema.get("$defs", {})
    node: Mapping[str, Any] | None = schema
    for part in loc:
        node = _step(_resolve(node, definitions), part, definitions)
        if node is None:
            return []
    resolved = _resolve(node, definitions)
    return sorted(resolved.get("properties", {})) if resolved else []


@cache
def _json_schema(model: type[BaseModel]) -> Mapping[str, Any]:
    # Built once per model: a file with thousands of unknown keys asks for it each time.
    return model.model_json_schema()


def _resolve(node: Mapping[str, Any] | None, definitions: Mapping[str, Any]) -> Mapping[str, Any]:
    while node is not None:
        if "$ref" in node:
            node = definitions[node["$ref"].rsplit("/", 1)[-1]]
        elif "anyOf" in node:
            # Optional fields are anyOf [X, null]; the object member is the one with keys.
            members = [_resolve(m, definitions) for m in node["anyOf"]]
            node = next((m for m in members if "properties" in m or "items" in m), members[0])
        else:
            return node
    return {}


def _step(
    node: Mapping[str, Any], part: str | int, definitions: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    if isinstance(part, int):
        items = node.get("items")
        return items if isinstance(items, Mapping) else None
    properties = node.get("properties", {})
    if part in properties:
        return properties[part]  # type: ignore[no-any-return]
    extra = node.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def unreadable(relative: str, error: Exception, what: str, hint: str) -> Problem:
    """The problem of a committed file under `relative` that cannot be `what` (a results
    record, a schedule): the first field pydantic names, else the error's own words."""
    first = error.errors()[0] if isinstance(error, ValidationError) else None
    where = ".".join(map(str, first["loc"])) if first else ""
    why = f"{f'{where}: ' if where else ''}{first['msg']}" if first else str(error)
    return Problem(relative, 1, 1, "", f"not {what}: {why}", hint)
