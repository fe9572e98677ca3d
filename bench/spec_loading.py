"""How much validation costs over merely parsing the YAML, and how fast a hostile spec fails.

    python -m bench.spec_loading

Baseline: PyYAML's C loader reading the same files into dicts, the floor for any loader.
Candidate: `load_specs`, which parses with positions (libyaml's C parser, YAML 1.2 types),
validates every field, expands the variants and runs the cross-checks.

Then the pathological inputs of issue 14, each alone: the time to the error (median of 5)
and the peak of Python's allocations while loading (tracemalloc). Goal: each under 1 s and
100 MiB. These are absolute numbers, not ratios: there is no baseline that fails the same way.

`--smoke` runs every case once, the stress set at 2 workflows of 2 models, for the test-suite
(tests/bench/).
"""

import argparse
import shutil
import statistics
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from bench.timing import Pairing, paired, table
from synth.load import load_specs, workflow_files
from synth.problems import SpecProblems

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Scale:
    """How much the bench runs: `--smoke` runs every case at a size of seconds."""

    examples: int
    stress: int
    """Pairs of the examples' case and of the stress set's."""
    hostile: int
    """Runs of each hostile spec."""
    workflows: int
    models: int
    """Of each stress workflow."""


FULL = Scale(examples=15, stress=7, hostile=5, workflows=50, models=20)
SMOKE = Scale(examples=1, stress=1, hostile=1, workflows=2, models=2)


def parse_only(root: Path) -> None:
    for path in [root / "specs" / "clusters.yaml", *workflow_files(root)]:
        yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)


def stress_repo(folder: Path, scale: Scale) -> Path:
    """`scale.workflows` workflows of `scale.models` models each (50 of 20: 1000 distinct
    model entries), all valid."""
    (folder / "specs" / "workflows").mkdir(parents=True)
    shutil.copy(ROOT / "specs" / "clusters.yaml", folder / "specs" / "clusters.yaml")
    shutil.copytree(ROOT / "models", folder / "models")
    # The zoo's MLPs take the spec's 64 features; its CNNs and transformers refuse them.
    zoo = sorted((ROOT / "models" / "zoo").glob("mlp-*.pt2"))
    for number in range(scale.workflows):
        models = "".join(
            f"  - name: m{index}\n    file: models/zoo/{zoo[index % len(zoo)].name}\n"
            for index in range(scale.models)
        )
        (folder / "specs" / "workflows" / f"stress-{number}.yaml").write_text(
            f"id: stress-{number}\ndescription: stress\nowner: bench\nclusters: [us-east]\n"
            f"benchmark:\n  inputs: [{{shape: [64]}}]\n"
            f"targets:\n  - gpu_type: cpu\n  - gpu_type: nvidia-t4\n"
            f"sweep:\n  matrix: {{batch_size: [1, 8]}}\n"
            f"scheduling: {{max_variants: 100}}\nmodels:\n{models}",
            encoding="utf-8",
        )
    return folder


HEADER = (
    "id: hostile\ndescription: d\nowner: o\nclusters: [us-east]\n"
    "benchmark:\n  inputs: [{shape: [64]}]\ntargets:\n  - gpu_type: cpu\n"
)


def _big_file() -> str:
    return HEADER + "# " + "x" * (10 * 1024 * 1024) + "\n"


def _alias_bomb() -> str:
    """Nine levels of ten aliases each: 10^9 values if expanded."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 10):
        refs = ", ".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{refs}]")
    return HEADER + "\n".join(lines) + "\n"


def _huge_product() -> str:
    """250 models x 10,000 batch sizes x 4 precisions: 10^7 variants if expanded."""
    models = "".join(
        f"  - name: m{index}\n    file: models/examples/tiny-mlp.pt2\n" for index in range(250)
    )
    batches = ", ".join(str(batch) for batch in range(1, 10_001))
    return (
        HEADER
        + f"models:\n{models}"
        + "sweep:\n  matrix:\n    precision: [fp32, fp16, bf16, tf32]\n"
        + f"    batch_size: [{batches}]\n"
    )


def _deep_nesting() -> str:
    return HEADER + "models: " + "[" * 100_000 + "]" * 100_000 + "\n"


HOSTILE: dict[str, Callable[[], str]] = {
    "10 MiB file": _big_file,
    "alias bomb (10^9 values)": _alias_bomb,
    "10^7-variant product": _huge_product,
    "nesting 100,000 deep": _deep_nesting,
}


def _fails(root: Path, spec: Path) -> str:
    """Load `spec`, which must fail; its first problem."""
    try:
        load_specs(root, [spec])
    except SpecProblems as problems:
        return str(problems.problems[0]).splitlines()[0]
    raise AssertionError(f"{spec.name} loaded")


def hostile_rows(folder: Path, rounds: int) -> list[tuple[str, float, float, str]]:
    """(case, median seconds to the error, peak MiB allocated, the first error)."""
    (folder / "specs" / "workflows").mkdir(parents=True)
    shutil.copy(ROOT / "specs" / "clusters.yaml", folder / "specs" / "clusters.yaml")
    shutil.copytree(ROOT / "models" / "examples", folder / "models" / "examples")
    rows = []
    for name, make in HOSTILE.items():
        spec = folder / "specs" / "workflows" / "hostile.yaml"
        spec.write_text(make(), encoding="utf-8")
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            error = _fails(folder, spec)
            times.append(time.perf_counter() - start)
        tracemalloc.start()
        _fails(folder, spec)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rows.append((name, statistics.median(times), peak / 2**20, error))
    return rows


def hostile_table(rows: list[tuple[str, float, float, str]]) -> str:
    lines = [
        "hostile specs: time to the error and peak allocation (goal: < 1 s, < 100 MiB)",
        f"{'case':<28} {'seconds':>8} {'peak MiB':>9}  first error",
    ]
    for name, seconds, peak, error in rows:
        what = error.partition(": ")[2]
        lines.append(f"{name:<28} {seconds:>8.3f} {peak:>9.1f}  {what[:90]}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.spec_loading", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="every case, at a tiny size")
    scale = SMOKE if parser.parse_args().smoke else FULL
    rows: list[Pairing] = [
        paired(
            "examples (6 workflows, 172 variants)",
            lambda: load_specs(ROOT),
            lambda: parse_only(ROOT),
            rounds=scale.examples,
        )
    ]
    with tempfile.TemporaryDirectory() as folder:
        stress = stress_repo(Path(folder), scale)
        entries = scale.workflows * scale.models
        rows.append(
            paired(
                f"stress ({entries} models, {4 * entries} variants)",
                lambda: load_specs(stress),
                lambda: parse_only(stress),
                rounds=scale.stress,
            )
        )
    print(table("spec loading: load_specs vs parse-only", "parse-only", rows))
    with tempfile.TemporaryDirectory() as folder:
        print(hostile_table(hostile_rows(Path(folder), scale.hostile)))


if __name__ == "__main__":
    main()
