"""The workflows the stand-in's objects are made from, synthesized once per process into a
repository of their own, so that editing the committed examples cannot change what the tests
meet: three models at fp32 and bf16 on CPU (shaped like the cpu-smoke example), and a nightly
run on spot T4s and CPUs through a Kueue queue (shaped like nightly-spot)."""

import atexit
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Final

from synth.main import synth

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
MODELS: Final = """\
models:
  - {name: tiny-mlp, file: models/examples/tiny-mlp.pt2, inputs: [{shape: [64]}]}
  - {name: tiny-cnn, file: models/examples/tiny-cnn.pt2, inputs: [{shape: [3, 64, 64]}]}
"""
SPECS: Final = {
    "cpu-smoke": f"""\
id: cpu-smoke
description: the collector's fixture - three models, fp32 vs bf16, on CPU
owner: tests@example.com
{MODELS}\
  - name: tiny-transformer
    file: models/examples/tiny-transformer.pt2
    inputs: [{{shape: [32, 16]}}]
benchmark:
  batch_size: 4
  warmup: {{min_iterations: 5, min_time: 0.2s}}
  measure: {{min_iterations: 50, min_time: 1s, max_time: 20s}}
targets:
  - gpu_type: cpu
    resources: guaranteed
sweep:
  matrix:
    precision: [fp32, bf16]
scheduling:
  max_parallel: 3
  deadline: 30m
""",
    "nightly-spot": f"""\
id: nightly-spot
description: the collector's fixture - spot T4s and CPUs through a Kueue queue
owner: tests@example.com
environment: prod
clusters: [us-east]
{MODELS}\
targets:
  - name: t4-spot
    gpu_type: nvidia-t4
    spot: true
  - name: cpu-spot
    gpu_type: cpu
    spot: true
    resources:
      requests: {{cpu: 4, memory: 4Gi}}
      limits: {{cpu: 4, memory: 4Gi}}
sweep:
  matrix:
    precision: [fp32, fp16]
    batch_size: [1, 32]
  exclude:
    - {{target: cpu-spot, precision: fp16}}
scheduling:
  max_parallel: 4
  priority: nightly
  retries: 3
  deadline: 2h
  queue: nightly
""",
}


@cache
def fixture_root() -> Path:
    """A repository holding the fleet, the example models and the fixture's dist/."""
    root = Path(tempfile.mkdtemp(prefix="benchfleet-standin-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    (root / "specs" / "workflows").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "specs" / "clusters.yaml", root / "specs" / "clusters.yaml")
    # A copy, not a symlink: synth reads nothing a symlink leads to outside the repository.
    shutil.copytree(REPO_ROOT / "models" / "examples", root / "models" / "examples")
    for workflow, spec in SPECS.items():
        (root / "specs" / "workflows" / f"{workflow}.yaml").write_text(spec, encoding="utf-8")
    synth(root)
    return root
