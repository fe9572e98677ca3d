"""A name is checked as a whole string: a value that ends in a line break (what a YAML block
scalar, `id: |`, gives) is refused at its field, in workflows and in the fleet file alike,
and so are the JSON Schemas' patterns and the test-suite's own manifest rules."""

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from contract.layout import FLEET_FILE
from synth.fleet import Fleet
from synth.schema import json_schema
from synth.spec import Workflow
from tests.conftest import TEST_DATA
from tests.synth.conftest import WriteSpec, problems_in
from tests.synth.manifests import crd_schema, crd_violations, rule_violations

MINIMAL = (TEST_DATA / "specs" / "valid-minimal.yaml").read_text(encoding="utf-8")
SHA = "ab" * 32


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("id: valid-minimal", "id: |\n  valid-minimal", "id"),
        ("  - gpu_type: cpu", '  - gpu_type: cpu\n    name: "cpu\\n"', "targets[0].name"),
        ("  - name: mlp", "  - name: |\n      mlp", "models[0].name"),
        ("clusters: [alpha]", 'clusters: ["alpha\\n"]', "clusters[0]"),
        ("owner: tests", "owner: tests\nenvironment: |\n  dev", "environment"),
        ("owner: tests", 'owner: tests\nscheduling: {queue: "shared\\n"}', "scheduling.queue"),
        ("owner: tests", 'owner: tests\nscheduling: {priority: "low\\n"}', "scheduling.priority"),
        (
            "    file: models/examples/tiny-mlp.pt2",
            f'    image_path: /opt/m.pt2\n    sha256: "{SHA}\\n"',
            "models[0].sha256",
        ),
        (
            "owner: tests",
            "owner: tests\nimage: |\n  registry.example.com/runner:1",
            "image",
        ),
        (
            "  - gpu_type: cpu",
            "  - gpu_type: cpu\nsweep:\n  matrix: {batch_size: [1, 2]}\n"
            '  exclude: [{target: "cpu\\n", batch_size: 2}]',
            "sweep.exclude[0].target",
        ),
    ],
)
def test_a_workflow_name_ending_in_a_line_break_is_refused_at_its_field(
    spec_repo: Path, write_spec: WriteSpec, old: str, new: str, field: str
) -> None:
    write_spec("w.yaml", MINIMAL.replace(old, new))
    assert [problem.path for problem in problems_in(spec_repo)] == [field]


def test_the_hint_names_the_block_scalar(spec_repo: Path, write_spec: WriteSpec) -> None:
    write_spec("w.yaml", MINIMAL.replace("id: valid-minimal", "id: |\n  valid-minimal"))
    (problem,) = problems_in(spec_repo)
    assert str(problem) == (
        "specs/workflows/w.yaml:1:5: id: workflow id 'valid-minimal\\n' is not DNS-label safe: "
        "use lower-case letters, digits and '-', starting with a letter and not ending with "
        "'-'\n    hint: a block scalar (`|` or `>`) keeps the line break at its end: write the "
        "value on the key's line, or use `|-`"
    )


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("  - name: beta", '  - name: "beta\\n"', "clusters[1].name"),
        ("environments: [dev, prod]", 'environments: [dev, "prod\\n"]', "environments[1]"),
        (
            "  url: ssh://git@example.com/benchfleet",
            "  url: ssh://git@example.com/benchfleet\n  secret_name: |\n    deploy-key",
            "git.secret_name",
        ),
        (
            "environments: [dev, prod]",
            'environments: [dev, prod]\npriority_classes: {"low\\n": {value: 1}, low: {value: 0}}',
            "priority_classes['low\\n']",
        ),
        (
            "environments: [dev, prod]",
            'environments: [dev, prod]\ndefault_priority: "low\\n"',
            "default_priority",
        ),
        ("kueue: {cluster_queue: shared}", 'kueue: {cluster_queue: "shared\\n"}', None),
    ],
)
def test_a_fleet_name_ending_in_a_line_break_is_refused_at_its_field(
    spec_repo: Path, old: str, new: str, field: str | None
) -> None:
    fleet = spec_repo / FLEET_FILE
    text = fleet.read_text(encoding="utf-8")
    assert old in text
    fleet.write_text(text.replace(old, new), encoding="utf-8")
    paths = [problem.path for problem in problems_in(spec_repo)]
    assert paths == [field or "clusters[0].kueue.cluster_queue"]


@pytest.mark.parametrize(
    ("model", "spec", "pointer"),
    [
        (Workflow, {**yaml.safe_load(MINIMAL), "id": "valid-minimal\n"}, ["id"]),
        (
            Workflow,
            {**yaml.safe_load(MINIMAL), "models": [{"name": "m", "url": "https://e/m",
                                                     "sha256": SHA + "\n"}]},
            ["models", 0, "sha256"],
        ),
        (
            Fleet,
            {**yaml.safe_load((TEST_DATA / "specs" / "clusters.yaml").read_text()),
             "environments": ["dev\n"]},
            ["environments", 0],
        ),
    ],
)  # fmt: skip
def test_the_json_schemas_refuse_a_trailing_line_break_too(
    model: type[Workflow | Fleet], spec: dict[str, object], pointer: list[str | int]
) -> None:
    """Editors read the patterns as ECMA-262, where `$` ends the string; Python's
    `jsonschema` (a pull-request check may use it) reads them with `re.search`, where it
    also matches before a final line break."""
    errors = list(jsonschema.Draft202012Validator(json_schema(model)).iter_errors(spec))
    assert [list(error.absolute_path) for error in errors] == [pointer]


def test_the_manifest_rules_refuse_names_and_labels_ending_in_a_line_break() -> None:
    config_map = {
        "kind": "ConfigMap",
        "metadata": {"name": "cm\n", "labels": {"workflow": "w\n"}},
        "immutable": True,
    }
    assert rule_violations(config_map) == [
        "label workflow='w\\n' is not a valid label value",
        "name 'cm\\n' is not a DNS label",
    ]


def test_the_crd_check_reads_each_pattern_to_the_end_of_the_value() -> None:
    """`jsonschema` alone passed an interval with a line break: `$` before it matched."""
    repository: dict[str, Any] = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": "benchfleet", "namespace": "flux-system"},
        "spec": {"interval": "5m\n", "url": "ssh://git@example.com/benchfleet"},
    }
    jsonschema.validate(repository, crd_schema(repository["apiVersion"], repository["kind"]))
    (violation,) = crd_violations(repository)
    assert violation.startswith("'5m\\n' does not match ")
