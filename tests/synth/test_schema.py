"""The generated JSON Schemas and reference page match the models."""

from pathlib import Path

import jsonschema
import pytest

from synth.fleet import Fleet
from synth.schema import REFERENCE, generated_files, json_schema, stale_files, write_generated
from synth.spec import Workflow
from tests.conftest import REPO_ROOT


def test_committed_generated_files_are_current() -> None:
    stale = [path.as_posix() for path in stale_files(REPO_ROOT)]
    assert stale == [], "generated files are stale: run `make schema` and commit the result"


def test_write_generated_reports_only_what_changed(tmp_path: Path) -> None:
    assert sorted(write_generated(tmp_path)) == sorted(generated_files())
    assert write_generated(tmp_path) == []
    assert stale_files(tmp_path) == []


def test_schema_rejects_unknown_keys_like_the_models_do() -> None:
    spec = {
        "id": "x",
        "description": "d",
        "owner": "o",
        "models": [{"name": "m", "file": "m.pt2"}],
        "targets": [{"gpu_type": "cpu", "gpu_typo": 1}],
    }
    with pytest.raises(jsonschema.ValidationError, match="gpu_typo"):
        jsonschema.validate(spec, json_schema(Workflow))


def test_schema_offers_the_device_catalogue_to_editors() -> None:
    target = json_schema(Workflow)["$defs"]["Target"]["properties"]["gpu_type"]
    assert "nvidia-a100" in target["enum"]
    assert "cpu" in target["enum"]


def test_reference_documents_every_field_of_every_model() -> None:
    reference = generated_files()[REFERENCE]
    for model in (Workflow, Fleet):
        schema = model.model_json_schema()
        for definition in [schema, *schema.get("$defs", {}).values()]:
            for key in definition.get("properties", {}):
                assert f"| `{key}` |" in reference, key
