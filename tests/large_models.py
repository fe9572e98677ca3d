"""Models of real size for the tests: a ResNet-50 (~100 MB) and a BERT-base encoder (~440 MB)
from models/large.py, exported once per test session by `benchfleet export` as a user runs it
(a process of its own), and the workflow that measures them with tiny-mlp beside them: the
runner's memory with a tiny model is what torch and the runner take whatever the model.

ResNet-50 comes from an OCI registry (`oci`), BERT-base from the company's https server
(`url`, `size` and `ca_bundle`), each with the `models:` entry the export printed.
"""

import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from contract.records import StoredVariant
from contract.result import OkResult
from exporter.entry import OCI_PLACEHOLDER

WORKFLOW: Final = "real-sizes"
RESNET: Final = "resnet50"
BERT: Final = "bert-base"
BASELINE: Final = "tiny-mlp"
BERT_URL: Final = f"https://models.example.com/{BERT}.pt2"
"""Where the spec says BERT is served; a test points the pods at its own server instead."""
CA_BUNDLE: Final = "certs/company-ca.pem"
MOST_RSS_PER_BYTE: Final = 2.5
"""The runner's peak memory for a model, above what it takes for tiny-mlp, per byte of the
model's .pt2 (fp32): the goal, met at 1.1-1.5 (docs/runner.md)."""

_EXPORTS: Final = {
    RESNET: ("models.large:resnet50", ("--input", "3,224,224")),
    BERT: (
        "models.large:bert_base",
        # token ids below the vocabulary, an attention mask and token types below 2
        ("--input", "128:int64:30522", "--input", "128:int64", "--input", "128:int64:2",
         "--url", BERT_URL),
    ),
}  # fmt: skip


@dataclass(frozen=True)
class LargeModel:
    """An exported model and the `models:` entry `benchfleet export` printed for it."""

    path: Path
    entry: str

    @property
    def size(self) -> int:
        return self.path.stat().st_size


def export(name: str, folder: Path, root: Path) -> LargeModel:
    """`benchfleet export` of model `name` into `folder`, as a user runs it in the checkout
    at `root`."""
    factory, arguments = _EXPORTS[name]
    path = folder / f"{name}.pt2"
    done = subprocess.run(
        [sys.executable, "-m", "synth", "export", factory, *arguments, "--out", str(path)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return LargeModel(path, done.stdout)


def export_all(folder: Path, root: Path) -> dict[str, LargeModel]:
    """ResNet-50 and BERT-base, exported into `folder`."""
    return {name: export(name, folder, root) for name in _EXPORTS}


def spec(models: dict[str, LargeModel], oci_line: str) -> str:
    """The workflow: tiny-mlp, ResNet-50 from the registry (`oci_line`, as `make push-model`
    printed it), BERT-base from the company's server; one CPU pod each."""
    resnet = models[RESNET].entry.replace(OCI_PLACEHOLDER, oci_line)
    bert = models[BERT].entry + f"    ca_bundle: {CA_BUNDLE}\n"
    return f"""\
id: {WORKFLOW}
description: models of real size, from a registry and from the company's https server
owner: ml-platform@example.com
clusters: [us-east]
models:
  - name: {BASELINE}
    file: models/examples/tiny-mlp.pt2
    inputs: [{{shape: [64]}}]
{resnet}{bert}benchmark:
  batch_size: 1
  warmup: {{min_iterations: 1, min_time: 0s}}
  measure: {{min_iterations: 3, min_time: 0s, max_time: 20s}}
targets:
  - gpu_type: cpu
    resources: {{requests: {{cpu: 1, memory: 3Gi}}, limits: {{cpu: 2, memory: 3Gi}}}}
scheduling:
  deadline: 30m
"""


def rss_per_byte(
    variants: Iterable[StoredVariant], models: dict[str, LargeModel]
) -> dict[str, float]:
    """Each large model's peak runner memory above tiny-mlp's, per byte of its .pt2, once
    every variant has succeeded; asserts the goal."""
    peaks = {}
    for variant in variants:
        assert variant.state == "succeeded", variant.explanation
        result = variant.result
        assert isinstance(result, OkResult) and result.memory is not None and result.variant
        peaks[result.variant.model] = result.memory.peak_rss_bytes
    ratios = {name: (peaks[name] - peaks[BASELINE]) / models[name].size for name in (RESNET, BERT)}
    assert max(ratios.values()) <= MOST_RSS_PER_BYTE, ratios
    return ratios
