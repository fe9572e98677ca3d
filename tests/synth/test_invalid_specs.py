"""Each invalid spec in tests/data/specs/invalid/ produces exactly the problems its golden
file lists: location, field path, message and hint.

To review a change of wording, run with BENCHFLEET_UPDATE_GOLDEN=1 and read the diff of the
`.expected` files before committing them.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from contract.layout import DIST
from synth.load import load_specs
from synth.main import synth
from synth.problems import SpecProblems
from tests.conftest import TEST_DATA
from tests.crafted_archives import ATTACKS, BOMBS, Attack, Bomb
from tests.output_models import OUTPUT_TYPE, export_encoder
from tests.synth.conftest import WriteSpec

INVALID = TEST_DATA / "specs" / "invalid"
CASES = sorted(path.stem for path in INVALID.glob("*.yaml"))


def problems_of(root: Path, spec: Path) -> str:
    with pytest.raises(SpecProblems) as raised:
        load_specs(root, [spec])
    return "\n".join(str(problem) for problem in raised.value.problems) + "\n"


def test_there_are_at_least_25_distinct_mistakes() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES)
def test_invalid_spec_reports_expected_problems(case: str, spec_repo: Path) -> None:
    # Copied as bytes: some cases are not UTF-8.
    spec = spec_repo / "specs" / "workflows" / f"{case}.yaml"
    shutil.copyfile(INVALID / f"{case}.yaml", spec)
    actual = problems_of(spec_repo, spec)
    expected_file = INVALID / f"{case}.expected"
    if os.environ.get("BENCHFLEET_UPDATE_GOLDEN"):
        expected_file.write_text(actual, encoding="utf-8")
    assert actual == expected_file.read_text(encoding="utf-8")


def test_no_problem_quotes_a_credential_a_spec_carries() -> None:
    """Problems land in CI logs: a reference's or a URL's userinfo is masked in every one
    (contract/addresses.py), whichever rule the value breaks first."""
    leaked = [
        path.name
        for path in INVALID.glob("*.expected")
        if any(secret in path.read_text(encoding="utf-8") for secret in ("s3cret", "t0ken"))
    ]
    assert leaked == []


def test_every_golden_file_has_a_spec() -> None:
    orphans = sorted(path.name for path in INVALID.glob("*.expected") if path.stem not in CASES)
    assert orphans == []


DUPLICATE_HINT = (
    "    hint: ids are unique across all spec files: they name the Jobs and results; give this "
    "file's workflow an id of its own"
)


def test_duplicate_ids_outside_git_blame_the_later_file_and_name_the_first(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    text = (INVALID.parent / "valid-minimal.yaml").read_text(encoding="utf-8")
    first = write_spec("first.yaml", text)
    second = write_spec("second.yaml", "# a copy\n" + text)
    with pytest.raises(SpecProblems) as raised:
        load_specs(spec_repo, [first, second])
    assert [str(problem) for problem in raised.value.problems] == [
        "specs/workflows/second.yaml:2:5: id: workflow id 'valid-minimal' is already used by "
        f"specs/workflows/first.yaml:1 (the first of them by name)\n{DUPLICATE_HINT}"
    ]


def test_a_new_copy_of_a_committed_spec_is_the_one_blamed_even_when_its_name_sorts_first(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    """Copying a spec to start another is how ids get repeated: the copy, not in git's HEAD
    yet, is the file to change, whatever its name."""
    text = (INVALID.parent / "valid-minimal.yaml").read_text(encoding="utf-8")
    write_spec("zoo.yaml", "# committed\n" + text)
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    for arguments in (["init", "-q"], ["add", "specs"], [*identity, "commit", "-q", "-m", "zoo"]):
        subprocess.run(["git", "-C", str(spec_repo), *arguments], check=True, capture_output=True)
    write_spec("a-copy.yaml", text)
    with pytest.raises(SpecProblems) as raised:
        load_specs(spec_repo)
    assert [str(problem) for problem in raised.value.problems] == [
        "specs/workflows/a-copy.yaml:1:5: id: workflow id 'valid-minimal' is already used by "
        f"specs/workflows/zoo.yaml:2 (in git's HEAD)\n{DUPLICATE_HINT}"
    ]


def test_problems_of_every_file_are_reported_together(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    bad_id = write_spec("a.yaml", (INVALID / "bad-workflow-id.yaml").read_text(encoding="utf-8"))
    bad_gpu = write_spec("b.yaml", (INVALID / "unknown-gpu-type.yaml").read_text(encoding="utf-8"))
    with pytest.raises(SpecProblems) as raised:
        load_specs(spec_repo, [bad_gpu, bad_id])
    assert [problem.file for problem in raised.value.problems] == [
        "specs/workflows/a.yaml",
        "specs/workflows/b.yaml",
    ]


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda attack: attack.name)
def test_a_model_file_that_would_run_code_is_a_spec_problem_at_its_file_field(
    attack: Attack, spec_repo: Path, write_spec: WriteSpec
) -> None:
    """synth runs the runner's archive check, so such a model fails review, not a pod."""
    model = spec_repo / "own" / "m.pt2"
    model.parent.mkdir()
    model.write_bytes(attack.build(spec_repo / "marker"))
    text = (INVALID.parent / "valid-minimal.yaml").read_text(encoding="utf-8")
    spec = write_spec("crafted.yaml", text.replace("models/examples/tiny-mlp.pt2", "own/m.pt2"))
    [problem] = problems_of(spec_repo, spec).splitlines()[:1]
    assert problem.startswith(
        "specs/workflows/crafted.yaml:7:11: models[0].file: own/m.pt2 is refused: "
    )
    assert re.search(attack.refusal, problem)
    assert not (spec_repo / "marker").exists()


def test_a_model_whose_output_the_runner_cannot_rebuild_is_an_error_at_its_file_field(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    """A Hugging Face-style output (a registered dataclass) passed review and failed in every
    pod with "check the warnings above"; the archive says its type, without torch."""
    model = spec_repo / "own" / "encoder.pt2"
    model.parent.mkdir()
    export_encoder("dataclass", model)
    text = (INVALID.parent / "valid-minimal.yaml").read_text(encoding="utf-8")
    spec = write_spec("hf.yaml", text.replace("models/examples/tiny-mlp.pt2", "own/encoder.pt2"))
    [problem, hint] = problems_of(spec_repo, spec).splitlines()
    assert problem.startswith("specs/workflows/hf.yaml:7:11: models[0].file: own/encoder.pt2 ")
    assert f"holds a '{OUTPUT_TYPE}'" in problem and "return_dict=False" in problem
    assert hint.endswith(
        "the runner would refuse it too; re-export the model with "
        "torch.export.export and save it with torch.export.save, with tensors only"
    )


@pytest.mark.parametrize(
    "bomb", [bomb for bomb in BOMBS if bomb.committable], ids=lambda bomb: bomb.name
)
def test_a_container_bomb_is_a_spec_problem_at_its_file_field_and_nothing_is_written(
    bomb: Bomb, spec_repo: Path, write_spec: WriteSpec
) -> None:
    """The reported bomb took `make synth` to 6.3 GiB and a MemoryError traceback."""
    model = spec_repo / "own" / "m.pt2"
    model.parent.mkdir()
    model.write_bytes(bomb.build())
    text = (INVALID.parent / "valid-minimal.yaml").read_text(encoding="utf-8")
    spec = write_spec("bomb.yaml", text.replace("models/examples/tiny-mlp.pt2", "own/m.pt2"))
    with pytest.raises(SpecProblems) as raised:
        synth(spec_repo)
    (problem,) = raised.value.problems
    assert str(problem).startswith("specs/workflows/bomb.yaml:7:11: models[0].file: own/m.pt2 is ")
    assert re.search(bomb.refusal, problem.message)
    assert not (spec_repo / DIST).exists()
    assert spec.exists()


def test_the_name_local_runs_are_stored_under_is_no_clusters(spec_repo: Path) -> None:
    fleet = spec_repo / "specs" / "clusters.yaml"
    fleet.write_text(
        fleet.read_text(encoding="utf-8").replace("  - name: beta", "  - name: local"),
        encoding="utf-8",
    )
    with pytest.raises(SpecProblems) as raised:
        load_specs(spec_repo)
    (problem,) = raised.value.problems
    assert str(problem).startswith("specs/clusters.yaml:16:11: clusters[1].name: cluster name ")
    assert "'local' is reserved" in str(problem)
