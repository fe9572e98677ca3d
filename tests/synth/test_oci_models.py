"""`oci` models: an image volume per model, mounted read-only where the runner reads it, in
manifests valid at the cluster's Kubernetes version; the variant is the `.pt2`'s, not the
artifact's."""

import os
from pathlib import Path, PurePosixPath
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from contract.config import CONFIG_FILE, OCI_MODEL_PATH_ENV, OCI_MODELS_DIR, RunConfig
from contract.weights import LayerRecord
from synth.load import load_specs
from synth.render import render
from tests.conftest import REPO_ROOT
from tests.synth.conftest import WriteSpec
from tests.synth.manifests import objects, rule_violations

GOLDEN = REPO_ROOT / "tests" / "golden" / "oci-model" / "workloads.yaml"
BIG = "registry.example.com/models/big@sha256:" + "ab" * 32
OTHER = "registry.example.com/models/other@sha256:" + "ef" * 32

SPEC = f"""\
id: oci
description: d
owner: o
clusters: [beta]
models:
  - name: mlp
    file: models/examples/tiny-mlp.pt2
  - name: big
    oci: {BIG}
    sha256: {"cd" * 32}
  - name: other
    oci: {OTHER}
    oci_file: weights/other.pt2
    sha256: {"1f" * 32}
benchmark:
  inputs: [{{shape: [64]}}]
targets:
  - gpu_type: cpu
  - gpu_type: nvidia-a100
sweep:
  matrix: {{batch_size: [1, 8]}}
  exclude:
    - {{target: a100, model: other}}
"""


def jobs_of(root: Path, spec: Path) -> dict[str, tuple[dict[str, Any], RunConfig]]:
    """Each Job of the workflow by target, with its config.json."""
    files = render(load_specs(root, [spec]))
    found = list(objects(files))
    configs = {
        obj["metadata"]["name"]: RunConfig.model_validate_json(obj["data"][CONFIG_FILE])
        for _, obj in found
        if obj["kind"] == "ConfigMap" and CONFIG_FILE in obj.get("data", {})
    }
    return {
        obj["metadata"]["labels"]["benchfleet.io/target"]: (obj, configs[obj["metadata"]["name"]])
        for _, obj in found
        if obj["kind"] == "Job"
    }


def test_each_oci_model_of_a_job_is_an_image_volume_mounted_read_only(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    jobs = jobs_of(spec_repo, write_spec("oci.yaml", SPEC))
    for target, artifacts in (("cpu", {"big": BIG, "other": OTHER}), ("a100", {"big": BIG})):
        job, config = jobs[target]
        pod = job["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        images = {v["name"]: v["image"] for v in pod["volumes"] if "image" in v}
        assert images == {
            f"oci-{name}": {"reference": reference, "pullPolicy": "IfNotPresent"}
            for name, reference in artifacts.items()
        }
        mounts = {m["name"]: m for m in container["volumeMounts"]}
        for name in artifacts:
            assert mounts[f"oci-{name}"] == {
                "name": f"oci-{name}",
                "mountPath": f"{OCI_MODELS_DIR}/{name}",
                "readOnly": True,
            }
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert env[OCI_MODEL_PATH_ENV] == OCI_MODELS_DIR
        assert {name: (m.source, m.location) for name, m in config.models.items()} == {
            "mlp": ("file", "mlp.pt2"),
            "big": ("oci", "big/model.pt2"),
            **({"other": ("oci", "other/weights/other.pt2")} if "other" in artifacts else {}),
        }
        assert config.models["big"].sha256 == "cd" * 32
        assert rule_violations(job) == []
        # beta records Kubernetes 1.36; 1.35 is the first to mount image volumes by default.
        for version in ("1.35.0", "1.36.0"):
            kubernetes_validate.validate(job, version, strict=True)


def test_a_job_without_oci_models_is_as_before(spec_repo: Path, write_spec: WriteSpec) -> None:
    """No image volume, no OCI_MODEL_PATH: existing Jobs keep their content-hash names."""
    spec = SPEC.replace(
        "    - {target: a100, model: other}",
        "    - {target: a100, model: other}\n    - {target: a100, model: big}",
    )
    job, config = jobs_of(spec_repo, write_spec("oci.yaml", spec))["a100"]
    pod = job["spec"]["template"]["spec"]
    assert set(config.models) == {"mlp"}
    assert not [v for v in pod["volumes"] if "image" in v]
    assert OCI_MODEL_PATH_ENV not in {e["name"] for e in pod["containers"][0]["env"]}


@pytest.mark.parametrize(
    ("edit", "renamed", "same_variants"),
    [
        ((BIG, BIG.replace("ab" * 32, "99" * 32)), {"cpu", "a100"}, True),
        ((BIG, BIG.replace("registry.example.com", "mirror.example.com")), {"cpu", "a100"}, True),
        (("oci_file: weights/other.pt2", "oci_file: other.pt2"), {"cpu"}, True),
        (("sha256: " + "cd" * 32, "sha256: " + "ce" * 32), {"cpu", "a100"}, False),
    ],
)
def test_the_artifact_renames_its_jobs_but_the_pt2_decides_the_variant(
    spec_repo: Path,
    write_spec: WriteSpec,
    edit: tuple[str, str],
    renamed: set[str],
    same_variants: bool,
) -> None:
    """Another registry or digest holding the same .pt2 runs again (the Job's pods differ)
    but measures the same variant, so its results compare with the earlier ones."""
    before = jobs_of(spec_repo, write_spec("oci.yaml", SPEC))
    after = jobs_of(spec_repo, write_spec("oci.yaml", SPEC.replace(*edit)))
    names = {t: (before[t][0]["metadata"]["name"], after[t][0]["metadata"]["name"]) for t in before}
    assert {target for target, (old, new) in names.items() if old != new} == renamed

    def ids(jobs: dict[str, tuple[dict[str, Any], RunConfig]]) -> list[str]:
        return sorted(v.id for _, config in jobs.values() for v in config.variants)

    assert (ids(before) == ids(after)) is same_variants


def test_recorded_layers_reach_the_runner_and_measure_the_same_variants(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    """The runner holds the program to the record synth judged its quantizations by; the
    record says nothing of what a variant measures, so no variant id changes with it."""
    before = jobs_of(spec_repo, write_spec("oci.yaml", SPEC))
    recorded = SPEC.replace(
        f"    sha256: {'cd' * 32}\n",
        f"    sha256: {'cd' * 32}\n    layers: {{linear: {{64x64: 2}}, parameters: 9000}}\n",
    )
    after = jobs_of(spec_repo, write_spec("oci.yaml", recorded))
    for target in ("cpu", "a100"):
        config = after[target][1]
        assert config.models["big"].layers == LayerRecord(linear={"64x64": 2}, parameters=9000)
        assert config.models["mlp"].layers is None
        assert [v.id for v in config.variants] == [v.id for v in before[target][1].variants]


def test_oci_spec_renders_exactly_the_golden_file(spec_repo: Path, write_spec: WriteSpec) -> None:
    """To accept a deliberate change, run with BENCHFLEET_UPDATE_GOLDEN=1 and review the diff."""
    files = render(load_specs(spec_repo, [write_spec("oci.yaml", SPEC)]))
    rendered = files[PurePosixPath("dist/beta/workloads/oci.yaml")]
    if os.environ.get("BENCHFLEET_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(rendered, encoding="utf-8")
    assert rendered == GOLDEN.read_text(encoding="utf-8")
