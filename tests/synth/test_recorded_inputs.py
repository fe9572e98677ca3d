"""`benchmark.recorded_inputs`: delivered to the pods as a model is (a committed file in the
models' ConfigMap, an oci artifact as an image volume), named in config.json, in every
variant's id, and held to the models' inputs at validation where synth can read it."""

from pathlib import Path
from typing import Any

import pytest
import torch

from contract.config import CONFIG_FILE, OCI_MODELS_DIR, RECORDED_INPUTS_KEY, RunConfig
from contract.errors import ExitCode
from synth.advice import unchecked
from synth.load import load_specs
from synth.problems import SpecProblems
from synth.render import render
from tests.recordings import frames, write_recording
from tests.synth.conftest import WriteSpec
from tests.synth.manifests import objects
from tests.synth.test_pipeline_stages import POLICY

ARTIFACT = "registry.example.com/recordings/cam@sha256:" + "ab" * 32
SPEC = """\
id: rec
description: replayed frames
owner: tests
clusters: [{cluster}]
models:
  - name: mlp
    file: models/examples/tiny-mlp.pt2
benchmark:
  inputs: [{{shape: [64]}}]
  batch_size: 2
{recorded}targets:
  - gpu_type: cpu
"""


def spec_text(recorded: str = "", cluster: str = "alpha") -> str:
    return SPEC.format(recorded=recorded, cluster=cluster)


def rendered(root: Path, spec: Path) -> tuple[list[dict[str, Any]], RunConfig]:
    """Every object of the workflow's render, and its one Job's config.json."""
    found = [obj for _, obj in objects(render(load_specs(root, [spec])))]
    (config,) = [
        RunConfig.model_validate_json(obj["data"][CONFIG_FILE])
        for obj in found
        if obj["kind"] == "ConfigMap" and CONFIG_FILE in obj.get("data", {})
    ]
    return found, config


def problems(root: Path, spec: Path) -> list[str]:
    with pytest.raises(SpecProblems) as raised:
        load_specs(root, [spec])
    return [str(problem) for problem in raised.value.problems]


def test_a_committed_recording_travels_in_the_models_configmap(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    write_recording(spec_repo / "frames.safetensors", frames("input", 4, (64,)))
    drawn = write_spec("rec.yaml", spec_text())
    drawn_objects, without = rendered(spec_repo, drawn)
    spec = write_spec("rec.yaml", spec_text("  recorded_inputs: {file: frames.safetensors}\n"))
    found, config = rendered(spec_repo, spec)
    key = f"{RECORDED_INPUTS_KEY}.safetensors"
    assert config.recorded_inputs is not None
    assert config.recorded_inputs.source == "file"
    assert config.recorded_inputs.location == key
    (job,) = [obj for obj in found if obj["kind"] == "Job"]
    pod = job["spec"]["template"]["spec"]
    (models,) = [volume for volume in pod["volumes"] if volume["name"] == "models"]
    items = [
        item["key"] for s in models["projected"]["sources"] for item in s["configMap"]["items"]
    ]
    assert sorted(items) == ["mlp.pt2", key]
    bundles = [
        obj for obj in found if obj["kind"] == "ConfigMap" and key in obj.get("binaryData", {})
    ]
    assert len(bundles) == 1
    # Its own exit code fails the index at once: the same recording is refused again.
    (rule,) = [r for r in job["spec"]["podFailurePolicy"]["rules"] if r["action"] == "FailIndex"]
    assert ExitCode.INPUTS_MISMATCH in rule["onExitCodes"]["values"]
    # Only there: a Job that draws its inputs keeps the policy, and the name, it had.
    (drawn_job,) = [obj for obj in drawn_objects if obj["kind"] == "Job"]
    rules = drawn_job["spec"]["podFailurePolicy"]["rules"]
    (rule,) = [r for r in rules if r["action"] == "FailIndex"]
    assert ExitCode.INPUTS_MISMATCH not in rule["onExitCodes"]["values"]
    # Replaying is another measurement than drawing: another variant id.
    assert config.variants[0].id != without.variants[0].id
    assert without.recorded_inputs is None


def test_an_oci_recording_is_an_image_volume_read_at_its_default_path(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    recorded = f"  recorded_inputs: {{oci: {ARTIFACT}, sha256: {'cd' * 32}}}\n"
    found, config = rendered(spec_repo, write_spec("rec.yaml", spec_text(recorded, "beta")))
    assert config.recorded_inputs is not None
    assert config.recorded_inputs.location == f"{RECORDED_INPUTS_KEY}/recorded-inputs.safetensors"
    (job,) = [obj for obj in found if obj["kind"] == "Job"]
    pod = job["spec"]["template"]["spec"]
    images = {v["name"]: v["image"]["reference"] for v in pod["volumes"] if "image" in v}
    assert images == {f"oci-{RECORDED_INPUTS_KEY}": ARTIFACT}
    (container,) = pod["containers"]
    assert {
        "name": f"oci-{RECORDED_INPUTS_KEY}",
        "mountPath": f"{OCI_MODELS_DIR}/{RECORDED_INPUTS_KEY}",
        "readOnly": True,
    } in container["volumeMounts"]


@pytest.mark.parametrize(
    ("tensors", "said"),
    [
        (
            frames("obs", 2, (64,)),
            "specs/workflows/rec.yaml:11:3: benchmark.recorded_inputs: the recorded inputs "
            "hold obs, but model mlp takes input",
        ),
        (
            {"input.0": torch.zeros(64, dtype=torch.int64)},
            "specs/workflows/rec.yaml:11:3: benchmark.recorded_inputs: recorded input input.0 "
            "is int64, but the spec gives model mlp's input 0 as float32",
        ),
    ],
)
def test_a_committed_recording_that_does_not_fit_the_model_is_located(
    spec_repo: Path, write_spec: WriteSpec, tensors: dict[str, torch.Tensor], said: str
) -> None:
    write_recording(spec_repo / "frames.safetensors", tensors)
    spec = write_spec("rec.yaml", spec_text("  recorded_inputs: {file: frames.safetensors}\n"))
    [problem] = problems(spec_repo, spec)
    assert problem.startswith(said)


@pytest.mark.parametrize(
    ("recorded", "said"),
    [
        (
            "{file: frames.safetensors}",
            "benchmark.recorded_inputs.file: frames.safetensors is no recording the runner "
            "reads: its header is not JSON",
        ),
        ("{file: models/examples/tiny-mlp.pt2}", "is not a .safetensors file"),
        ("{url: 'https://example.com/f.safetensors'}", "a recording from url needs sha256"),
        ("{file: frames.safetensors, sha256: " + "0a" * 32 + "}", "not the pinned " + "0a" * 32),
    ],
)
def test_a_recording_synth_refuses_is_located(
    spec_repo: Path, write_spec: WriteSpec, recorded: str, said: str
) -> None:
    (spec_repo / "frames.safetensors").write_bytes(b"\x04\x00\x00\x00\x00\x00\x00\x00nope")
    spec = write_spec("rec.yaml", spec_text(f"  recorded_inputs: {recorded}\n"))
    found = problems(spec_repo, spec)
    assert any(said in problem for problem in found), found


CONTENTS = "{samples: 4, inputs: {input: {shape: [64], dtype: float32}}}"


def test_an_oci_recordings_contents_are_held_to_the_models_and_travel_to_the_runner(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    source = f"oci: {ARTIFACT}, sha256: {'cd' * 32}"
    fits = f"  recorded_inputs: {{{source}, contents: {CONTENTS}}}\n"
    _, config = rendered(spec_repo, write_spec("rec.yaml", spec_text(fits, "beta")))
    assert config.recorded_inputs is not None
    assert config.recorded_inputs.contents is not None
    assert config.recorded_inputs.contents.samples == 4
    wrong = fits.replace("input: {shape: [64]", "obs: {shape: [64]")
    [problem] = problems(spec_repo, write_spec("rec.yaml", spec_text(wrong, "beta")))
    assert problem.startswith(
        "specs/workflows/rec.yaml:11:3: benchmark.recorded_inputs: the recorded inputs hold "
        "obs, but model mlp takes input"
    )


def test_a_committed_recordings_contents_must_be_its_own(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    write_recording(spec_repo / "frames.safetensors", frames("input", 2, (64,)))
    recorded = f"  recorded_inputs: {{file: frames.safetensors, contents: {CONTENTS}}}\n"
    [problem] = problems(spec_repo, write_spec("rec.yaml", spec_text(recorded)))
    assert "benchmark.recorded_inputs.contents: frames.safetensors: it holds {samples: 2" in problem


def test_an_oci_recording_on_a_cluster_that_cannot_mount_it_is_located(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    recorded = f"  recorded_inputs: {{oci: {ARTIFACT}, sha256: {'cd' * 32}}}\n"
    [problem] = problems(spec_repo, write_spec("rec.yaml", spec_text(recorded, "alpha")))
    assert problem.startswith(
        "specs/workflows/rec.yaml:11:26: benchmark.recorded_inputs.oci: an oci recording is "
        "mounted as an image volume"
    )


def test_a_recording_synth_cannot_read_and_whose_contents_are_not_recorded_is_said(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    source = f"oci: {ARTIFACT}, sha256: {'cd' * 32}"
    bare = write_spec("rec.yaml", spec_text(f"  recorded_inputs: {{{source}}}\n", "beta"))
    [said] = [str(problem) for problem in unchecked(load_specs(spec_repo, [bare]))]
    assert said.startswith(
        "specs/workflows/rec.yaml:11:26: warning: benchmark.recorded_inputs.oci: the recorded "
        "inputs cannot be held to the models before their pods"
    )
    recorded = f"  recorded_inputs: {{{source}, contents: {CONTENTS}}}\n"
    assert (
        unchecked(load_specs(spec_repo, [write_spec("rec.yaml", spec_text(recorded, "beta"))]))
        == []
    )


def pipeline_spec(recording: str) -> str:
    """The example policy between its stages, replaying `recording`."""
    head, tail = POLICY.split("targets:", maxsplit=1)
    benchmark = f"benchmark:\n  batch_size: 2\n  recorded_inputs: {{file: {recording}}}\n"
    return f"{head}{benchmark}targets:{tail}"


def test_a_pipelines_recording_is_held_to_its_preprocess_not_its_model(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    """The recording feeds the chain's first program: its samples are what the preprocess
    takes (uint8 HWC frames), which is the model entry's `inputs`; the model's own inputs
    (normalised CHW floats) are a misfit, located as the runner would refuse it."""
    raw = {
        **{f"image.{k}": torch.zeros((32, 32, 3), dtype=torch.uint8) for k in range(2)},
        **frames("state", 2, (7,)),
        **{f"tokens.{k}": torch.zeros(8, dtype=torch.int64) for k in range(2)},
    }
    write_recording(spec_repo / "raw.safetensors", raw)
    load_specs(spec_repo, [write_spec("policy.yaml", pipeline_spec("raw.safetensors"))])
    normalised = {**raw, **frames("image", 2, (3, 32, 32))}
    write_recording(spec_repo / "normalised.safetensors", normalised)
    spec = write_spec("policy.yaml", pipeline_spec("normalised.safetensors"))
    [problem] = problems(spec_repo, spec)
    assert "benchmark.recorded_inputs: recorded input image.0 is float32" in problem
