"""The workflow that measures the models of real size (models/large.py: a ResNet-50, ~100 MB,
and a BERT-base encoder, ~440 MB; exported once per test session, tests/conftest.py) with
tiny-mlp beside them: the runner's memory with a tiny model is what torch and the runner
take whatever the model.

ResNet-50 comes from an OCI registry (`oci`), BERT-base from the company's https server
(`url`, `size` and `ca_bundle`), each with the `models:` entry the export printed.
"""

from collections.abc import Iterable
from typing import Final

from contract.records import StoredVariant
from contract.result import OkResult
from exporter.entry import OCI_PLACEHOLDER
from models.large import BERT, RESNET, LargeModel

WORKFLOW: Final = "real-sizes"
BASELINE: Final = "tiny-mlp"
CA_BUNDLE: Final = "certs/company-ca.pem"
MOST_RSS_PER_BYTE: Final = 2.5
"""The runner's peak memory for a model, above what it takes for tiny-mlp, per byte of the
model's .pt2 (fp32): the goal, met at 1.1-1.5 (docs/runner.md)."""


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
