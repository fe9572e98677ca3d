"""YAML parsed into plain Python values, plus where every key and value sits in the file.

Validation sees plain dicts, lists and scalars (so strict types behave as for JSON), and the
positions let every error point at the line and column that caused it.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import yaml

Loc = tuple[str | int, ...]
"""A path into a document: mapping keys and list indexes, as pydantic reports them."""

Position = tuple[int, int]
"""A 1-based (line, column)."""


@dataclass(frozen=True)
class YamlSource:
    """A parsed document and the positions of its keys and values."""

    data: object
    value_positions: Mapping[Loc, Position] = field(default_factory=dict)
    key_positions: Mapping[Loc, Position] = field(default_factory=dict)
    containers: frozenset[Loc] = frozenset()

    def position(self, loc: Loc, *, of_key: bool = False) -> Position:
        """Where `loc` is written; for a missing entry, where its closest parent is.

        A scalar points at its value, a mapping or list at the key that names it (what a
        reader looks for), and `of_key` at the key even for a scalar.
        """
        if of_key and loc in self.key_positions:
            return self.key_positions[loc]
        for depth in range(len(loc), -1, -1):
            prefix = loc[:depth]
            if prefix in self.containers and prefix in self.key_positions:
                return self.key_positions[prefix]
            if prefix in self.value_positions:
                return self.value_positions[prefix]
        return (1, 1)


class YamlSyntaxError(Exception):
    """The file is not valid YAML (or repeats a key); carries the position of the problem."""

    def __init__(self, message: str, position: Position) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


class _Core12Loader(yaml.CSafeLoader):
    """libyaml's C parser with the YAML 1.2 core schema's implicit types.

    PyYAML resolves YAML 1.1 types, where `yes`, `on` and `off` are booleans, `012` is octal,
    `1:20` is sexagesimal and `2026-12-03` a date; YAML 1.2 (what editors and the JSON Schema
    assume) reads all of those as strings or plain decimals. The C parser composes nodes with
    their positions about ten times faster than a pure-Python parser.
    """


_CORE_TYPES: Final = (
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        "tag:yaml.org,2002:float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
)
# An own table, or add_implicit_resolver would extend PyYAML's 1.1 one inherited from SafeLoader.
_Core12Loader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in _CORE_TYPES:
    _Core12Loader.add_implicit_resolver(_tag, re.compile(_pattern), list(_first))


def _core_int(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if text.startswith(("0o", "0x")):
        return int(text[2:], 8 if text[1] == "o" else 16)
    return int(text, 10)


def _core_float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float:
    text = str(loader.construct_scalar(node)).lower()
    if text.lstrip("+-") == ".inf":
        return float("-inf") if text.startswith("-") else float("inf")
    return float("nan") if text == ".nan" else float(text)


_Core12Loader.add_constructor("tag:yaml.org,2002:int", _core_int)
_Core12Loader.add_constructor("tag:yaml.org,2002:float", _core_float)


def read_yaml(path: Path) -> YamlSource:
    """Parse one YAML document, keeping positions. Raises YamlSyntaxError."""
    loader = _Core12Loader(path.read_text(encoding="utf-8"))
    walk = _Walk(loader)
    try:
        node = loader.get_single_node()
        data = walk.plain(node, ()) if node is not None else None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        return _raise(f"invalid YAML: {error.problem or error.context}", mark)
    finally:
        loader.dispose()
    walk.values.setdefault((), (1, 1))
    return YamlSource(
        data=data,
        value_positions=walk.values,
        key_positions=walk.keys,
        containers=frozenset(walk.containers),
    )


def _raise(message: str, mark: object) -> YamlSource:
    line = getattr(mark, "line", 0) + 1
    column = getattr(mark, "column", 0) + 1
    raise YamlSyntaxError(" ".join(message.split()), (line, column))


def _at(node: yaml.Node) -> Position:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


@dataclass
class _Walk:
    """Turns composed nodes into plain values, noting where each key and value sits."""

    loader: _Core12Loader
    values: dict[Loc, Position] = field(default_factory=dict)
    keys: dict[Loc, Position] = field(default_factory=dict)
    containers: set[Loc] = field(default_factory=set)

    def plain(self, node: yaml.Node, loc: Loc) -> object:
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, loc)
        if isinstance(node, yaml.SequenceNode):
            self.containers.add(loc)
            self.values[loc] = _at(node)
            items = []
            for index, item in enumerate(node.value):
                self.values[(*loc, index)] = _at(item)
                items.append(self.plain(item, (*loc, index)))
            return items
        return self.loader.construct_object(node, deep=True)

    def _mapping(self, node: yaml.MappingNode, loc: Loc) -> dict[str, object]:
        self.containers.add(loc)
        self.values[loc] = _at(node)
        result: dict[str, object] = {}
        originals: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                _raise("invalid YAML: a key must be a plain value", key_node.start_mark)
            key = str(self.loader.construct_object(key_node))
            if key in originals:
                _raise(
                    f'duplicate key: found duplicate key "{key}" with value '
                    f'"{_text(value_node)}" (original value: "{_text(originals[key])}")',
                    key_node.start_mark,
                )
            originals[key] = value_node
            child = (*loc, key)
            self.keys[child] = _at(key_node)
            self.values[child] = _at(value_node)
            result[key] = self.plain(value_node, child)
        return result


def _text(node: yaml.Node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else "..."
