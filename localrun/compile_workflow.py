"""A small workflow of compiled variants, synthesized into a scratch checkout: what `make
e2e-container` runs to prove `compile: inductor` in the real container, where the root
filesystem is read-only, the user is not root and only /tmp may be written."""

from pathlib import Path
from typing import Final

from contract.dist import Workload
from localrun.checkout import synthesized_checkout

WORKFLOW: Final = "compile-smoke"

# One pod: tiny-transformer eager and compiled, unquantized and int8-dynamic (torchao's, made
# for torch.compile), interleaved, so that each compiled variant is paired with the eager one.
SPEC: Final = """\
id: compile-smoke
description: tiny-transformer eager and compiled with inductor, with and without int8-dynamic
owner: ml-platform@example.com
clusters: [us-east]
models:
  - name: tiny-transformer
    file: models/examples/tiny-transformer.pt2
    inputs: [{shape: [32, 16]}]
benchmark:
  batch_size: 4
  interleave: true
  warmup: {min_iterations: 5, min_time: 0.2s}
  measure: {min_iterations: 64, min_time: 1s, max_time: 20s}
targets:
  - gpu_type: cpu
    resources: guaranteed
sweep:
  matrix:
    quantization: [none, int8-dynamic]
    runtime: [eager, inductor]
scheduling:
  variants_per_pod: 4
  deadline: 30m
"""


def compile_smoke_checkout(root: Path) -> Workload:
    """A checkout at `root` holding compile-smoke, synthesized; its workload in us-east."""
    return synthesized_checkout(root, WORKFLOW, SPEC)
