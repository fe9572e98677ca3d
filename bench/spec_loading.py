"""How much validation costs over merely parsing the YAML.

    python -m bench.spec_loading

Baseline: PyYAML's C loader reading the same files into dicts, the floor for any loader.
Candidate: `load_specs`, which parses with positions (libyaml's C parser, YAML 1.2 types),
validates every field, expands the variants and runs the cross-checks.
"""

import shutil
import tempfile
from pathlib import Path

import yaml

from bench.timing import Pairing, paired, table
from synth.load import load_specs, workflow_files

ROOT = Path(__file__).resolve().parent.parent
STRESS_WORKFLOWS = 50
STRESS_MODELS_PER_WORKFLOW = 20


def parse_only(root: Path) -> None:
    for path in [root / "specs" / "clusters.yaml", *workflow_files(root)]:
        yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)


def stress_repo(folder: Path) -> Path:
    """50 workflows of 20 models each: 1000 distinct model entries, all valid."""
    (folder / "specs" / "workflows").mkdir(parents=True)
    shutil.copy(ROOT / "specs" / "clusters.yaml", folder / "specs" / "clusters.yaml")
    shutil.copytree(ROOT / "models", folder / "models")
    zoo = sorted((ROOT / "models" / "zoo").glob("*.pt2"))
    for number in range(STRESS_WORKFLOWS):
        models = "".join(
            f"  - name: m{index}\n    file: models/zoo/{zoo[index % len(zoo)].name}\n"
            for index in range(STRESS_MODELS_PER_WORKFLOW)
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


def main() -> None:
    rows: list[Pairing] = [
        paired(
            "examples (6 workflows, 172 variants)",
            lambda: load_specs(ROOT),
            lambda: parse_only(ROOT),
            rounds=15,
        )
    ]
    with tempfile.TemporaryDirectory() as folder:
        stress = stress_repo(Path(folder))
        rows.append(
            paired(
                "stress (1000 models, 4000 variants)",
                lambda: load_specs(stress),
                lambda: parse_only(stress),
                rounds=7,
            )
        )
    print(table("spec loading: load_specs vs parse-only", "parse-only", rows))


if __name__ == "__main__":
    main()
