"""YAML parsed into plain Python values, plus where every key and value sits in the file.

Validation sees plain dicts, lists and scalars (so strict types behave as for JSON), and the
positions let every error point at the line and column that caused it.

A spec file is untrusted input, so the document is built here from libyaml's events rather
than by PyYAML's constructors: every value is counted as it arrives (an alias counts as
often as it is used, so an alias bomb stops at the limit before anything is expanded), depth
is capped, explicit tags are refused (they name constructors), and a number must fit what
JSON and Kubernetes can hold. Every problem is located; none is a traceback.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

import yaml

from contract.text import describe_character, unprintable
from synth.limits import MAX_DEPTH, MAX_VALUES

Loc = tuple[str | int, ...]
"""A path into a document: mapping keys and list indexes, as pydantic reports them."""

Position = tuple[int, int]
"""A 1-based (line, column)."""

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1


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


@dataclass(frozen=True)
class YamlError:
    """One problem with the text of a file, where it is."""

    message: str
    position: Position
    loc: Loc = ()
    """The field it is in, where the file got that far."""
    hint: str | None = None


class YamlSyntaxError(Exception):
    """The file cannot be read as a spec document; carries every problem found in it."""

    def __init__(self, errors: list[YamlError]) -> None:
        super().__init__("; ".join(error.message for error in errors))
        self.errors = errors


class _Stop(Exception):
    """A problem after which the rest of the file cannot be read (a limit, bad syntax)."""

    def __init__(self, error: YamlError) -> None:
        super().__init__(error.message)
        self.error = error


# YAML 1.2's core schema, not PyYAML's YAML 1.1 one: there `yes`, `on` and `off` are
# booleans, `012` is octal, `1:20` sexagesimal and `2026-12-03` a date; YAML 1.2 (what editors
# and the JSON Schema assume) reads all of those as strings or plain decimals.
_BOOL: Final = re.compile(r"true|True|TRUE|false|False|FALSE")
_INT: Final = re.compile(r"[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+")
_FLOAT: Final = re.compile(
    r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
    r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)"
)
_NULL: Final = re.compile(r"~|null|Null|NULL|")
_INT_DIGITS: Final = 19
"""Digits of the largest int64; a longer number is out of range without converting it
(Python refuses to convert more than 4300 digits at all)."""

# What YAML 1.2 allows in a stream: tab, line breaks and printable characters. libyaml
# refuses the rest with an error that has no line; finding them first gives one.
_NOT_PRINTABLE: Final = re.compile(
    "[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


def parse_yaml(data: bytes) -> YamlSource:
    """Parse one YAML document, keeping positions. Raises YamlSyntaxError with every problem
    the file has (or the first one after which it cannot be read on)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise YamlSyntaxError(
            [
                YamlError(
                    f"byte 0x{data[error.start]:02x} is not UTF-8; save the file as UTF-8",
                    (line, column),
                )
            ]
        ) from None
    bad = _NOT_PRINTABLE.search(text)
    if bad is not None:
        line = text.count("\n", 0, bad.start()) + 1
        column = bad.start() - (text.rfind("\n", 0, bad.start()) + 1) + 1
        raise YamlSyntaxError(
            [
                YamlError(
                    f"character U+{ord(bad.group()):04X} is not allowed in YAML", (line, column)
                )
            ]
        )
    builder = _Builder()
    loader = yaml.CSafeLoader(text)
    try:
        root = builder.document(loader)
    except _Stop as stop:
        raise YamlSyntaxError([*builder.errors, stop.error]) from None
    except yaml.MarkedYAMLError as error:
        raise YamlSyntaxError([*builder.errors, _syntax_error(error, text)]) from None
    finally:
        loader.dispose()
    walk = _Walk(builder.errors)
    data_value = walk.plain(root, ()) if root is not None else None
    if builder.errors:
        raise YamlSyntaxError(builder.errors)
    walk.values.setdefault((), (1, 1))
    return YamlSource(
        data=data_value,
        value_positions=walk.values,
        key_positions=walk.keys,
        containers=frozenset(walk.containers),
    )


def _syntax_error(error: yaml.MarkedYAMLError, text: str) -> YamlError:
    """libyaml's error, naming the character it stopped at where that is one a reader cannot
    see: a tab, or a pasted invisible one."""
    mark = error.problem_mark or error.context_mark
    position = _mark(mark)
    message = " ".join(f"invalid YAML: {error.problem or error.context}".split())
    line, column = position
    lines = text.split("\n", line)
    found = lines[line - 1][column - 1 : column] if len(lines) >= line else ""
    if not (found and unprintable(found)):
        return YamlError(message, position)
    hint = (
        "YAML indents with spaces only: replace the tab with spaces"
        if found == "\t"
        else "delete the character: it does not print, so an editor hides it"
    )
    return YamlError(f"{message}: {describe_character(found)}", position, hint=hint)


def _mark(mark: object) -> Position:
    return (getattr(mark, "line", 0) + 1, getattr(mark, "column", 0) + 1)


class _Node:
    """A value as written, before aliases are expanded; `size` counts them expanded."""

    __slots__ = ("height", "position", "size")

    def __init__(self, position: Position) -> None:
        self.position = position
        self.size = 1
        self.height = 0


class _Scalar(_Node):
    __slots__ = ("plain", "text", "value")

    def __init__(self, position: Position, text: str, value: object, *, plain: bool) -> None:
        super().__init__(position)
        self.text = text
        self.value = value
        self.plain = plain


class _Sequence(_Node):
    __slots__ = ("items",)

    def __init__(self, position: Position) -> None:
        super().__init__(position)
        self.items: list[_Node] = []


class _Mapping(_Node):
    __slots__ = ("entries", "merges", "pending")

    def __init__(self, position: Position) -> None:
        super().__init__(position)
        self.entries: dict[str, tuple[Position, _Node]] = {}
        self.merges: list[tuple[Position, _Node]] = []
        self.pending: _Scalar | None = None
        """A key whose value has not arrived yet."""


_MERGE_KEY: Final = "<<"


class _Builder:
    """Builds a document's nodes from libyaml's events, counting as it goes."""

    def __init__(self) -> None:
        self.errors: list[YamlError] = []
        self.anchors: dict[str, _Node] = {}
        self.values = 0

    def document(self, loader: yaml.CSafeLoader) -> _Node | None:
        """The single document of the stream (None for an empty file)."""
        loader.get_event()  # StreamStart
        if loader.check_event(yaml.StreamEndEvent):
            return None
        loader.get_event()  # DocumentStart
        root = self._node(loader)
        loader.get_event()  # DocumentEnd
        if not loader.check_event(yaml.StreamEndEvent):
            event = _next(loader)
            raise _Stop(
                YamlError(
                    "a spec file holds one YAML document; remove the second '---'",
                    _mark(event.start_mark),
                )
            )
        return root

    def _node(self, loader: yaml.CSafeLoader) -> _Node:
        # Containers open and close by events, iteratively: depth is checked, not recursed.
        stack: list[tuple[_Node, object, Loc]] = []
        while True:
            event = _next(loader)
            position = _mark(event.start_mark)
            text = str(getattr(event, "value", ""))
            loc = _next_loc(stack, text)
            node: _Node
            if isinstance(event, yaml.AliasEvent):
                node = self._alias(event, position, loc, len(stack))
            elif isinstance(event, yaml.ScalarEvent):
                node = self._scalar(event, position, loc)
            elif isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent):
                self._refuse_tag(event, position, loc)
                self._count(1, position, loc)
                if len(stack) >= MAX_DEPTH:
                    raise _Stop(
                        YamlError(f"nested more than {MAX_DEPTH} levels deep", position, loc)
                    )
                opened: _Node = (
                    _Sequence(position)
                    if isinstance(event, yaml.SequenceStartEvent)
                    else _Mapping(position)
                )
                stack.append((opened, event.anchor, loc))
                continue
            else:  # SequenceEnd or MappingEnd
                node, anchor, loc = stack.pop()
                self._close(node, loc)
                # Usable under its anchor once complete: an alias inside it names no anchor.
                self._remember(anchor, node)
            if not stack:
                if isinstance(node, _Scalar):  # a document that is one value
                    self._refuse_unprintable(node, None, ())
                return node
            parent, _, parent_loc = stack[-1]
            self._add(parent, node, parent_loc)

    def _alias(self, event: yaml.AliasEvent, position: Position, loc: Loc, depth: int) -> _Node:
        target = self.anchors.get(str(event.anchor))
        if target is None:
            raise _Stop(
                YamlError(
                    f"alias *{event.anchor} names no anchor defined before it "
                    "(an anchor cannot refer to itself)",
                    position,
                    loc,
                )
            )
        self._count(target.size, position, loc)
        if depth + target.height > MAX_DEPTH:
            raise _Stop(YamlError(f"nested more than {MAX_DEPTH} levels deep", position, loc))
        return target

    def _scalar(self, event: yaml.ScalarEvent, position: Position, loc: Loc) -> _Scalar:
        self._refuse_tag(event, position, loc)
        self._count(1, position, loc)
        text = str(event.value)
        plain = bool(event.implicit[0])
        value = self._resolve(text, position, loc) if plain else text
        node = _Scalar(position, text, value, plain=plain)
        self._remember(event.anchor, node)
        return node

    def _refuse_tag(self, event: yaml.NodeEvent, position: Position, loc: Loc) -> None:
        tag = getattr(event, "tag", None)
        if tag is not None and tag != "!":
            self.errors.append(
                YamlError(
                    f"explicit tag {tag} is not allowed: a spec holds plain values only",
                    position,
                    loc,
                )
            )

    def _resolve(self, text: str, position: Position, loc: Loc) -> object:
        if _NULL.fullmatch(text):
            return None
        if _BOOL.fullmatch(text):
            return text.lower() == "true"
        if _INT.fullmatch(text):
            return self._int(text, position, loc)
        if _FLOAT.fullmatch(text):
            return self._float(text, position, loc)
        return text

    def _int(self, text: str, position: Position, loc: Loc) -> object:
        base = {"0o": 8, "0x": 16}.get(text[:2], 10)
        digits = text[2:] if base != 10 else text.lstrip("+-")
        if len(digits.lstrip("0")) <= _INT_DIGITS:
            value = int(digits, base) * (-1 if text.startswith("-") else 1)
            if INT64_MIN <= value <= INT64_MAX:
                return value
        self.errors.append(
            YamlError(
                f"{_short(text)} is outside the 64-bit integer range that JSON and Kubernetes "
                "hold; quote it if it is text",
                position,
                loc,
            )
        )
        return text

    def _float(self, text: str, position: Position, loc: Loc) -> object:
        value = float(text.lower().replace(".inf", "inf").replace(".nan", "nan"))
        if value - value == 0:  # finite: inf - inf and nan - nan are nan
            return value
        self.errors.append(
            YamlError(
                f"{_short(text)} is not a finite number, which JSON and Kubernetes cannot "
                "hold; quote it if it is text",
                position,
                loc,
            )
        )
        return text

    def _count(self, values: int, position: Position, loc: Loc) -> None:
        self.values += values
        if self.values > MAX_VALUES:
            raise _Stop(
                YamlError(
                    f"the file holds more than {MAX_VALUES:,} values (an alias counts as "
                    "often as it is used); split it, or write less",
                    position,
                    loc,
                )
            )

    def _refuse_unprintable(self, scalar: _Scalar, parent: _Node | None, loc: Loc) -> None:
        """Keys and values hold only characters that print as themselves: a
        tab, a pasted byte order mark or zero-width space, a direction override or an escape
        sequence would make the spec mean other than what its reader sees, and a line break
        would let a key forge a line of its own where it is printed (a CI log's
        `::error ...::` command). A value may hold line breaks (`description: |`): every
        field that names something refuses them by its own rule, and every printer shows
        them escaped (contract.text.shown)."""
        is_key = isinstance(parent, _Mapping) and parent.pending is None
        # Replaced by a space, not removed: the position named stays the character's own.
        found = unprintable(scalar.text if is_key else scalar.text.replace("\n", " "))
        if found is None:
            return
        what = f"the key {_short(scalar.text)}" if is_key else "the value"
        hint = (
            "write the value on one line: fold a long one with '>-'"
            if "\n" in scalar.text or "\r" in scalar.text
            else "retype it without the character (editors hide it; it may have been pasted)"
        )
        self.errors.append(
            YamlError(
                f"{what} holds {found}, which does not print as itself",
                scalar.position,
                _next_loc([(parent, None, loc)], scalar.text) if parent is not None else loc,
                hint,
            )
        )

    def _remember(self, anchor: object, node: _Node) -> None:
        if anchor is not None:
            self.anchors[str(anchor)] = node

    def _close(self, node: _Node, loc: Loc) -> None:
        if isinstance(node, _Mapping) and node.pending is not None:
            raise _Stop(YamlError("a key without a value", node.pending.position, loc))

    def _add(self, parent: _Node, child: _Node, loc: Loc) -> None:
        if isinstance(child, _Scalar):
            self._refuse_unprintable(child, parent, loc)
        parent.size += child.size
        parent.height = max(parent.height, child.height + 1)
        if isinstance(parent, _Sequence):
            parent.items.append(child)
            return
        assert isinstance(parent, _Mapping)
        if parent.pending is None:
            if not isinstance(child, _Scalar):
                raise _Stop(
                    YamlError("invalid YAML: a key must be a plain value", child.position, loc)
                )
            parent.pending = child
            return
        key, parent.pending = parent.pending, None
        if key.plain and key.text == _MERGE_KEY:
            parent.merges.append((key.position, child))
            return
        earlier = parent.entries.get(key.text)
        if earlier is not None:
            self.errors.append(
                YamlError(
                    f"duplicate key {key.text!r}: it is already set on line {earlier[0][0]}",
                    key.position,
                    (*loc, key.text),
                )
            )
            return
        parent.entries[key.text] = (key.position, child)


def _next(loader: yaml.CSafeLoader) -> yaml.Event:
    event = loader.get_event()
    assert event is not None  # libyaml raises on a stream that ends early instead
    return event


def _short(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:37] + "...")


def _next_loc(stack: list[tuple[_Node, object, Loc]], text: str) -> Loc:
    """Where the node of the next event goes: an item's index, a value's key, or (for a key
    itself, whose mapping has no key waiting) the key it spells."""
    if not stack:
        return ()
    parent, _, loc = stack[-1]
    if isinstance(parent, _Sequence):
        return (*loc, len(parent.items))
    assert isinstance(parent, _Mapping)
    return (*loc, parent.pending.text if parent.pending is not None else text)


@dataclass
class _Walk:
    """Turns built nodes into plain values, noting where each key and value sits."""

    errors: list[YamlError]
    values: dict[Loc, Position] = field(default_factory=dict)
    keys: dict[Loc, Position] = field(default_factory=dict)
    containers: set[Loc] = field(default_factory=set)

    def plain(self, node: _Node, loc: Loc) -> object:
        """The plain value of `node`, which sits at `loc`."""
        self.values[loc] = node.position
        if isinstance(node, _Scalar):
            return node.value
        self.containers.add(loc)
        if isinstance(node, _Sequence):
            return [self.plain(item, (*loc, index)) for index, item in enumerate(node.items)]
        assert isinstance(node, _Mapping)
        result: dict[str, object] = {}
        for key, (key_position, value) in self._entries(node, loc).items():
            child = (*loc, key)
            self.keys[child] = key_position
            result[key] = self.plain(value, child)
        return result

    def _entries(self, node: _Mapping, loc: Loc) -> dict[str, tuple[Position, _Node]]:
        """The mapping's own entries, then those merged in with `<<` that it does not set
        itself (an earlier merged mapping wins over a later one, as YAML's merge key says)."""
        entries = dict(node.entries)
        for position, source in node.merges:
            sources = source.items if isinstance(source, _Sequence) else [source]
            for merged in sources:
                if not isinstance(merged, _Mapping):
                    self.errors.append(
                        YamlError(
                            "'<<' merges a mapping, or a list of mappings, into this one",
                            position,
                            (*loc, _MERGE_KEY),
                        )
                    )
                    continue
                for key, entry in self._entries(merged, loc).items():
                    entries.setdefault(key, entry)
        return entries
