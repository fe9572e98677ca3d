"""Property-based fuzzing of the spec loader and of `benchfleet synth` (issue 14).

The invariant, for any bytes in a workflow spec file: loading ends in valid specs, or in
SpecProblems whose every problem names the file, a line and a column and prints on lines of
its own; never another exception, never past the deadline; and synth on error writes
nothing to dist/ or clusters/. The inputs are raw bytes, mutations of the committed example
specs (the YAML features an attacker reaches for spliced in: aliases, merge keys, tags, huge
numbers, control characters, escaped line breaks and direction overrides, deep nesting) and
documents built from the spec's own keys, which get past the YAML layer into validation.
Beside them: every character that does not print, escaped into each string field of a
valid spec (never accepted); spec files of any name (refused or loaded, printed on lines of
their own); and model archives mangled as an attacker would (members deflated into bombs,
entries copied over each other, sizes and names rewritten, zip64 end records, flipped
bytes), which contract.archive reads or refuses in bounded memory, never raising. Three
more generators aim at single fields, where a value passes the YAML layer and must be
refused by the field's own rule or render into manifests that Kubernetes and Flux accept
(tests/synth/manifests.py, `tree_violations`): strings with line breaks and control
characters around a plausible name, oversized texts, and the fleet file's fields (strings,
empty and repeated values, other types).

`make test` runs a small budget with a fixed seed (the `ci` profile); `make fuzz` a large
one with a database of what it found (`BENCHFLEET_FUZZ=fuzz`). Every failure it finds
becomes a named case in tests/data/specs/invalid/.
"""

import os
import shutil
import subprocess
import sys
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from contract.archive import UnsafeArchive, check_archive
from synth.cli import cli
from synth.load import load_specs
from synth.main import synth
from synth.problems import SpecProblems
from synth.render import render
from tests.conftest import REPO_ROOT, TEST_DATA
from tests.crafted_archives import (
    BASE,
    BOMBS,
    DirectoryEntry,
    EditableArchive,
    central_directory,
    rezipped,
    with_central_directory,
    zip64_end_claiming,
)
from tests.synth.manifests import UNTAGGED_IMAGE, tree_violations

EXAMPLES = sorted((REPO_ROOT / "specs" / "workflows").glob("*.yaml"))
EXAMPLE_TEXTS = [path.read_text(encoding="utf-8") for path in EXAMPLES]
MINIMAL = (
    (TEST_DATA / "specs" / "valid-minimal.yaml")
    .read_text(encoding="utf-8")
    .replace("clusters: [alpha]", "clusters: [us-east]")
)
"""The smallest valid workflow, in the committed fleet that the examples run in."""

settings.register_profile(
    "ci",
    max_examples=60,
    derandomize=True,
    database=None,
    deadline=2000,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile(
    "fuzz",
    max_examples=5000,
    database=DirectoryBasedExampleDatabase(str(REPO_ROOT / ".cache" / "hypothesis")),
    deadline=2000,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
PROFILE = os.environ.get("BENCHFLEET_FUZZ", "ci")
settings.load_profile(PROFILE)
SYNTH_RUNS = 15 if PROFILE == "ci" else 300
"""Each synth run costs a render, cdk8s included, when the mutation leaves the spec valid."""
FIELD_RUNS = 40 if PROFILE == "ci" else 1000
"""Each field generator renders the values that pass validation (most do not); with no
deadline, as a render (cdk8s) takes seconds on a loaded host."""
ARCHIVE_RUNS = 40 if PROFILE == "ci" else 2000
"""Each mangled archive costs a rebuild of a real one, and a bomb its deflating."""
YAML_RUNS = 5000
"""libFuzzer's runs in `make test` (a few seconds); `make fuzz` runs tests/synth/fuzz_yaml.py
for ten minutes."""

SPLICES = [
    "&a [1, 2]",
    "*a",
    "*undefined",
    "<<: *a",
    "<<: [*a, *a]",
    "!!python/object/apply:os.system ['true']",
    "!!binary aGVsbG8=",
    "!custom x",
    ".inf",
    "-.inf",
    ".nan",
    "9" * 40,
    "-9223372036854775809",
    "0x7fffffffffffffffff",
    "1e400",
    "true",
    "~",
    "''",
    '"\\x00"',
    "\x00",
    "\x1b[31m",
    "\t",
    "\ufeff",
    "[" * 200,
    "{" * 200,
    "- " * 100,
    "? complex key",
    "%YAML 1.1",
    "---",
    "...",
    "..",
    "/etc/passwd",
    "../../../../proc/self/environ",
    "models/examples/../../../../etc/hostname",
    "https://user:pass@evil.example.com/m.pt2",
    " registry.example.com/runner:1 ",
    '"a\\n::error file=specs/clusters.yaml,line=1::forged"',
    '"\\u202egnp.ledom"',
    '"\\u200b"',
    '"\\x85"',
    "\u2028",
    "\u00a0",
    "\u0430",
    "|\n  two\n  lines",
]

UNPRINTABLE = st.characters(categories=["Cc", "Cf", "Zl", "Zp", "Zs", "Co"], exclude_characters=" ")
"""Characters that do not print as themselves: controls, format characters (zero-width,
direction overrides, the byte order mark), line and paragraph separators, spaces other than
U+0020, private use."""


def _spliced(text: str, position: int, splice: str, delete: int) -> str:
    at = position % (len(text) + 1)
    return text[:at] + splice + text[at + delete :]


mutations = st.builds(
    _spliced,
    st.sampled_from([*EXAMPLE_TEXTS, MINIMAL]),
    st.integers(min_value=0, max_value=10_000),
    st.sampled_from(SPLICES) | st.text(max_size=20),
    st.integers(min_value=0, max_value=30),
)

SPEC_KEYS = [
    "id", "description", "owner", "clusters", "environment", "image", "models", "name",
    "file", "url", "image_path", "sha256", "inputs", "shape", "dtype", "benchmark",
    "input_shape", "batch_size", "precision", "quantization", "warmup", "measure",
    "min_iterations", "min_time", "max_iterations", "max_time", "iterations", "repeats",
    "warmup_iterations", "targets", "gpu_type", "gpu_count", "resources", "requests",
    "limits", "cpu", "memory", "spot", "sweep", "matrix", "exclude", "include",
    "scheduling", "priority", "retries", "deadline", "max_parallel", "max_variants", "queue",
    "variants_per_pod",
]  # fmt: skip

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from(["cpu", "nvidia-a100", "fp16", "bf16", "int8-dynamic", "1s", "2Gi", "500m"])
)
documents = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(st.sampled_from(SPEC_KEYS) | st.text(max_size=8), children, max_size=8)
    ),
    max_leaves=40,
)


def _over_minimal(document: object) -> str:
    """`document` as YAML; a mapping goes over the minimal valid spec's, to reach validation."""
    if isinstance(document, dict):
        document = {**yaml.safe_load(MINIMAL), **document}
    return yaml.safe_dump(document)


built = st.builds(_over_minimal, documents)

spec_bytes = (
    st.binary(max_size=2000)
    | mutations.map(lambda text: text.encode("utf-8", "surrogatepass"))
    | built.map(str.encode)
)


def _check_outcome(root: Path, spec: Path) -> None:
    """Load `spec` from `root`: valid, or every problem located in a file of the repository
    and printed on lines of its own (its message, and its hint)."""
    try:
        load_specs(root, [spec])
        event("valid")
    except SpecProblems as problems:
        assert problems.problems, "SpecProblems without a problem"
        # How deep the inputs reach, for `make fuzz`'s statistics: the file or the YAML
        # layer (no field), or the top-level field whose value was wrong.
        field = problems.problems[0].path.split("[")[0].split(".")[0]
        event(f"first problem at: {field or '(file, YAML)'}")
        for problem in problems.problems:
            assert not Path(problem.file).is_absolute(), problem
            assert problem.line >= 1 and problem.column >= 1, problem
            assert problem.message.strip(), problem
            lines = str(problem).split("\n")
            assert len(lines) <= 2 and all(line.isprintable() for line in lines), problem


@given(data=spec_bytes)
@example(data=b"a: &a [*a]\n")
@example(data=b"id: x\n" + b"[" * 10_000)
@example(data=MINIMAL.encode() + b"\x00")
@example(data=b"\xff\xfe")
def test_any_spec_bytes_load_or_give_located_problems(repository: Path, data: bytes) -> None:
    spec = repository / "specs" / "workflows" / "fuzzed.yaml"
    spec.write_bytes(data)
    _check_outcome(repository, spec)


STRING_FIELDS = ["id: ", "description: ", "owner: ", "name: ", "file: ", "gpu_type: "]
"""Where the minimal spec holds a string, as the start of its value."""


@given(
    field=st.sampled_from(STRING_FIELDS),
    character=UNPRINTABLE,
    at=st.integers(min_value=0, max_value=40),
)
def test_a_value_holding_a_character_that_does_not_print_is_never_accepted(
    repository: Path, field: str, character: str, at: int
) -> None:
    """Written as a double-quoted escape, so YAML hands the character over whatever it is."""
    line = next(line for line in MINIMAL.splitlines() if field in line)
    value = line.split(field, 1)[1]
    at %= len(value) + 1
    escaped = value[:at] + f"\\U{ord(character):08x}" + value[at:]
    spec = repository / "specs" / "workflows" / "fuzzed.yaml"
    spec.write_text(MINIMAL.replace(line, line.replace(value, f'"{escaped}"')), encoding="utf-8")
    with pytest.raises(SpecProblems) as raised:
        load_specs(repository, [spec])
    (problem,) = raised.value.problems
    assert f"U+{ord(character):04X}" in problem.message
    assert problem.line == MINIMAL.splitlines().index(line) + 1
    _check_outcome(repository, spec)


file_names = st.text(min_size=1, max_size=24).filter(
    lambda name: "/" not in name and "\x00" not in name and name not in (".", "..")
)


@given(name=file_names)
def test_a_spec_file_of_any_name_loads_or_is_refused_on_lines_that_print(
    repository: Path, name: str
) -> None:
    """Names arrive from pull requests too; one that would not print is refused, and every
    problem, naming the file, prints on lines of its own."""
    spec = repository / "specs" / "workflows" / f"{name}.yaml"
    try:
        spec.write_text(MINIMAL, encoding="utf-8")
    except (OSError, UnicodeEncodeError):  # a name this file system cannot hold
        return
    try:
        _check_outcome(repository, spec)
        if not spec.name.isprintable():
            with pytest.raises(SpecProblems, match="the file's name holds U\\+"):
                load_specs(repository, [spec])
    finally:
        spec.unlink()


def _deflated(archive: EditableArchive, entry: int, size: int) -> bytes:
    name = sorted(archive.members)[entry % len(archive.members)][len(archive.root) :]
    head = archive[name]
    return rezipped(archive, name, (head, b"[],", b""), max(size, len(head)))


def _overlapping(data: bytes, entry: int, copies: int) -> bytes:
    prefix, entries = central_directory(data)
    copied = entries[entry % len(entries)]
    extra = [
        DirectoryEntry(list(copied.fields), copied.name + b"%d" % n, copied.tail)
        for n in range(copies)
    ]
    return with_central_directory(prefix, entries + extra)


def _sized(data: bytes, entry: int, size: int) -> bytes:
    prefix, entries = central_directory(data)
    entries[entry % len(entries)].fields[8 + size % 2] = size % (1 << 32)
    return with_central_directory(prefix, entries)


def _renamed(data: bytes, entry: int, name: str) -> bytes:
    prefix, entries = central_directory(data)
    chosen = entries[entry % len(entries)]
    chosen.name = chosen.name.split(b"/", 1)[0] + b"/" + name.encode("utf-8", "surrogatepass")
    return with_central_directory(prefix, entries)


def _flipped(data: bytes, at: int, byte: int) -> bytes:
    changed = bytearray(data)
    changed[-(at % min(len(data), 4096)) - 1] = byte
    return bytes(changed)


entries_ = st.integers(min_value=0, max_value=64)
archive_mutations = st.one_of(
    st.builds(
        _deflated, st.just(EditableArchive(BASE.read_bytes())), entries_,
        st.integers(min_value=0, max_value=8 << 20),
    ),
    st.builds(_overlapping, st.just(BASE.read_bytes()), entries_, st.integers(1, 2000)),
    st.builds(_sized, st.just(BASE.read_bytes()), entries_, st.integers(0, (1 << 33) - 1)),
    st.builds(_renamed, st.just(BASE.read_bytes()), entries_, st.text(max_size=600)),
    st.builds(_flipped, st.just(BASE.read_bytes()), st.integers(0, 4095), st.integers(0, 255)),
    st.builds(zip64_end_claiming, st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
    st.sampled_from(BOMBS).map(lambda bomb: bomb.build()),
)  # fmt: skip


@settings(max_examples=ARCHIVE_RUNS)
@given(data=archive_mutations)
def test_any_mangled_model_archive_is_read_or_refused_in_bounded_memory(data: bytes) -> None:
    """Zip containers as an attacker edits them (members compressed into bombs, entries
    copied over each other, sizes and names rewritten, the end record's claims, bytes
    flipped): check_archive accepts, or refuses in sentences that print on one line, and
    never holds more than the file and a few MiB."""
    tracemalloc.start()
    try:
        check_archive(data)
        event("accepted")
    except UnsafeArchive as refused:
        event("refused")
        assert refused.problems and all(p.isprintable() for p in refused.problems), refused
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < len(data) + (8 << 20)


@pytest.fixture(scope="module")
def repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed fleet and models, with no workflow: mutated examples that stay valid
    get past the fleet's references into the cross-field checks."""
    root = tmp_path_factory.mktemp("fuzz-repo")
    (root / "specs" / "workflows").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "specs" / "clusters.yaml", root / "specs" / "clusters.yaml")
    shutil.copytree(REPO_ROOT / "models", root / "models")
    return root


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository with the example specs and models, synthesized once."""
    root = tmp_path_factory.mktemp("fuzz-synth")
    for folder in ("specs", "models"):
        shutil.copytree(REPO_ROOT / folder, root / folder)
    synth(root)
    return root


def _tree(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for folder in ("dist", "clusters")
        for path in sorted((root / folder).rglob("*"))
        if path.is_file()
    }


@settings(max_examples=SYNTH_RUNS)
@given(text=mutations)
def test_synth_on_a_mutated_spec_succeeds_or_changes_nothing(synthesized: Path, text: str) -> None:
    """The whole command, as CI runs it: exit 0, or exit 1 with located problems and dist/
    and clusters/ untouched. A success is undone, so every example starts from the same tree."""
    target = synthesized / "specs" / "workflows" / "cpu-smoke.yaml"
    original = target.read_bytes()
    before = _tree(synthesized)
    target.write_bytes(text.encode("utf-8", "surrogatepass"))
    try:
        result = CliRunner().invoke(cli, ["--root", str(synthesized), "synth"])
        assert result.exit_code in (0, 1), result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), result.output
        if result.exit_code == 1:
            assert _tree(synthesized) == before
            assert "problem" in result.stderr
    finally:
        target.write_bytes(original)
        if _tree(synthesized) != before:
            synth(synthesized)


LEAN_START = "import subprocess, sys; sys.exit(subprocess.run(sys.argv[1:]).returncode)"
"""Starts its arguments as a process of their own: libFuzzer's memory limit is on the peak
resident memory the kernel counts for its process, which begins at what the forking
process held (a test-suite's worker: 4.2 GB once, so the fuzzer stopped at once, "out of
memory"); this small interpreter forks it instead."""


@pytest.mark.slow
def test_the_coverage_guided_yaml_fuzzer_finds_nothing_in_a_short_seeded_run(
    tmp_path: Path,
) -> None:
    """tests/synth/fuzz_yaml.py under libFuzzer: a crash (any exception but a located
    YamlSyntaxError) ends it with a non-zero status and the input that caused it."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for seed in (REPO_ROOT / "specs" / "workflows").glob("*.yaml"):
        shutil.copy(seed, corpus / seed.name)
    # What it finds is written beside the corpus, never into the repository.
    fuzzer = [sys.executable, "-m", "tests.synth.fuzz_yaml", f"-runs={YAML_RUNS}", "-seed=1",
              f"-artifact_prefix={tmp_path}/", str(corpus)]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", LEAN_START, *fuzzer],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"Done {YAML_RUNS} runs" in done.stderr


# Single fields: the values a careless or hostile author puts where a name or a text goes.

AROUND = ["\n", "\r\n", "\r", "\t", " ", "\x00", "\x1b", "\x7f", "\x85", "\u2028", "\u00a0",
          "\ufeff", "\u200b", "/", ":", "..", "$"]  # fmt: skip
"""Characters that hide at a name's end or start: YAML lets the first ones in only as
escapes or block scalars (`id: |` ends in a line break), the others as they are."""

PLAUSIBLE = ["gpu-comparison", "t4", "us-east", "dev", "main", "5m", "Tesla-T4", "spot",
             "10.0.0.1/32", "registry.example.com/r:1", "a" * 63, "ml@example.com"]  # fmt: skip

texts_around_names = st.builds(
    lambda name, extra, where: (name + extra, extra + name, name[:2] + extra + name[2:])[where],
    st.sampled_from(PLAUSIBLE),
    st.sampled_from(AROUND) | st.text(max_size=3),
    st.integers(min_value=0, max_value=2),
)
oversized_texts = st.builds(
    lambda chunk, size: chunk * (size // len(chunk)),
    st.sampled_from(["x", "é", "ab c", "line\n", "🙂"]),
    st.integers(min_value=50, max_value=300_000),
)
"""Up to 300 KB, the description that used to pass and break the apply."""
hostile_texts = texts_around_names | oversized_texts | st.text(max_size=40)

MINIMAL_DOC = yaml.safe_load(MINIMAL)
SHA = "ab" * 32
WORKFLOW_FIELDS: list[tuple[dict[str, object], tuple[str | int, ...]]] = [
    *((MINIMAL_DOC, loc) for loc in [
        ("id",), ("description",), ("owner",), ("environment",), ("clusters", 0), ("image",),
        ("models", 0, "name"), ("targets", 0, "name"), ("scheduling", "queue"),
        ("scheduling", "priority"),
    ]),
    ({**MINIMAL_DOC, "models": [{"name": "m", "image_path": "/m.pt2", "sha256": SHA}]},
     ("models", 0, "image_path")),
    ({**MINIMAL_DOC, "models": [{"name": "m", "image_path": "/m.pt2", "sha256": SHA}]},
     ("models", 0, "sha256")),
    ({**MINIMAL_DOC, "models": [{"name": "m", "url": "https://e.com/m.pt2", "sha256": SHA}]},
     ("models", 0, "url")),
]  # fmt: skip
"""Where a workflow's strings land in manifests (names, labels, annotations, config.json)."""


def _with(document: object, loc: tuple[str | int, ...], value: object) -> object:
    """A copy of `document` with `value` at `loc` (made, for a mapping's missing key)."""
    if not loc:
        return value
    copy: Any = (
        dict(document)
        if isinstance(document, dict)
        else list(document)
        if isinstance(document, list)
        else {}
    )
    head: Any = loc[0]
    inner = copy[head] if isinstance(copy, list) or head in copy else {}
    copy[head] = _with(inner, loc[1:], value)
    return copy


def _renders_clean(root: Path, files: list[Path] | None) -> None:
    """Load: located problems, or specs whose render (also refused only with located
    problems) Kubernetes and Flux would accept, file names included."""
    try:
        specs = load_specs(root, files)
        rendered = render(specs)
    except SpecProblems as problems:
        event(f"refused at: {problems.problems[0].path.split('[')[0] or '(file)'}")
        for problem in problems.problems:
            assert problem.line >= 1 and problem.column >= 1, problem
            assert "\n" not in problem.path, problem
        return
    event("rendered")
    # An image without tag or digest (:latest) is a warning of synth's by design
    # (docs/synth.md, "Images"), not one of the API server's refusals.
    violations = tree_violations(rendered)
    assert [v for v in violations if not v.endswith(UNTAGGED_IMAGE)] == []


@settings(max_examples=FIELD_RUNS, deadline=None)
@given(field=st.sampled_from(WORKFLOW_FIELDS), value=hostile_texts)
def test_a_hostile_string_in_a_workflow_field_is_refused_or_renders_valid_manifests(
    repository: Path, field: tuple[dict[str, object], tuple[str | int, ...]], value: str
) -> None:
    document, loc = field
    spec = repository / "specs" / "workflows" / "fuzzed.yaml"
    spec.write_text(yaml.safe_dump(_with(document, loc, value)), encoding="utf-8")
    _renders_clean(repository, [spec])


FLEET_DOC = yaml.safe_load((REPO_ROOT / "specs" / "clusters.yaml").read_text(encoding="utf-8"))
FLEET_WORKFLOW = """\
id: fleet-fuzz
description: the fleet's fields reach these pods' node selectors and tolerations
owner: tests
models: [{name: mlp, file: models/examples/tiny-mlp.pt2}]
benchmark: {inputs: [{shape: [64]}]}
targets: [{gpu_type: nvidia-t4, spot: true}, {gpu_type: nvidia-a100}, {gpu_type: cpu}]
"""
FLEET_STRINGS = [
    ("git", "url"), ("git", "branch"), ("git", "interval"), ("git", "secret_name"), ("image",),
    ("environments", 0), ("priority_classes", "high", "description"),
    ("clusters", 0, "name"), ("clusters", 0, "region"), ("clusters", 0, "api_server_cidrs", 0),
    ("clusters", 0, "spot", "node_selector", "node-type"),
    ("clusters", 0, "spot", "tolerations", 0, "key"),
    ("clusters", 0, "spot", "tolerations", 0, "value"),
    ("clusters", 0, "spot", "tolerations", 0, "effect"),
    ("clusters", 0, "kueue", "cluster_queue"),
    ("clusters", 1, "node_labels", "nvidia-t4", "nvidia.com/gpu.product"),
]  # fmt: skip
"""Where the fleet file's strings land: the Flux objects, namespaces, pods' placement."""
FLEET_LISTS = [
    ("environments",), ("clusters",), ("clusters", 0, "device_types"),
    ("clusters", 0, "api_server_cidrs"), ("clusters", 0, "spot", "tolerations"),
]  # fmt: skip
"""Lists used as sets: a repeated entry must be refused, not counted twice or dropped."""


def _at(document: object, loc: tuple[str | int, ...]) -> Any:
    for part in loc:
        document = document[part]  # type: ignore[index]
    return document


fleet_values = hostile_texts | scalars | st.sampled_from([[], {}, [None], {"": ""}])
fleet_edits = (
    st.tuples(st.sampled_from(FLEET_STRINGS), fleet_values).map(
        lambda edit: _with(FLEET_DOC, *edit)
    )
    | st.sampled_from(FLEET_LISTS).map(
        lambda loc: _with(FLEET_DOC, loc, [*_at(FLEET_DOC, loc), _at(FLEET_DOC, loc)[0]])
    )
    | st.tuples(st.sampled_from(["node-type", "gpu-type"]), hostile_texts).map(
        lambda edit: (
            _with(FLEET_DOC, ("clusters", 0, "spot", "node_selector"), {edit[1]: "x"})
            if edit[0] == "node-type"
            else _with(FLEET_DOC, ("clusters", 1, "node_labels", "nvidia-t4"), {edit[1]: "T4"})
        )
    )
)


@pytest.fixture(scope="module")
def fleet_repository(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The committed models and one workflow whose pods use every placement the fleet
    describes (spot, node labels); each example writes its own fleet file."""
    root = tmp_path_factory.mktemp("fuzz-fleet")
    (root / "specs" / "workflows").mkdir(parents=True)
    (root / "specs" / "workflows" / "fleet-fuzz.yaml").write_text(FLEET_WORKFLOW, "utf-8")
    shutil.copytree(REPO_ROOT / "models", root / "models")
    return root


@settings(max_examples=FIELD_RUNS, deadline=None)
@given(fleet=fleet_edits)
def test_a_hostile_fleet_field_is_refused_or_renders_valid_manifests(
    fleet_repository: Path, fleet: object
) -> None:
    path = fleet_repository / "specs" / "clusters.yaml"
    path.write_text(yaml.safe_dump(fleet), encoding="utf-8")
    _renders_clean(fleet_repository, None)
