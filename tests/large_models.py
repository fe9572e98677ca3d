"""The workflow that measures the models of real size (models/large.py: a ResNet-50, ~100 MB,
and a BERT-base encoder, ~440 MB; exported once per test session, tests/conftest.py) with
tiny-mlp beside them: the runner's memory with a tiny model is what torch and the runner
take whatever the model.

ResNet-50 comes from an OCI registry (`oci`), BERT-base from the company's https server
(`url`, `size` and `ca_bundle`), each with the `models:` entry the export printed.
"""

import html
import json
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Final

from click.testing import Result

from contract.records import StoredVariant
from contract.result import OkResult
from exporter.entry import OCI_PLACEHOLDER
from models.large import BERT, RESNET, LargeModel

WORKFLOW: Final = "real-sizes"
BASELINE: Final = "tiny-mlp"
CA_BUNDLE: Final = "certs/company-ca.pem"
MOST_RSS_PER_BYTE: Final = 2.5
"""The runner's peak memory for a model, above what it takes for tiny-mlp, per byte of the
model's .pt2 (fp32): the goal, met at 1.1-1.5 (docs/decisions/runner.md)."""


def resources(memory: str) -> str:
    """A pod's resources: one CPU, so one thread. On this host's two shared cores (the other
    xdist worker beside it, and more) a 2-thread pod's OpenMP threads spin at every barrier
    while the other waits for a core: ResNet-50's forward took 7-12x the CPU time so under
    load (docs/decisions/tests.md). With one CPU inductor also compiles in the pod's own
    process, not in a pool of workers that each import torch. Nothing asserted depends on
    the thread count."""
    return f"{{requests: {{cpu: 1, memory: {memory}}}, limits: {{cpu: 1, memory: {memory}}}}}"


def _large_entries(models: dict[str, LargeModel], oci_line: str, names: Iterable[str]) -> str:
    """The entries of `names` among the large models: ResNet-50's from the registry
    (`oci_line`, as `make push-model` printed it) and BERT-base's from the company's
    server."""
    entries = {
        RESNET: models[RESNET].entry.replace(OCI_PLACEHOLDER, oci_line),
        BERT: models[BERT].entry + f"    ca_bundle: {CA_BUNDLE}\n",
    }
    return "".join(entries[name] for name in names)


def spec(models: dict[str, LargeModel], oci_line: str) -> str:
    """The workflow: tiny-mlp, ResNet-50 from the registry, BERT-base from the company's
    server; one CPU pod each."""
    return f"""\
id: {WORKFLOW}
description: models of real size, from a registry and from the company's https server
owner: ml-platform@example.com
clusters: [us-east]
models:
  - name: {BASELINE}
    file: models/examples/tiny-mlp.pt2
    inputs: [{{shape: [64]}}]
{_large_entries(models, oci_line, (RESNET, BERT))}benchmark:
  batch_size: 1
  warmup: {{min_iterations: 1, min_time: 0s}}
  measure: {{min_iterations: 3, min_time: 0s, max_time: 20s}}
targets:
  - gpu_type: cpu
    resources: {resources("3Gi")}
scheduling:
  deadline: 30m
"""


SWEEP: Final = "real-sweep"
EXAMPLES: Final = {
    BASELINE: "[64]",
    "tiny-cnn": "[3, 64, 64]",
    "tiny-transformer": "[32, 16]",
}
"""The example models (models/examples/) and each one's input shape per sample."""
PRECISIONS: Final = ("fp32", "bf16")
QUANTIZATIONS: Final = ("none", "int8-dynamic")
RUNTIMES: Final = ("eager", "inductor", "aotinductor", "onnxruntime")
CONVERTED: Final = MappingProxyType(
    {"inductor": PRECISIONS, "aotinductor": PRECISIONS, "onnxruntime": ("fp32",)}
)
"""The precisions each runtime but eager runs a model at, unquantized: each that it takes on
a CPU (ONNX Runtime's CPU provider has no bf16 kernels, and neither it nor the AOTInductor
package runs torchao's quantized modules the way eager does: int8-dynamic runs eager)."""
ONE_COMPILE: Final = MappingProxyType({BERT: (("inductor", "fp32"),)})
"""Models converted once only, fp32 by inductor, rather than as CONVERTED says: BERT-base's
other conversions (aotinductor at fp32 and bf16, onnxruntime at fp32; a pod of them and
eager took 43 CPU s and 3.8 GiB at its peak, 2026-12-06) would prove again, on the
test-suite's time, what ResNet-50's prove of a model of real size
(docs/decisions/tests.md)."""


def _conversions(model: str) -> tuple[tuple[str, str], ...]:
    """The runtimes but eager and the precisions `model` is converted at in the sweep."""
    if model in ONE_COMPILE:
        return ONE_COMPILE[model]
    return tuple((runtime, p) for runtime, precisions in CONVERTED.items() for p in precisions)


def variants_per_model(model: str) -> int:
    """`model`'s variants in the sweep: precision x quantization eager, and its
    conversions."""
    return len(PRECISIONS) * len(QUANTIZATIONS) + len(_conversions(model))


def _runtime_axis(names: Iterable[str]) -> str:
    """The sweep's runtime axis and the exclude entries that leave each model the
    conversions `_conversions` names."""
    excluded = [
        f"{{precision: {p}, quantization: {q}, runtime: {runtime}}}"
        for runtime in RUNTIMES[1:]
        for p in PRECISIONS
        for q in QUANTIZATIONS
        if q != "none" or p not in CONVERTED[runtime]
    ] + [
        f"{{model: {name}, precision: {p}, quantization: none, runtime: {runtime}}}"
        for name in names
        for runtime in RUNTIMES[1:]
        for p in CONVERTED[runtime]
        if name in ONE_COMPILE and (runtime, p) not in ONE_COMPILE[name]
    ]
    return f"    runtime: [{', '.join(RUNTIMES)}]\n  exclude:\n" + "".join(
        f"    - {entry}\n" for entry in excluded
    )


def sweep_spec(
    models: dict[str, LargeModel],
    oci_line: str,
    names: Sequence[str],
    *,
    models_per_pod: int = 1,
) -> str:
    """The sweep over `names` (of EXAMPLES, RESNET, BERT): precision x quantization eager,
    and each model's conversions to the other runtimes (`_conversions`); each model's variants in
    one pod (with `models_per_pod` models' in each), measured in interleaved rounds, so each
    comparison of a model's configurations is paired and its start-up and load are paid
    once."""
    example_entries = "".join(
        f"  - name: {name}\n"
        f"    file: models/examples/{name}.pt2\n"
        f"    inputs: [{{shape: {shape}}}]\n"
        for name, shape in EXAMPLES.items()
        if name in names
    )
    large = [name for name in names if name not in EXAMPLES]
    per_pod = max(variants_per_model(name) for name in names) * models_per_pod
    return f"""\
id: {SWEEP}
description: which configuration serves each model fastest on a CPU
owner: ml-platform@example.com
clusters: [us-east]
models:
{example_entries}{_large_entries(models, oci_line, large)}benchmark:
  batch_size: 1
  interleave: true
  warmup: {{min_iterations: 1, min_time: 0s}}
  measure: {{min_iterations: 8, max_iterations: 8, min_time: 0s, max_time: 4s}}
targets:
  - gpu_type: cpu
    resources: {resources("8Gi")}
sweep:
  matrix:
    precision: [{", ".join(PRECISIONS)}]
    quantization: [{", ".join(QUANTIZATIONS)}]
{_runtime_axis(names)}scheduling:
  variants_per_pod: {per_pod}
  deadline: 60m
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


def check_sweep_reports(
    collector: Callable[..., Result],
    folder: Path,
    cluster: str,
    models: Iterable[str],
) -> None:
    """The sweep's report (`collector`: the collector command with these arguments) in
    text, JSON and HTML answers, for each of `models` on the CPU target of `cluster`, which
    configuration is fastest within its accuracy gate, by how much (a paired ratio with its
    interval) and how sure; every variant's accuracy was measured, and none outside its gate
    is named best."""
    text, document = (_reported(collector, "--format", kind) for kind in ("text", "json"))
    _reported(collector, "--format", "html", "--output", str(folder / "report.html"))
    page = (folder / "report.html").read_text(encoding="utf-8")
    print(text)  # the report a team reads: shown with -s
    report = json.loads(document)
    assert not report["failures"], report["failures"]
    states = {row["variant_id"]: row["accuracy"]["state"] for row in report["variants"]}
    expected = set(models)
    configurations = {model: variants_per_model(model) for model in expected}
    assert len(states) == sum(configurations.values())
    assert set(states.values()) <= {"passed", "accuracy_failed"}, "every accuracy measured"
    answers = {answer["model"]: answer for answer in report["answers"]}
    assert set(answers) == expected
    for model, answer in answers.items():
        assert (answer["cluster"], answer["target"]) == (cluster, "cpu")
        assert answer["configurations"] == configurations[model]
        assert answer["accuracy"] == "passed", answer["sentence"]
        assert states[answer["best_variant_id"]] == "passed", "never best outside its gate"
        runner_up = answer["runner_up"]
        assert runner_up is not None, answer["sentence"]
        ratio = runner_up["ratio"]
        assert ratio["paired"], "the best and the runner-up shared a pod and its rounds"
        assert ratio["low"] <= ratio["value"] <= ratio["high"]
        for faster in answer["faster_outside_gate"]:
            assert states[faster["variant_id"]] == "accuracy_failed"
        assert isinstance(runner_up["sure"], bool)
        sentence = answer["sentence"]
        assert sentence.startswith(f"{model} on cpu ({cluster}): fastest within its accuracy")
        assert runner_up["configuration"] in sentence
        assert re.search(r"\d[\d.]*x-\d[\d.]*x", sentence), "by how much: a ratio's interval"
        assert sentence in text
        assert html.escape(sentence) in page


def _reported(collector: Callable[..., Result], *arguments: str) -> str:
    done = collector("report", "--workflow", SWEEP, *arguments)
    assert done.exit_code == 0, done.output
    return done.output


def check_runtimes_named(variants: Iterable[StoredVariant]) -> None:
    """Every stored result names its runtime, what ran (`applied.runtime_proof`: ONNX
    Runtime's provider, AOTInductor's package), its conversion time (none for eager) and
    its accuracy."""
    for variant in variants:
        result = variant.result
        assert isinstance(result, OkResult) and result.variant is not None, variant.explanation
        runtime, applied = result.variant.runtime, result.applied
        assert applied is not None and applied.runtime_proof, (runtime, applied)
        assert result.timings is not None
        converting_s = result.timings.converting_s
        assert (converting_s is None) == (runtime == "eager"), (runtime, converting_s)
        if runtime == "onnxruntime":
            assert "CPUExecutionProvider" in applied.runtime_proof
        assert result.accuracy is not None and result.accuracy.max_rel_error is not None
