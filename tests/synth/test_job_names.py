"""Job names carry a hash of what the Job runs: an edit re-runs exactly what it changes."""

import os
from pathlib import Path, PurePosixPath

import pytest

from contract.errors import ExitCode
from synth.load import load_specs
from synth.render import render
from tests.conftest import REPO_ROOT
from tests.synth.conftest import WriteSpec
from tests.synth.manifests import objects

GOLDEN = REPO_ROOT / "tests" / "golden" / "image-model"

SPEC = """\
id: names
description: d
owner: o
clusters: [alpha]
image: "registry.example.com/runner@sha256:\\
  2222222222222222222222222222222222222222222222222222222222222222"
models:
  - name: baked
    image_path: /opt/models/baked.pt2
    sha256: cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd
benchmark:
  inputs: [{shape: [64]}]
targets:
  - gpu_type: nvidia-a100
  - gpu_type: nvidia-t4
sweep:
  matrix: {batch_size: [1, 8]}
  include:
    - {target: t4, batch_size: 32}
"""


def job_names(root: Path, spec: Path) -> dict[str, str]:
    files = render(load_specs(root, [spec]))
    return {
        obj["metadata"]["labels"]["benchfleet.io/target"]: obj["metadata"]["name"]
        for _, obj in objects(files)
        if obj["kind"] == "Job"
    }


@pytest.mark.parametrize(
    ("edit", "changed"),
    [
        (("{target: t4, batch_size: 32}", "{target: t4, batch_size: 64}"), {"t4"}),
        (("matrix: {batch_size: [1, 8]}", "matrix: {batch_size: [1, 16]}"), {"a100", "t4"}),
        (("gpu_type: nvidia-t4", "gpu_type: nvidia-t4\n    resources: large"), {"t4"}),
        (("sha256: cdcd", "sha256: efef"), {"a100", "t4"}),
        (("description: d", "description: a better description"), set()),
        (("owner: o", "owner: someone-else"), set()),
        # A gate judges stored numbers: it changes what the Job says, not what it runs.
        (
            ("inputs: [{shape: [64]}]", "inputs: [{shape: [64]}]\n  accuracy: {min_cosine: 0.9}"),
            set(),
        ),
        (("    sha256: cdcd", "    accuracy: {max_abs_error: 0.1}\n    sha256: cdcd"), set()),
    ],
)
def test_an_edit_renames_exactly_the_jobs_it_changes(
    spec_repo: Path, write_spec: WriteSpec, edit: tuple[str, str], changed: set[str]
) -> None:
    before = job_names(spec_repo, write_spec("names.yaml", SPEC))
    after = job_names(spec_repo, write_spec("names.yaml", SPEC.replace(*edit)))
    assert {target for target in before if before[target] != after[target]} == changed


def test_small_spec_renders_exactly_the_golden_files(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    """To accept a deliberate change, run with BENCHFLEET_UPDATE_GOLDEN=1 and review the diff."""
    files = render(load_specs(spec_repo, [write_spec("names.yaml", SPEC)]))
    wanted = {
        PurePosixPath("dist/alpha/workloads/names.yaml"): "workloads.yaml",
        PurePosixPath("clusters/alpha/benchfleet.yaml"): "flux.yaml",
        PurePosixPath("dist/alpha/infrastructure/rbac.yaml"): "rbac.yaml",
    }
    for path, golden in wanted.items():
        if os.environ.get("BENCHFLEET_UPDATE_GOLDEN"):
            (GOLDEN / golden).write_text(files[path], encoding="utf-8")
        assert files[path] == (GOLDEN / golden).read_text(encoding="utf-8"), golden


COMPILED = """\
id: compiled
description: d
owner: o
clusters: [alpha]
models:
  - name: mlp
    file: models/examples/tiny-mlp.pt2
benchmark:
  inputs: [{shape: [64]}]
targets:
  - gpu_type: cpu
sweep:
  matrix: {precision: [fp32, bf16], runtime: [eager, inductor]}
"""


def test_a_spec_moved_from_compile_to_runtime_keeps_its_job_name_and_variant_ids(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    """The names and ids this spec had with `compile: [eager, inductor]`, before the runtime
    axis (commit c6bcc68): a compiled variant's recorded results stay reusable, and its Job
    is not renamed, when the spec says `runtime` instead."""
    spec = write_spec("compiled.yaml", COMPILED)
    assert job_names(spec_repo, spec) == {"cpu": "compiled-cpu-660a92ea3e"}
    workflow = load_specs(spec_repo, [spec]).workflows[0]
    assert [
        (str(v.precision), str(v.runtime), v.variant_id(workflow.workflow.id, {}))
        for v in workflow.variants
    ] == [
        ("fp32", "eager", "v976f2043604b"),
        ("fp32", "inductor", "v01d650476f18"),
        ("bf16", "eager", "v9fa473a3bd85"),
        ("bf16", "inductor", "vcea1edbf638e"),
    ]


def _failing_at_once(root: Path, spec: Path) -> set[int]:
    (job,) = [obj for _, obj in objects(render(load_specs(root, [spec]))) if obj["kind"] == "Job"]
    rules = job["spec"]["podFailurePolicy"]["rules"]
    return {code for rule in rules for code in rule.get("onExitCodes", {}).get("values", [])}


def test_only_a_job_that_converts_its_program_fails_runtime_failed_at_once(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    """runtime_failed repeats on a retry, so such an index fails at once; listing it in the
    policy of Jobs that cannot have it would rename every one of them."""
    compiled = write_spec("compiled.yaml", COMPILED)
    assert ExitCode.RUNTIME_FAILED not in _failing_at_once(spec_repo, compiled)
    # ONNX Runtime's CPU provider takes fp16, not bf16.
    converting_spec = COMPILED.replace("inductor]", "onnxruntime]").replace("bf16", "fp16")
    converting = write_spec("compiled.yaml", converting_spec)
    assert ExitCode.RUNTIME_FAILED in _failing_at_once(spec_repo, converting)
    assert ExitCode.UNSUPPORTED_VARIANT in _failing_at_once(spec_repo, converting)
