"""Free text has a documented limit (docs/specs.md): a description or owner is copied into
the annotations of every Job and ConfigMap, and Kubernetes caps an object's annotations at
256 KiB in all. What an object carries in total is checked too, where it is built."""

from dataclasses import replace
from pathlib import Path

import pytest

from synth.identity import identify
from synth.load import load_specs
from synth.problems import SpecProblems
from synth.recorded import Recorded, RecordedVariant
from synth.render import render
from tests.conftest import TEST_DATA
from tests.synth.conftest import WriteSpec, problems_in

MINIMAL = (TEST_DATA / "specs" / "valid-minimal.yaml").read_text(encoding="utf-8")
DESCRIPTION = "description: the smallest valid workflow"


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (
            DESCRIPTION,
            f"description: {'a long story. ' * 21_429}",
            "2:14: description: the description is 300,005 characters; at most 2,000 are allowed",
        ),
        (DESCRIPTION, "description: ' '", "2:14: description: the description is blank"),
        (
            "owner: tests",
            f"owner: {'t' * 255}@example.com",
            "3:8: owner: the owner is 267 characters; at most 254 are allowed",
        ),
        (
            "owner: tests",
            "owner: |\n  ml-platform@example.com",
            "3:8: owner: the owner 'ml-platform@example.com\\n' holds '\\n'; it must be one line",
        ),
        (
            "owner: tests",
            'owner: "ml-platform\\u2028@example.com"',
            "3:8: owner: the value holds U+2028 LINE SEPARATOR at character 12",
        ),
        (
            "owner: tests",
            "owner: ' tests'",
            "3:8: owner: the owner ' tests' has spaces around it",
        ),
        (
            "    file: models/examples/tiny-mlp.pt2",
            f'    image_path: "/opt/m.pt2\\n"\n    sha256: {"ab" * 32}',
            "7:17: models[0].image_path: the image_path '/opt/m.pt2\\n' holds '\\n'",
        ),
        (
            "    file: models/examples/tiny-mlp.pt2",
            f"    image_path: /{'p' * 4096}\n    sha256: {'ab' * 32}",
            "7:17: models[0].image_path: the image_path is 4,097 characters; at most 4,096",
        ),
        (
            "    file: models/examples/tiny-mlp.pt2",
            f"    url: https://example.com/{'m' * 2048}\n    sha256: {'ab' * 32}",
            "7:10: models[0].url: the url is 2,068 characters; at most 2,048 are allowed",
        ),
    ],
)
def test_free_text_over_its_limit_or_off_its_line_is_refused_at_its_field(
    spec_repo: Path, write_spec: WriteSpec, old: str, new: str, problem: str
) -> None:
    write_spec("w.yaml", MINIMAL.replace(old, new))
    (found,) = map(str, problems_in(spec_repo))
    assert found.startswith(f"specs/workflows/w.yaml:{problem}")


def test_a_description_may_take_several_lines(spec_repo: Path, write_spec: WriteSpec) -> None:
    text = "description: |\n  How fast is tiny-mlp?\n\n  Asked by the platform team.\n"
    write_spec("w.yaml", MINIMAL.replace(f"{DESCRIPTION}\n", text))
    (loaded,) = load_specs(spec_repo).workflows
    assert loaded.workflow.description.splitlines()[-1] == "Asked by the platform team."


REUSING = """\
id: reuses-thousands-of-old-records
description: d
owner: o
clusters: [alpha]
models:
  - name: baked
    image_path: /opt/models/baked.pt2
    sha256: cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd
benchmark:
  inputs: [{shape: [64]}]
  warmup: {min_time: 0}
  measure: {min_time: 0}
targets:
  - gpu_type: cpu
    name: cpu-small-pods
sweep:
  matrix: {batch_size: [%s]}
scheduling: {max_variants: 10000}
"""


def test_a_job_whose_annotations_pass_256_kib_is_an_error_at_its_target(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    """Every variant but one recorded by a Job of its own, as a long history of one-variant
    edits leaves them: the new Job's benchfleet.io/reuses lists them all, past the cap. The
    history is handed to render as read_recorded returns it, not as 3500 files."""
    count = 3500
    write_spec("w.yaml", REUSING % ", ".join(str(n) for n in range(1, count + 1)))
    specs = load_specs(spec_repo)
    (loaded,) = specs.workflows
    target = loaded.workflow.targets[0]
    cluster = specs.fleet.cluster("alpha")
    identified = identify(loaded, specs.fleet, cluster, specs.model_files).of(target)
    history = {
        (variant_id, 0): RecordedVariant(
            f"{loaded.workflow.id}-{target.key}-{index:010d}", True, loaded.sha256
        )
        for index, (_, variant_id) in enumerate(identified[1:])
    }
    jobs = frozenset(recorded.job for recorded in history.values())
    recorded = {(loaded.workflow.id, "alpha"): Recorded(jobs, history)}
    with pytest.raises(SpecProblems) as raised:
        render(replace(specs, recorded=recorded))
    (problem,) = raised.value.problems
    assert str(problem).startswith(
        "specs/workflows/w.yaml:14:5: targets[0]: the Job "
        "reuses-thousands-of-old-records-cpu-small-pods-"
    )
    assert "Kubernetes refuses an object with more than 262,144" in problem.message
    assert "(the largest, benchfleet.io/reuses, is " in problem.message
