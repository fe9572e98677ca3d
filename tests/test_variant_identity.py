"""A variant's settings are listed once, in contract/variant.py: the sweep, config.json, the
store's columns, the metrics' labels and the report's key are made from that list, so a new
setting is not missed by one of them (docs/architecture.md, "Where a spec field travels")."""

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Final

from contract.variant import SETTING_FIELDS
from tests.conftest import REPO_ROOT
from tests.test_layout import own_modules

HOME = Path("contract/variant.py")
NOT_SOURCE = {"tests", "bench"}
"""Tests and benchmarks write out the variants they run, each setting's value."""


def _strings(nodes: list[ast.expr | None]) -> set[str]:
    return {
        node.value
        for node in nodes
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    } & set(SETTING_FIELDS)


ENUMERATED: Final = len(SETTING_FIELDS) - 1
"""Settings read one by one name a few of them for their own sake (a precision and a
quantization pick a gate); all of them, or all but the one it forgot, are a list of them."""


def _attributes(nodes: list[ast.expr]) -> set[str]:
    named = {node.attr for node in nodes if isinstance(node, ast.Attribute)} & set(SETTING_FIELDS)
    return named if len(named) >= ENUMERATED else set()


def settings_lists(tree: ast.AST) -> Iterator[tuple[int, set[str]]]:
    """Where `tree` names two or more settings together in a literal: a tuple, list or set,
    the keys of a dict, or the arguments of a call (a validator's field names), by their
    names; or ENUMERATED of them read one by one as attributes, in such a literal (a sort
    order) or in an f-string's fields (a title)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            named = _strings(list(node.elts)) | _attributes(node.elts)
        elif isinstance(node, ast.Dict):
            named = _strings(node.keys)
        elif isinstance(node, ast.Call):
            named = _strings(list(node.args)) | _attributes(node.args)
        elif isinstance(node, ast.JoinedStr):
            fields = [part.value for part in node.values if isinstance(part, ast.FormattedValue)]
            named = _attributes(fields)
        else:
            continue
        if len(named) >= 2:
            yield node.lineno, named


def source_files() -> Iterator[Path]:
    for path in sorted(own_modules().values()):
        relative = path.relative_to(REPO_ROOT)
        if relative.parts[0] not in NOT_SOURCE:
            yield relative


def test_no_second_list_of_the_settings() -> None:
    found = [
        f"{path}:{line}: {', '.join(sorted(named))}"
        for path in source_files()
        if path != HOME
        for line, named in settings_lists(ast.parse((REPO_ROOT / path).read_text()))
    ]
    assert found == [], "derive these from contract/variant.py's SETTING_FIELDS:\n" + "\n".join(
        found
    )


def test_the_check_finds_a_planted_list() -> None:
    planted = ast.parse('AXES = ("precision", "runtime")\nf(x, "model", "batch_size")')
    assert [line for line, _ in settings_lists(planted)] == [1, 2]


def test_the_check_finds_settings_read_one_by_one() -> None:
    planted = ast.parse(
        "order = (k.model, k.precision, k.quantization, k.batch_size, 0)\n"
        'title = f"{k.model} {k.precision} {k.quantization} b{k.batch_size}: {verdict}"\n'
        "g(k.model, k.precision, k.quantization, k.batch_size)\n"
        "gate = default_gate(ref.precision, ref.quantization)\n"
        "slot = (k.model, k.cluster, k.target)"
    )
    assert [line for line, _ in settings_lists(planted)] == [1, 2, 3]
