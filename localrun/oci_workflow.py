"""A small workflow with one model from an OCI artifact, synthesized into a scratch checkout:
what `make e2e-container` and the tests run to prove an `oci` model end to end."""

from pathlib import Path
from typing import Final

from contract.dist import Workload
from localrun.checkout import synthesized_checkout
from localrun.push_model import PushedModel

WORKFLOW: Final = "oci-smoke"
OCI_MODEL: Final = "tiny-cnn"
"""Of the example models, tiny-cnn is pushed as an artifact, tiny-mlp rides in a ConfigMap."""

SPEC: Final = """\
id: oci-smoke
description: tiny-cnn from an OCI artifact on an image volume, tiny-mlp from a ConfigMap
owner: ml-platform@example.com
clusters: [us-east]
models:
  - name: tiny-cnn
    oci: {pinned}
    sha256: {sha256}
    inputs: [{{shape: [3, 64, 64]}}]
  - name: tiny-mlp
    file: models/examples/tiny-mlp.pt2
    inputs: [{{shape: [64]}}]
benchmark:
  batch_size: 2
  warmup: {{min_iterations: 2, min_time: 0.1s}}
  measure: {{min_iterations: 20, min_time: 0.3s, max_time: 10s}}
targets:
  - gpu_type: cpu
scheduling:
  deadline: 30m
"""


def oci_smoke_checkout(root: Path, pushed: PushedModel) -> Workload:
    """A checkout at `root` holding the fleet, the example models and oci-smoke naming
    `pushed`, synthesized; returns its workload in us-east."""
    spec = SPEC.format(pinned=pushed.pinned, sha256=pushed.artifact.model_sha256)
    return synthesized_checkout(root, WORKFLOW, spec)
