"""Positions of keys and values, the YAML a spec may use, and every way a file's text can be
wrong: each a located error, none a traceback."""

import pytest

from synth.limits import MAX_DEPTH, MAX_VALUES
from synth.yaml_source import YamlError, YamlSource, YamlSyntaxError, parse_yaml

DOCUMENT = """\
id: x
targets:
  - gpu_type: cpu
    resources:
      requests: {cpu: 1}
"""


def parse(text: str) -> YamlSource:
    return parse_yaml(text.encode())


def errors_of(data: bytes) -> list[YamlError]:
    with pytest.raises(YamlSyntaxError) as raised:
        parse_yaml(data)
    return raised.value.errors


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
    loc: tuple[str | int, ...], of_key: bool, position: tuple[int, int]
) -> None:
    assert parse(DOCUMENT).position(loc, of_key=of_key) == position


def test_values_are_plain_python() -> None:
    data = parse(DOCUMENT).data
    assert data == {
        "id": "x",
        "targets": [{"gpu_type": "cpu", "resources": {"requests": {"cpu": 1}}}],
    }
    assert type(data) is dict


def test_every_duplicate_key_is_an_error_at_its_repeat() -> None:
    errors = errors_of(b"id: a\nowner: b\nid: c\nx: {k: 1, k: 2}\n")
    assert [error.position for error in errors] == [(3, 1), (4, 11)]
    assert all("duplicate key" in error.message for error in errors)


def test_yes_and_no_stay_strings_as_in_yaml_1_2() -> None:
    assert parse("a: yes\nb: no\nc: true\n").data == {"a": "yes", "b": "no", "c": True}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("012", 12),
        ("0o17", 15),
        ("0x1f", 31),
        ("1e3", 1000.0),
        ("-.5", -0.5),
        ("~", None),
        ("2026-12-03", "2026-12-03"),
        ("1:20", "1:20"),
        ("1_000", "1_000"),
        ("on", "on"),
        ("'12'", "12"),
        ('"true"', "true"),
        ("9223372036854775807", 2**63 - 1),
        ("-9223372036854775808", -(2**63)),
        ("0x7fffffffffffffff", 2**63 - 1),
        ("000000000000000000000000001", 1),
    ],
)
def test_scalars_follow_the_yaml_1_2_core_schema(text: str, value: object) -> None:
    """YAML 1.1 (PyYAML's default) would read these as octal, dates, sexagesimal or booleans."""
    assert parse(f"a: {text}\n").data == {"a": value}


def test_an_empty_file_is_no_document() -> None:
    assert parse("# only a comment\n").data is None


@pytest.mark.parametrize(
    "text",
    ["9223372036854775808", "-9223372036854775809", "9" * 5000, "0x1" + "0" * 16, "0o" + "7" * 30],
)
def test_an_integer_outside_int64_is_an_error_at_it(text: str) -> None:
    [error] = errors_of(f"a: 1\nb: {text}\n".encode())
    assert error.position == (2, 4)
    assert "outside the 64-bit integer range" in error.message


@pytest.mark.parametrize("text", [".inf", "-.Inf", "+.INF", ".nan", ".NaN", "1e999", "-1e400"])
def test_a_number_that_is_not_finite_is_an_error_at_it(text: str) -> None:
    [error] = errors_of(f"a: {text}\n".encode())
    assert error.position == (1, 4)
    assert "not a finite number" in error.message


@pytest.mark.parametrize(
    "tagged",
    [
        "!!python/object/apply:os.system [echo]",
        "!!binary aGVsbG8=",
        "!!str 12",
        "!!timestamp 2026-01-01",
        "!!set {a, b}",
        "!!omap [a: 1]",
        "!custom value",
        "!<tag:example.com,2026:x> v",
    ],
)
def test_an_explicit_tag_is_an_error_at_its_value(tagged: str) -> None:
    [error] = errors_of(f"a: 1\nb: {tagged}\n".encode())
    assert error.position == (2, 4)
    assert "explicit tag" in error.message


def test_every_tag_and_number_problem_of_a_file_is_reported() -> None:
    errors = errors_of(b"a: !!binary eA==\nb: .nan\nc: [1, 99999999999999999999]\n")
    assert [error.position for error in errors] == [(1, 4), (2, 4), (3, 8)]


def test_bytes_that_are_not_utf8_are_an_error_at_the_byte() -> None:
    [error] = errors_of(b"a: 1\nbb: caf\xe9\n")
    assert error.position == (2, 8)
    assert "0xe9 is not UTF-8" in error.message


@pytest.mark.parametrize("character", ["\x00", "\x07", "\x1b", "\x7f", "\x9b", "\ufffe"])
def test_a_control_character_is_an_error_at_it(character: str) -> None:
    [error] = errors_of(f"a: 1\nb: x{character}y\n".encode(errors="surrogatepass"))
    assert error.position == (2, 5)
    assert f"U+{ord(character):04X}" in error.message


@pytest.mark.parametrize(
    ("text", "position", "loc", "named"),
    [
        ("a: 1\nb: x\ty\n", (2, 4), ("b",), "U+0009 CHARACTER TABULATION at character 2"),
        ('"x\\ny": 1\n', (1, 1), ("x\ny",), "U+000A LINE FEED at character 2"),
        ('a: "x\\ry"\n', (1, 4), ("a",), "U+000D CARRIAGE RETURN at character 2"),
        ('a: ["ok", "\\u202e"]\n', (1, 11), ("a", 1), "U+202E RIGHT-TO-LEFT OVERRIDE"),
        ('? "k\\u200b"\n: 1\n', (1, 3), ("k\u200b",), "U+200B ZERO WIDTH SPACE"),
        ("just\ta value", (1, 1), (), "U+0009 CHARACTER TABULATION at character 5"),
    ],
    ids=["tab", "line-break-in-a-key", "carriage-return", "item", "key", "document"],
)
def test_a_key_or_value_holding_a_character_that_does_not_print_is_an_error_at_it(
    text: str, position: tuple[int, int], loc: tuple[str | int, ...], named: str
) -> None:
    """However it is written (raw, escaped, in a block), and wherever (a key, an item, a
    document that is one value: found by the atheris target)."""
    [error] = errors_of(text.encode())
    assert (error.position, error.loc) == (position, loc)
    assert named in error.message


@pytest.mark.parametrize(
    ("text", "value"),
    [("a: |\n  two\n  lines\n", "two\nlines\n"), ('a: "two\\nlines"\n', "two\nlines")],
    ids=["literal-block", "escaped"],
)
def test_a_value_may_hold_line_breaks(text: str, value: str) -> None:
    """A description is a paragraph: the fields that name things refuse line breaks by their
    own rules, and every printer shows them escaped (contract.text.shown)."""
    assert parse_yaml(text.encode()).data == {"a": value}


def test_a_syntax_error_is_located() -> None:
    [error] = errors_of(b"a: [1, 2\nb: 3\n")
    assert error.position[0] == 2
    assert error.message.startswith("invalid YAML:")


def test_a_second_document_is_an_error() -> None:
    [error] = errors_of(b"a: 1\n---\nb: 2\n")
    assert error.position == (2, 1)
    assert "one YAML document" in error.message


def test_a_mapping_as_a_key_is_an_error() -> None:
    [error] = errors_of(b"? {a: 1}\n: x\n")
    assert "a key must be a plain value" in error.message


def nested(depth: int) -> bytes:
    return ("a: " + "{b: " * (depth - 1) + "1" + "}" * (depth - 1) + "\n").encode()


def test_nesting_up_to_the_limit_is_read() -> None:
    parse_yaml(nested(MAX_DEPTH))


def test_nesting_past_the_limit_is_an_error() -> None:
    [error] = errors_of(nested(MAX_DEPTH + 1))
    assert f"nested more than {MAX_DEPTH} levels deep" in error.message


def test_an_alias_counts_its_depth_where_it_is_used() -> None:
    deep = "{b: " * (MAX_DEPTH - 2) + "1" + "}" * (MAX_DEPTH - 2)
    [error] = errors_of(f"a: &deep {deep}\nc: {{d: {{e: *deep}}}}\n".encode())
    assert error.position == (2, 12)
    assert "nested more than" in error.message


def test_more_values_than_the_limit_is_an_error() -> None:
    [error] = errors_of(("a: [" + "1," * MAX_VALUES + "1]\n").encode())
    assert f"more than {MAX_VALUES:,} values" in error.message


def test_an_alias_bomb_stops_at_the_limit_before_expanding() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 10)}]" for n in range(1, 9)]
    [error] = errors_of(("\n".join(lines) + "\n").encode())
    assert error.position[0] == 5  # 10^5 values would be reached on the fifth line
    assert "an alias counts as often as it is used" in error.message


def test_an_alias_inside_its_own_anchor_is_an_error() -> None:
    [error] = errors_of(b"a: &x [1, *x]\n")
    assert "names no anchor defined before it" in error.message


def test_anchors_aliases_and_merge_keys_work() -> None:
    source = parse(
        "base: &base {gpu_type: cpu, spot: false}\n"
        "size: &size {name: one}\n"
        "targets:\n"
        "  - <<: *base\n"
        "    spot: true\n"
        "  - <<: [*size, *base]\n"
        "  - *base\n"
    )
    assert source.data == {
        "base": {"gpu_type": "cpu", "spot": False},
        "size": {"name": "one"},
        "targets": [
            {"gpu_type": "cpu", "spot": True},
            {"name": "one", "gpu_type": "cpu", "spot": False},
            {"gpu_type": "cpu", "spot": False},
        ],
    }
    # A merged value is located where it is written: at the anchor.
    assert source.position(("targets", 0, "gpu_type")) == (1, 24)
    assert source.position(("targets", 0, "spot")) == (5, 11)


def test_an_earlier_merged_mapping_wins_over_a_later_one() -> None:
    text = "a: &a {k: 1}\nb: &b {k: 2}\nc: {<<: [*a, *b]}\n"
    assert parse(text).data == {"a": {"k": 1}, "b": {"k": 2}, "c": {"k": 1}}


def test_merging_something_other_than_a_mapping_is_an_error() -> None:
    [error] = errors_of(b"a: &a [1]\nb: {<<: *a}\n")
    assert error.position == (2, 5)
    assert "'<<' merges a mapping" in error.message


def test_a_quoted_merge_key_is_an_ordinary_key() -> None:
    assert parse("'<<': 1\n").data == {"<<": 1}


def test_flow_style_and_comments_work() -> None:
    text = "# a spec\n{id: x, targets: [{gpu_type: cpu}], n: [1, 2]}  # trailing\n"
    assert parse(text).data == {"id": "x", "targets": [{"gpu_type": "cpu"}], "n": [1, 2]}
