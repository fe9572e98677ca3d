"""Coverage-guided fuzzing of the spec YAML layer (synth/yaml_source.py) with atheris.

    python -m tests.synth.fuzz_yaml -runs=200000 [-max_total_time=600] [CORPUS_DIR]

libFuzzer mutates bytes towards new branches of libyaml's event reader and of our value
building, counting, depth and number rules. The invariant: every input parses into keys
that hold only characters that print as themselves, on one line, and values that do too
apart from line breaks (no control, format or other line-breaking character gets through,
however it was written: raw, escaped, folded), or
raises YamlSyntaxError whose every error has a line and column of at least 1 and a message
that prints, as a problem, on lines of its own; any other exception, or an error without a
place, is a crash that libFuzzer reports with the input that caused it (put it in
tests/data/specs/invalid/ as a named case). libFuzzer
writes what it finds into the corpus folder: by default .cache/fuzz/yaml/ (ignored by git),
seeded with the committed specs. `make fuzz` runs it long; `make test` runs a short, seeded
pass (tests/synth/test_fuzz.py).
"""

import shutil
import sys
from pathlib import Path

import atheris

with atheris.instrument_imports():
    from synth.problems import Problem
    from synth.yaml_source import YamlSyntaxError, parse_yaml

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "specs" / "workflows"
CORPUS = ROOT / ".cache" / "fuzz" / "yaml"


def one_input(data: bytes) -> None:
    try:
        parsed = parse_yaml(data)
    except YamlSyntaxError as error:
        if not error.errors:
            raise AssertionError("YamlSyntaxError without an error") from error
        for found in error.errors:
            line, column = found.position
            if line < 1 or column < 1 or not found.message.strip():
                raise AssertionError(f"an error without a place: {found}") from error
            shown = str(Problem("f.yaml", line, column, "", found.message, found.hint))
            if not all(part.isprintable() for part in shown.split("\n")):
                raise AssertionError(f"a problem that does not print: {shown!r}") from error
        return
    keys, values = _strings(parsed.data)
    for key in keys:
        if not key.isprintable():
            raise AssertionError(f"a key that does not print: {key!r}")
    for value in values:
        if not value.replace("\n", " ").isprintable():
            raise AssertionError(f"a value that does not print: {value!r}")


def _strings(value: object) -> tuple[list[str], list[str]]:
    """Every key and every string value of a parsed document, walked without recursion."""
    keys: list[str] = []
    values: list[str] = []
    pending = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, str):
            values.append(node)
        elif isinstance(node, dict):
            keys.extend(str(key) for key in node)
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    return keys, values


def main() -> None:
    arguments = list(sys.argv)
    if not any(not argument.startswith("-") for argument in arguments[1:]):
        # libFuzzer adds to its first corpus folder: never the repository's specs/.
        CORPUS.mkdir(parents=True, exist_ok=True)
        for seed in SEEDS.glob("*.yaml"):
            shutil.copy(seed, CORPUS / seed.name)
        arguments.append(str(CORPUS))
    atheris.Setup(arguments, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
