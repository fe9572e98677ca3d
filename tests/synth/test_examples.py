"""The example specs shipped in specs/ are valid and express the design note's use cases."""

from pathlib import Path

import jsonschema
import pytest

from contract.variant import Precision
from synth.catalogue import DEVICE_TYPES
from synth.checks import target_clusters
from synth.identity import identify
from synth.load import (
    FLEET_SCHEMA,
    WORKFLOW_SCHEMA,
    LoadedWorkflow,
    Specs,
    load_specs,
    workflow_files,
)
from synth.schema import json_schema
from synth.spec import Workflow
from synth.yaml_source import parse_yaml
from tests.conftest import REPO_ROOT

EXAMPLES = [path.relative_to(REPO_ROOT).as_posix() for path in workflow_files(REPO_ROOT)]


@pytest.fixture(scope="module")
def specs() -> Specs:
    return load_specs(REPO_ROOT)


def workflow(specs: Specs, workflow_id: str) -> LoadedWorkflow:
    return next(w for w in specs.workflows if w.workflow.id == workflow_id)


def test_all_examples_validate(specs: Specs) -> None:
    assert sorted(w.file for w in specs.workflows) == EXAMPLES
    assert len(EXAMPLES) >= 4


@pytest.mark.parametrize("file", EXAMPLES)
def test_example_points_editors_at_the_schema(file: str) -> None:
    first_line = (REPO_ROOT / file).read_text(encoding="utf-8").splitlines()[0]
    assert first_line == "# yaml-language-server: $schema=../schema.json"


@pytest.mark.parametrize("file", EXAMPLES)
def test_example_satisfies_the_published_json_schema(file: str) -> None:
    jsonschema.validate(parse_yaml((REPO_ROOT / file).read_bytes()).data, json_schema(Workflow))


def test_fleet_config_points_editors_at_its_schema() -> None:
    text = (REPO_ROOT / "specs" / "clusters.yaml").read_text(encoding="utf-8")
    assert text.splitlines()[0] == f"# yaml-language-server: $schema={FLEET_SCHEMA.name}"
    assert WORKFLOW_SCHEMA.parent == FLEET_SCHEMA.parent


def test_gpu_comparison_runs_one_model_on_v100_a100_and_t4(specs: Specs) -> None:
    loaded = workflow(specs, "gpu-comparison")
    assert [t.gpu_type for t in loaded.workflow.targets] == [
        "nvidia-v100",
        "nvidia-a100",
        "nvidia-t4",
    ]
    assert [(v.target, v.model) for v in loaded.variants] == [
        ("v100", "tiny-cnn"),
        ("a100", "tiny-cnn"),
        ("t4", "tiny-cnn"),
    ]


def test_gpu_comparison_keeps_the_design_notes_config_keys(specs: Specs) -> None:
    benchmark = workflow(specs, "gpu-comparison").workflow.benchmark
    assert benchmark.measure_phase.min_iterations == 100
    assert benchmark.warmup_phase.min_iterations == 10
    assert benchmark.default_batch_size == 1
    assert benchmark.default_inputs is not None
    assert benchmark.default_inputs[0].shape == [3, 64, 64]


def test_quantization_sweep_is_96_variants_ten_at_a_time(specs: Specs) -> None:
    loaded = workflow(specs, "quantization-sweep")
    assert len(loaded.variants) == 96
    assert loaded.workflow.scheduling.max_parallel == 10
    assert {v.precision for v in loaded.variants} == set(Precision)
    assert {v.quantization for v in loaded.variants} == DEVICE_TYPES["nvidia-h100"].quantizations
    (cluster,) = target_clusters(loaded.workflow, specs.fleet)
    (target,) = loaded.workflow.targets
    ids = {i for _, i in identify(loaded, specs.fleet, cluster, specs.model_files).of(target)}
    assert len(ids) == 96


def test_model_zoo_is_fifty_models_in_batches_of_ten(specs: Specs) -> None:
    loaded = workflow(specs, "model-zoo")
    assert len(loaded.workflow.models) == 50
    assert len(loaded.variants) == 50
    assert loaded.workflow.scheduling.max_parallel == 10


def test_a_workflow_uses_priority_and_spot_nodes(specs: Specs) -> None:
    loaded = workflow(specs, "nightly-spot")
    assert loaded.workflow.scheduling.priority == "nightly"
    assert all(target.spot for target in loaded.workflow.targets)
    assert loaded.workflow.scheduling.queue is not None


def test_a_workflow_spans_two_regions(specs: Specs) -> None:
    loaded = workflow(specs, "region-latency")
    regions = {specs.fleet.cluster(name).region for name in loaded.workflow.clusters or []}
    assert len(regions) == 2


def test_examples_validate_from_any_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert len(load_specs(REPO_ROOT).workflows) == len(EXAMPLES)
