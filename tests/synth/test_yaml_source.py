"""Positions of keys and values, and YAML-level errors."""

from pathlib import Path

import pytest

from synth.yaml_source import YamlSyntaxError, read_yaml

DOCUMENT = """\
id: x
targets:
  - gpu_type: cpu
    resources:
      requests: {cpu: 1}
"""


@pytest.fixture
def document(tmp_path: Path) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(DOCUMENT, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("loc", "of_key", "position"),
    [
        (("id",), False, (1, 5)),
        (("id",), True, (1, 1)),
        (("targets", 0, "gpu_type"), False, (3, 15)),
        (("targets", 0, "resources"), False, (4, 5)),
        (("targets", 0, "resources", "requests", "cpu"), False, (5, 23)),
        (("targets", 0, "missing"), False, (3, 5)),
        (("owner",), False, (1, 1)),
    ],
)
def test_position_points_at_what_a_reader_looks_for(
    document: Path, loc: tuple[str | int, ...], of_key: bool, position: tuple[int, int]
) -> None:
    assert read_yaml(document).position(loc, of_key=of_key) == position


def test_values_are_plain_python(document: Path) -> None:
    data = read_yaml(document).data
    assert data == {
        "id": "x",
        "targets": [{"gpu_type": "cpu", "resources": {"requests": {"cpu": 1}}}],
    }
    assert type(data) is dict


def test_duplicate_keys_are_an_error_at_the_second(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("id: a\nowner: b\nid: c\n", encoding="utf-8")
    with pytest.raises(YamlSyntaxError) as raised:
        read_yaml(path)
    assert raised.value.position == (3, 1)
    assert "duplicate key" in raised.value.message


def test_yes_and_no_stay_strings_as_in_yaml_1_2(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("a: yes\nb: no\nc: true\n", encoding="utf-8")
    assert read_yaml(path).data == {"a": "yes", "b": "no", "c": True}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("012", 12),
        ("0o17", 15),
        ("0x1f", 31),
        ("1e3", 1000.0),
        ("-.5", -0.5),
        (".inf", float("inf")),
        ("~", None),
        ("2026-12-03", "2026-12-03"),
        ("1:20", "1:20"),
        ("1_000", "1_000"),
        ("on", "on"),
    ],
)
def test_scalars_follow_the_yaml_1_2_core_schema(tmp_path: Path, text: str, value: object) -> None:
    """YAML 1.1 (PyYAML's default) would read these as octal, dates, sexagesimal or booleans."""
    path = tmp_path / "spec.yaml"
    path.write_text(f"a: {text}\n", encoding="utf-8")
    assert read_yaml(path).data == {"a": value}
