"""Property-based fuzzing of the spec loader and of `benchfleet synth` (issue 14).

The invariant, for any bytes in a workflow spec file: loading ends in valid specs, or in
SpecProblems whose every problem names the file, a line and a column; never another
exception, never past the deadline; and synth on error writes nothing to dist/ or
clusters/. The inputs are raw bytes, mutations of the committed example specs (the YAML
features an attacker reaches for spliced in: aliases, merge keys, tags, huge numbers,
control characters, deep nesting) and documents built from the spec's own keys, which get
past the YAML layer into validation.

`make test` runs a small budget with a fixed seed (the `ci` profile); `make fuzz` a large
one with a database of what it found (`BENCHFLEET_FUZZ=fuzz`). Every failure it finds
becomes a named case in tests/data/specs/invalid/.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

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
from tests.conftest import REPO_ROOT, TEST_DATA

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
YAML_RUNS = 5000
"""libFuzzer's runs in `make test` (a few seconds); `make fuzz` runs tests/synth/fuzz_yaml.py
for ten minutes."""
"""Each synth run costs a render, cdk8s included, when the mutation leaves the spec valid."""

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
