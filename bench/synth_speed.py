"""How long `make synth` takes, and how much memory, against the floor of merely dumping the
same objects with PyYAML's C dumper.

    python -m bench.synth_speed

Three cases, each timed pair by pair against its floor (A B A B ...):
- the examples;
- a stress set of 1000 distinct models (20 workflows of 50 models, 1000 model ConfigMaps);
- a re-synth of 50 workflows after editing one of them.
"In-process" is `render` alone (imports and the Node.js start paid once, no cache); "command"
is the whole `benchfleet synth` in a fresh process with an empty render cache; the re-synth
is the command after one edit, with the cache the previous run left. Peak RSS is that of the
largest process of the command: Python or the Node.js process cdk8s starts.
"""

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

import yaml

from bench.timing import Pairing, paired, table
from synth.cache import CACHE_DIR
from synth.load import load_specs
from synth.render import render

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 5


def floor(documents: list[object]) -> None:
    yaml.dump_all(documents, Dumper=yaml.CSafeDumper, sort_keys=False)


def documents_of(files: Mapping[PurePosixPath, str]) -> list[object]:
    return [
        document
        for path, text in files.items()
        if path.name != "kustomization.yaml"
        for document in yaml.load_all(text, Loader=yaml.CSafeLoader)
    ]


def command(root: Path, *, cold: bool) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of `benchfleet synth` in a fresh process; `cold`
    empties the render cache first, so every workflow is rendered."""
    if cold:
        shutil.rmtree(root / CACHE_DIR, ignore_errors=True)
    start = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "synth", "--root", str(root), "synth"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(process.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return time.perf_counter() - start, usage.ru_maxrss


def copy_examples(folder: Path) -> Path:
    shutil.copytree(ROOT / "specs", folder / "specs")
    (folder / "models").symlink_to(ROOT / "models", target_is_directory=True)
    return folder


def stress_repo(folder: Path, workflows: int, models: int) -> Path:
    """`workflows` x `models` distinct model files (4 KiB each), one CPU target each."""
    (folder / "specs" / "workflows").mkdir(parents=True)
    shutil.copy(ROOT / "specs" / "clusters.yaml", folder / "specs" / "clusters.yaml")
    (folder / "models").mkdir()
    for w in range(workflows):
        entries = []
        for m in range(models):
            path = folder / "models" / f"w{w}-m{m}.pt2"
            path.write_bytes(os.urandom(4096))
            entries.append(f"  - name: m{m}\n    file: models/{path.name}\n")
        (folder / "specs" / "workflows" / f"stress-{w}.yaml").write_text(
            f"id: stress-{w}\ndescription: stress\nowner: bench\nclusters: [us-east]\n"
            "benchmark:\n  inputs: [{shape: [64]}]\ntargets:\n  - gpu_type: cpu\n"
            f"models:\n{''.join(entries)}",
            encoding="utf-8",
        )
    return folder


def measure(name: str, root: Path) -> tuple[Pairing, Pairing, int]:
    documents = documents_of(render(load_specs(root), root))
    in_process = paired(
        f"{name}, in-process",
        lambda: render(load_specs(root), root),
        lambda: floor(documents),
        ROUNDS,
    )
    runs = [command(root, cold=True) for _ in range(3)]
    seconds = sorted(r[0] for r in runs)[1]
    floor_seconds = in_process.baseline_s
    whole = Pairing(
        f"{name}, command",
        seconds,
        floor_seconds,
        seconds / floor_seconds,
        min(r[0] for r in runs) / floor_seconds,
        max(r[0] for r in runs) / floor_seconds,
    )
    return in_process, whole, max(r[1] for r in runs)


def main() -> None:
    rows: list[Pairing] = []
    memory: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        cases = {
            "examples": copy_examples(Path(scratch) / "examples"),
            "1000 models": stress_repo(Path(scratch) / "stress", 20, 50),
            "50 workflows": stress_repo(Path(scratch) / "fifty", 50, 2),
        }
        for name, root in cases.items():
            in_process, whole, peak = measure(name, root)
            rows += [in_process, whole]
            memory.append(f"{name:<14} peak RSS of the command: {peak / 1024:.0f} MiB")
        fifty = cases["50 workflows"]
        spec = fifty / "specs" / "workflows" / "stress-7.yaml"
        spec.write_text(spec.read_text(encoding="utf-8").replace("stress\n", "edited\n", 1))
        command(fifty, cold=True)
        spec.write_text(spec.read_text(encoding="utf-8").replace("edited\n", "edited again\n", 1))
        seconds, _ = command(fifty, cold=False)
        memory.append(f"re-synth of 50 workflows after editing one: {seconds:.2f} s (command)")
    print(table("synth: render vs dumping the same objects (floor)", "floor", rows))
    print("\n".join(memory))
    print(f"(max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB here)")


if __name__ == "__main__":
    main()
