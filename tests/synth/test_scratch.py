"""A target's `ephemeral-storage` limit against what its pods write to /tmp: a pod compiling
with inductor writes its kernels and a precompiled header there whatever delivers the
model, and a limit below synth.scratch's bound for it would have the pods evicted."""

from pathlib import Path

import pytest

from synth.load import load_specs
from tests.synth.conftest import WriteSpec, problems_in

SHA = "ab" * 32

WORKFLOW = """\
id: compiled
description: d
owner: o
clusters: [beta]
models:
  - name: mlp
{source}
benchmark:
  inputs: [{{shape: [64]}}]
{benchmark}
targets:
  - gpu_type: cpu
    resources:
      requests: {{cpu: 1, memory: 1Gi}}
      limits: {{cpu: 1, memory: 1Gi, ephemeral-storage: {limit}}}
{sweep}"""

SOURCES = {
    "file": "    file: models/examples/tiny-mlp.pt2",
    "image_path": f"    image_path: /opt/models/mlp.pt2\n    sha256: {SHA}",
    "oci": f"    oci: registry.example.com/models/mlp@sha256:{SHA}\n    sha256: {SHA}",
}


def spec(source: str, limit: str, *, benchmark: str = "", sweep: str = "") -> str:
    return WORKFLOW.format(source=SOURCES[source], limit=limit, benchmark=benchmark, sweep=sweep)


@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize(
    ("benchmark", "sweep"),
    [("  runtime: inductor", ""), ("", "sweep:\n  matrix: {runtime: [eager, inductor]}\n")],
)
def test_a_compiled_variant_under_a_small_limit_is_an_error_at_the_limit(
    spec_repo: Path, write_spec: WriteSpec, source: str, benchmark: str, sweep: str
) -> None:
    """Of any delivery kind: a url model was the only one checked."""
    text = spec(source, "10Mi", benchmark=benchmark, sweep=sweep)
    write_spec("compiled.yaml", text)
    (problem,) = problems_in(spec_repo)
    limits = text.splitlines().index("      limits: {cpu: 1, memory: 1Gi, ephemeral-storage: 10Mi}")
    assert (problem.line, problem.path) == (
        limits + 1,
        "targets[0].resources.limits.ephemeral-storage",
    )
    assert problem.message == (
        "target 'cpu' compiles variants with inductor, which needs 1.0 GiB of /tmp for its "
        "generated code, headers and kernels (and torch's caches), more than the target's "
        "ephemeral-storage limit of 10Mi"
    )
    assert problem.hint is not None and problem.hint.startswith("raise the limit to at least 1Gi")


@pytest.mark.parametrize(("limit", "benchmark"), [("10Mi", ""), ("1Gi", "  runtime: inductor")])
def test_eager_pods_or_a_limit_that_holds_the_bound_pass(
    spec_repo: Path, write_spec: WriteSpec, limit: str, benchmark: str
) -> None:
    """An eager pod of a committed model writes nothing to /tmp."""
    write_spec("compiled.yaml", spec("file", limit, benchmark=benchmark))
    (loaded,) = load_specs(spec_repo).workflows
    assert loaded.workflow.targets[0].resources.limits["ephemeral-storage"] == limit
