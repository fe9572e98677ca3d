"""`models[].family` and `params`: carried in config.json's model entries and the variant
ids only where given, and a family whose members cannot be compared along a param refused
at the field to change."""

from pathlib import Path

import pytest

from contract.config import CONFIG_FILE, RunConfig
from synth.load import load_specs
from synth.problems import SpecProblems
from synth.render import render
from tests.synth.conftest import WriteSpec
from tests.synth.manifests import objects

SPEC = """\
id: fam
description: a policy at two chunk sizes
owner: tests
clusters: [alpha]
models:
  - name: pi-c4
    file: models/examples/tiny-mlp.pt2
{first}  - name: pi-c8
    file: models/examples/tiny-mlp.pt2
{second}benchmark:
  inputs: [{{shape: [64]}}]
targets:
  - gpu_type: cpu
"""
FIRST = "    family: pi\n    params: {action_chunk: 4, denoise_steps: 10}\n"
SECOND = "    family: pi\n    params: {action_chunk: 8, denoise_steps: 10}\n"


def config_of(root: Path, spec: Path) -> RunConfig:
    (config,) = [
        RunConfig.model_validate_json(obj["data"][CONFIG_FILE])
        for _, obj in objects(render(load_specs(root, [spec])))
        if obj["kind"] == "ConfigMap" and CONFIG_FILE in obj.get("data", {})
    ]
    return config


def test_a_familys_params_travel_in_config_json_and_the_variant_ids(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    plain = config_of(spec_repo, write_spec("fam.yaml", SPEC.format(first="", second="")))
    config = config_of(spec_repo, write_spec("fam.yaml", SPEC.format(first=FIRST, second=SECOND)))
    assert config.models["pi-c8"].family == "pi"
    assert config.models["pi-c8"].params == {"action_chunk": 8, "denoise_steps": 10}
    # From any source: the entry of an oci model carries them too.
    oci = f"    oci: registry.example.com/m/pi@sha256:{'ab' * 32}\n    sha256: {'cd' * 32}\n"
    text = SPEC.format(first=FIRST, second=SECOND).replace("clusters: [alpha]", "clusters: [beta]")
    text = text.replace(
        "  - name: pi-c8\n    file: models/examples/tiny-mlp.pt2\n", f"  - name: pi-c8\n{oci}"
    )
    assert config_of(spec_repo, write_spec("fam.yaml", text)).models["pi-c8"].params == {
        "action_chunk": 8,
        "denoise_steps": 10,
    }
    assert "family" not in plain.models["pi-c8"].model_dump(exclude_none=True)
    assert {v.id for v in config.variants}.isdisjoint({v.id for v in plain.variants})


@pytest.mark.parametrize(
    ("first", "second", "said"),
    [
        ("    params: {action_chunk: 4}\n", "", "models[0].params: model pi-c4 has params but no "
         "family"),
        ("    family: pi\n", "", "models[0].family: model pi-c4 is in family pi but has no params"),
        (FIRST, "    family: pi\n    params: {action_chunk: 8}\n", "models[1].params: model "
         "pi-c8 of family pi has params action_chunk; pi-c4 has action_chunk, denoise_steps"),
        (FIRST, FIRST, "models[1].params: models pi-c4 and pi-c8 of family pi both have params "
         "action_chunk=4 denoise_steps=10"),
        ("    family: pi\n    params: {Chunk: 4}\n", "",
         "models[0].params.Chunk: String should match pattern"),
    ],
)  # fmt: skip
def test_a_family_that_cannot_be_compared_is_refused_where_to_change_it(
    spec_repo: Path, write_spec: WriteSpec, first: str, second: str, said: str
) -> None:
    spec = write_spec("fam.yaml", SPEC.format(first=first, second=second))
    with pytest.raises(SpecProblems) as raised:
        load_specs(spec_repo, [spec])
    found = [str(problem) for problem in raised.value.problems]
    assert any(said in problem for problem in found), found
