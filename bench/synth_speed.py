"""How long `make synth` takes, and how much memory, against the floor of merely dumping the
same objects with PyYAML's C dumper.

    python -m bench.synth_speed

Three cases, each timed pair by pair against its floor (A B A B ...):
- the examples;
- a stress set of 1000 distinct models (20 workflows of 50 real `torch.export` archives of
  about 8 KiB each, bench/stress_models.py);
- a re-synth of 50 workflows after editing one of them.
"In-process" is `render` alone (imports and the Node.js start paid once, no cache); "command"
is the whole `benchfleet synth` in a fresh process with an empty render cache; the re-synth
is the command after one edit, with the cache the previous run left. One more row is a fresh
process that only imports cdk8s, against the stress set's floor. Peak RSS is that of the
command's Python process and of each of the two Node.js processes jsii starts.

`--smoke` runs every step but the examples' case once, at 4 models and 2 workflows, for the
test-suite (tests/bench/), so that the bench cannot break unseen.
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import yaml

from bench.stress_models import write_models
from bench.timing import Pairing, paired, pairing, table
from runner.memory import high_water_bytes, peak_rss_bytes
from synth.cache import CACHE_DIR
from synth.load import load_specs
from synth.render import render

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 5
MIB = 1024 * 1024


def floor(documents: list[object]) -> None:
    yaml.dump_all(documents, Dumper=yaml.CSafeDumper, sort_keys=False)


def documents_of(files: Mapping[PurePosixPath, str]) -> list[object]:
    return [
        document
        for path, text in files.items()
        if path.name != "kustomization.yaml"
        for document in yaml.load_all(text, Loader=yaml.CSafeLoader)
    ]


# Runs the CLI as `python -m benchfleet` would, then writes the process's own peak RSS (bytes) to
# the file named by its first argument: exact, where sampling /proc from outside could miss
# the moment a process peaks while it writes its files. Not getrusage's ru_maxrss: it carries
# over the parent's RSS from before exec (it read 79 MiB, this bench's own, in every case).
_REPORTING_PEAK = """
import atexit, runpy, sys
from pathlib import Path
from runner.memory import peak_rss_bytes
out = Path(sys.argv.pop(1))
atexit.register(lambda: out.write_text(str(peak_rss_bytes()), encoding="ascii"))
runpy.run_module("benchfleet", run_name="__main__", alter_sys=True)
"""


def _synth_process(
    root: Path, *, cold: bool, peak_file: Path | None = None
) -> subprocess.Popen[bytes]:
    """`benchfleet synth` in a fresh process; `cold` empties the render cache first, so that
    every file is rendered; with `peak_file`, the process writes its peak RSS there."""
    if cold:
        shutil.rmtree(root / CACHE_DIR, ignore_errors=True)
    program = ["-m", "benchfleet"] if peak_file is None else ["-c", _REPORTING_PEAK, str(peak_file)]
    return subprocess.Popen(
        [sys.executable, *program, "--root", str(root), "synth"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def command(root: Path, *, cold: bool) -> float:
    """Wall seconds of `benchfleet synth` in a fresh process."""
    start = time.perf_counter()
    process = _synth_process(root, cold=cold)
    assert process.wait() == 0
    return time.perf_counter() - start


@dataclass(frozen=True)
class Peaks:
    """Peak resident memory, bytes."""

    python: int
    # jsii starts two: a relay that Python talks to, and the kernel that runs cdk8s.
    node_relay: int
    node_kernel: int


def _high_water(pid: int) -> int:
    """The process's peak RSS so far; 0 once it is gone."""
    return high_water_bytes(Path(f"/proc/{pid}/status")) or 0


def _children(pid: int) -> list[int]:
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def peak_memory(root: Path) -> Peaks:
    """Peak RSS of a cold synth's Python process (its own report) and of the two Node.js
    processes jsii starts (its child, a relay, and the relay's child, which runs cdk8s), read
    from /proc every 5 ms; a high-water mark, so only a peak in a process's last 5 ms could be
    missed, while Python is still waiting on it. A run of its own, apart from the timed ones,
    because the sampling takes CPU."""
    with tempfile.TemporaryDirectory() as scratch:
        peak_file = Path(scratch) / "peak"
        process = _synth_process(root, cold=True, peak_file=peak_file)
        relay = kernel = 0
        while process.poll() is None:
            for child in _children(process.pid):
                relay = max(relay, _high_water(child))
                for grandchild in _children(child):
                    kernel = max(kernel, _high_water(grandchild))
            time.sleep(0.005)
        assert process.returncode == 0
        return Peaks(int(peak_file.read_text(encoding="ascii")), relay, kernel)


def copy_examples(folder: Path) -> Path:
    shutil.copytree(ROOT / "specs", folder / "specs")
    # A copy, not a symlink: synth reads nothing a symlink leads to outside the repository.
    shutil.copytree(
        ROOT / "models", folder / "models", ignore=shutil.ignore_patterns("*.py", "__pycache__")
    )
    return folder


def stress_repo(folder: Path, workflows: int, models: int) -> Path:
    """A repository of the fleet and `write_stress` workflows."""
    (folder / "specs" / "workflows").mkdir(parents=True)
    shutil.copy(ROOT / "specs" / "clusters.yaml", folder / "specs" / "clusters.yaml")
    write_stress(folder, workflows, models)
    return folder


def write_stress(folder: Path, workflows: int, models: int) -> None:
    """`workflows` x `models` distinct model files (real archives of about 8 KiB each:
    bench/stress_models.py) under models/, and a workflow spec per `models` of them with one
    CPU target, into the repository at `folder`."""
    names = [[f"w{w}-m{m}.pt2" for m in range(models)] for w in range(workflows)]
    write_models(folder / "models", [name for row in names for name in row])
    for w, row in enumerate(names):
        entries = [f"  - name: m{m}\n    file: models/{name}\n" for m, name in enumerate(row)]
        (folder / "specs" / "workflows" / f"stress-{w}.yaml").write_text(
            f"id: stress-{w}\ndescription: stress\nowner: bench\nclusters: [us-east]\n"
            "benchmark:\n  inputs: [{shape: [64]}]\ntargets:\n  - gpu_type: cpu\n"
            f"models:\n{''.join(entries)}",
            encoding="utf-8",
        )


@dataclass(frozen=True)
class Scale:
    """How much the bench runs: `--smoke` runs every step at a size of seconds."""

    rounds: int
    """In-process pairs per case."""
    commands: int
    """Cold commands per case."""
    stress: tuple[int, int]
    """Workflows and models of each of the stress set."""
    workflows: tuple[int, int]
    """Workflows and models of each of the re-synth case."""


FULL = Scale(rounds=5, commands=3, stress=(20, 50), workflows=(50, 2))
SMOKE = Scale(rounds=1, commands=1, stress=(2, 2), workflows=(2, 1))


def measure(name: str, root: Path, scale: Scale) -> tuple[Pairing, Pairing, Peaks]:
    documents = documents_of(render(load_specs(root)))
    in_process = paired(
        f"{name}, in-process",
        lambda: render(load_specs(root)),
        lambda: floor(documents),
        scale.rounds,
    )
    floor_s = in_process.baseline_s
    whole = pairing(
        f"{name}, command",
        [(command(root, cold=True), floor_s) for _ in range(scale.commands)],
    )
    return in_process, whole, peak_memory(root)


def importing_cdk8s() -> float:
    """Wall seconds of a fresh Python process that only imports cdk8s, which starts jsii's
    two Node.js processes and loads the library there: what any synth that renders pays
    first."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import cdk8s"], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.synth_speed", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="every step, at a tiny size")
    scale = SMOKE if parser.parse_args().smoke else FULL
    rows: list[Pairing] = []
    memory: list[str] = []
    stress = f"{scale.stress[0] * scale.stress[1]} models"
    workflows = f"{scale.workflows[0]} workflows"
    with tempfile.TemporaryDirectory() as scratch:
        # The examples' case runs the same steps as the others: the smoke run leaves it out.
        examples = {} if scale == SMOKE else {"examples": copy_examples(Path(scratch) / "ex")}
        cases = examples | {
            stress: stress_repo(Path(scratch) / "stress", *scale.stress),
            workflows: stress_repo(Path(scratch) / "workflows", *scale.workflows),
        }
        for name, root in cases.items():
            in_process, whole, peaks = measure(name, root, scale)
            rows += [in_process, whole]
            if name == stress:
                # Set against the stress set's floor, this shows how far a command that renders
                # with cdk8s is from 4x before it has built anything.
                floor_s = in_process.baseline_s
                rows.append(
                    pairing(
                        f"import cdk8s alone, vs {stress}",
                        [(importing_cdk8s(), floor_s) for _ in range(scale.commands)],
                    )
                )
            memory.append(
                f"{name:<14} peak RSS of the command: Python {peaks.python / MIB:.0f} MiB, "
                f"Node.js relay {peaks.node_relay / MIB:.0f} MiB + "
                f"kernel {peaks.node_kernel / MIB:.0f} MiB"
            )
        edited = cases[workflows]
        spec = edited / "specs" / "workflows" / f"stress-{min(7, scale.workflows[0] - 1)}.yaml"
        spec.write_text(spec.read_text(encoding="utf-8").replace("stress\n", "edited\n", 1))
        command(edited, cold=True)
        spec.write_text(spec.read_text(encoding="utf-8").replace("edited\n", "edited again\n", 1))
        seconds = command(edited, cold=False)
        memory.append(f"re-synth of {workflows} after editing one: {seconds:.2f} s (command)")
    print(table("synth: render vs dumping the same objects (floor)", "floor", rows))
    print("\n".join(memory))
    print(f"(max RSS {peak_rss_bytes() / MIB:.0f} MiB here)")


if __name__ == "__main__":
    main()
