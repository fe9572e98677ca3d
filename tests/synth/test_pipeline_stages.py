"""A model's preprocess and postprocess: delivered like a model (a committed file in the model
ConfigMap, an oci artifact as its own image volume, a url downloaded into /tmp), named in
config.json, while a model without stages renders as before."""

import hashlib
from pathlib import Path

import kubernetes_validate  # type: ignore[import-untyped]

from contract.config import ProgramConfig
from contract.errors import ExitCode
from synth.load import load_specs
from synth.render import render
from tests.synth.conftest import WriteSpec
from tests.synth.manifests import objects, rule_violations
from tests.synth.test_oci_models import jobs_of

ARTIFACT = "registry.example.com/models/post@sha256:" + "ab" * 32
SHA = "cd" * 32
POLICY = f"""\
id: policy
description: d
owner: o
clusters: [beta]
models:
  - name: policy
    file: models/policy/tiny-policy.pt2
    inputs:
      - {{shape: [32, 32, 3], dtype: uint8}}
      - {{shape: [7]}}
      - {{shape: [8], dtype: int64}}
    preprocess:
      file: models/policy/tiny-policy-preprocess.pt2
    postprocess:
      oci: {ARTIFACT}
      sha256: {SHA}
targets:
  - gpu_type: cpu
"""

PLAIN = (
    POLICY.split("    preprocess:", maxsplit=1)[0].replace(
        "      - {shape: [32, 32, 3], dtype: uint8}", "      - {shape: [3, 32, 32]}"
    )
    + "targets:\n  - gpu_type: cpu\n"
)
"""The policy's model alone, on what its preprocess would hand it."""


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_config_json_names_each_stage_and_the_pod_gets_its_file(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    job, config = jobs_of(spec_repo, write_spec("policy.yaml", POLICY))["cpu"]
    model = config.models["policy"]
    preprocess = spec_repo / "models" / "policy" / "tiny-policy-preprocess.pt2"
    assert model.preprocess == ProgramConfig(
        source="file", location="policy.preprocess.pt2", sha256=_sha(preprocess)
    )
    assert model.postprocess == ProgramConfig(
        source="oci", location="policy.postprocess/model.pt2", sha256=SHA
    )
    pod = job["spec"]["template"]["spec"]
    images = {v["name"]: v["image"]["reference"] for v in pod["volumes"] if "image" in v}
    assert images == {"postprocess-policy": ARTIFACT}
    mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    assert mounts["postprocess-policy"] == "/oci-models/policy.postprocess"
    assert rule_violations(job) == []
    kubernetes_validate.validate(job, "1.36.0", strict=True)


def test_the_stage_files_travel_in_the_model_configmap(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    spec = write_spec("policy.yaml", POLICY)
    found = [obj for _, obj in objects(render(load_specs(spec_repo, [spec])))]
    carried = {
        key for obj in found if obj["kind"] == "ConfigMap" for key in obj.get("binaryData", {})
    }
    assert carried == {"policy.pt2", "policy.preprocess.pt2"}
    (job,) = [obj for obj in found if obj["kind"] == "Job"]
    (volume,) = [v for v in job["spec"]["template"]["spec"]["volumes"] if v["name"] == "models"]
    mounted = {
        item["path"]
        for source in volume["projected"]["sources"]
        for item in source["configMap"]["items"]
    }
    assert mounted == {"policy.pt2", "policy.preprocess.pt2"}


def test_a_model_without_stages_writes_no_stage_keys(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    job, config = jobs_of(spec_repo, write_spec("policy.yaml", PLAIN))["cpu"]
    written = config.models["policy"].model_dump_json()
    assert "preprocess" not in written and "postprocess" not in written
    assert not [v for v in job["spec"]["template"]["spec"]["volumes"] if "image" in v]


def _fail_index_codes(job: dict[str, object]) -> list[int]:
    rules = job["spec"]["podFailurePolicy"]["rules"]  # type: ignore[index]
    (codes,) = [rule["onExitCodes"]["values"] for rule in rules if "onExitCodes" in rule]
    return list(codes)


def test_only_a_pipelines_job_fails_its_index_at_once_on_a_stage_mismatch(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    """Every other Job keeps the podFailurePolicy, and so the name, it had before stages."""
    job, _ = jobs_of(spec_repo, write_spec("policy.yaml", POLICY))["cpu"]
    assert ExitCode.STAGE_MISMATCH in _fail_index_codes(job)
    job, _ = jobs_of(spec_repo, write_spec("policy.yaml", PLAIN))["cpu"]
    assert ExitCode.STAGE_MISMATCH not in _fail_index_codes(job)
