"""Property-based fuzzing of the spec loader and of `benchfleet synth` (issue 14).

The invariant, for any bytes in a workflow spec file: loading ends in valid specs, or in
SpecProblems whose every problem names the file, a line and a column; never another
exception, never past the deadline; and synth on error writes nothing to dist/ or
clusters/. The inputs are raw bytes, mutations of the committed example specs (the YAML
features an attacker reaches for spliced in: aliases, merge keys, tags, huge numbers,
control characters, deep nesting) and documents built from the spec's own keys, which get
past the YAML layer into validation. Three more generators aim at single fields, where a
value passes the YAML layer and must be refused by the field's own rule or render into
manifests that Kubernetes and Flux accept (tests/synth/manifests.py, `tree_violations`):
strings with line breaks and control characters around a plausible name, oversized texts,
and the fleet file's fields (strings, empty and repeated values, other types).

`make test` runs a small budget with a fixed seed (the `ci` profile); `make fuzz` a large
one with a database of what it found (`BENCHFLEET_FUZZ=fuzz`). Every failure it finds
becomes a named case in tests/data/specs/invalid/.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from synth.cli import cli
from synth.load import load_specs
from synth.main import synth
from synth.problems import SpecProblems
from synth.render import render
from tests.conftest import REPO_ROOT, TEST_DATA
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
]


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
    """Load `spec` from `root`: valid, or every problem located in a file of the repository."""
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


@given(data=spec_bytes)
@example(data=b"a: &a [*a]\n")
@example(data=b"id: x\n" + b"[" * 10_000)
@example(data=MINIMAL.encode() + b"\x00")
@example(data=b"\xff\xfe")
def test_any_spec_bytes_load_or_give_located_problems(repository: Path, data: bytes) -> None:
    spec = repository / "specs" / "workflows" / "fuzzed.yaml"
    spec.write_bytes(data)
    _check_outcome(repository, spec)


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


def test_the_coverage_guided_yaml_fuzzer_finds_nothing_in_a_short_seeded_run(
    tmp_path: Path,
) -> None:
    """tests/synth/fuzz_yaml.py under libFuzzer: a crash (any exception but a located
    YamlSyntaxError) ends it with a non-zero status and the input that caused it."""
    for seed in (REPO_ROOT / "specs" / "workflows").glob("*.yaml"):
        shutil.copy(seed, tmp_path / seed.name)
    done = subprocess.run(
        [sys.executable, "-m", "tests.synth.fuzz_yaml", f"-runs={YAML_RUNS}", "-seed=1",
         str(tmp_path)],
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
