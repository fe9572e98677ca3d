"""contract.text: user strings shown on one line, as what they hold."""

import pytest

from contract.text import describe_character, shown, unprintable


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("specs/workflows/a.yaml", "specs/workflows/a.yaml"),
        ("Müller's ü-bench ✓", "Müller's ü-bench ✓"),
        ("a\n::error file=x,line=1::forged", "a\\n::error file=x,line=1::forged"),
        ("a\r::warning::forged", "a\\r::warning::forged"),
        ("a\x1b[2Kforged", "a\\x1b[2Kforged"),
        ("a\u2028::error::forged", "a\\u2028::error::forged"),
        ("a\x85::error::forged", "a\\x85::error::forged"),
        ("txt.\u202eexe", "txt.\\u202eexe"),
        ("\ufeffowner", "\\ufeffowner"),
        ("tab\there", "tab\\there"),
        ("nbsp\u00a0here", "nbsp\\xa0here"),
        ("\U000e0041tag", "\\U000e0041tag"),
    ],
)
def test_shown_text_prints_on_one_line_as_what_it_holds(text: str, expected: str) -> None:
    assert shown(text) == expected
    assert len(shown(text).splitlines()) == 1


@pytest.mark.parametrize(
    ("character", "described"),
    [
        ("\t", "U+0009 CHARACTER TABULATION"),
        ("\n", "U+000A LINE FEED"),
        ("\ufeff", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
        ("\u0430", "U+0430 CYRILLIC SMALL LETTER A"),
        ("\x01", "U+0001"),
    ],
)
def test_a_character_is_described_by_code_point_and_name(character: str, described: str) -> None:
    assert describe_character(character) == described


def test_unprintable_names_the_first_character_that_does_not_print_and_where() -> None:
    assert unprintable("owner") is None
    assert unprintable("ow\u200bn\ter") == "U+200B ZERO WIDTH SPACE at character 3"
