"""YAML parsed into plain Python values, plus where every key and value sits in the file.

Validation sees plain dicts, lists and scalars (so strict types behave as for JSON), and the
positions let every error point at the line and column that caused it.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import DuplicateKeyError
from ruamel.yaml.error import MarkedYAMLError

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


def read_yaml(path: Path) -> YamlSource:
    """Parse one YAML document, keeping positions. Raises YamlSyntaxError."""
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    try:
        document = yaml.load(path.read_text(encoding="utf-8"))
    except DuplicateKeyError as error:
        mark = error.problem_mark
        return _raise(f"duplicate key: {error.problem}", mark)
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        return _raise(f"invalid YAML: {error.problem or error.context}", mark)
    values: dict[Loc, Position] = {}
    keys: dict[Loc, Position] = {}
    containers: set[Loc] = set()
    data = _plain(document, (), values, keys, containers)
    values.setdefault((), (1, 1))
    return YamlSource(
        data=data, value_positions=values, key_positions=keys, containers=frozenset(containers)
    )


def _raise(message: str, mark: object) -> YamlSource:
    line = getattr(mark, "line", 0) + 1
    column = getattr(mark, "column", 0) + 1
    raise YamlSyntaxError(" ".join(message.split()), (line, column))


def _plain(
    node: object,
    loc: Loc,
    values: dict[Loc, Position],
    keys: dict[Loc, Position],
    containers: set[Loc],
) -> object:
    if isinstance(node, CommentedMap):
        containers.add(loc)
        values[loc] = (node.lc.line + 1, node.lc.col + 1)
        result: dict[str, object] = {}
        for key, value in node.items():
            child = (*loc, str(key))
            key_line, key_col = node.lc.key(key)
            value_line, value_col = node.lc.value(key)
            keys[child] = (key_line + 1, key_col + 1)
            values[child] = (value_line + 1, value_col + 1)
            result[str(key)] = _plain(value, child, values, keys, containers)
        return result
    if isinstance(node, CommentedSeq):
        containers.add(loc)
        values[loc] = (node.lc.line + 1, node.lc.col + 1)
        items = []
        for index, item in enumerate(node):
            child = (*loc, index)
            line, col = node.lc.item(index)
            values[child] = (line + 1, col + 1)
            items.append(_plain(item, child, values, keys, containers))
        return items
    # ruamel's scalar subclasses (ScalarFloat, LiteralScalarString...) become built-ins so
    # that strict validation treats them like any YAML or JSON value; bool before int, as
    # bool is a subclass of int.
    for kind in (bool, int, float, str):
        if isinstance(node, kind):
            return kind(node)
    return node
