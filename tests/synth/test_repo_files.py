"""synth reads only regular files inside the repository: nothing a symlink, an absolute path
or '..' leads to outside it, nothing under /proc, /sys or /dev, no FIFO or folder, nothing
over its size. Each refusal is a located problem, and dist/ is left as it was."""

import os
from pathlib import Path

import pytest

from synth.limits import MAX_FILE_BYTES
from synth.load import load_specs
from synth.main import synth
from synth.problems import SpecProblems
from tests.conftest import TEST_DATA
from tests.synth.conftest import WriteSpec

MINIMAL = (TEST_DATA / "specs" / "valid-minimal.yaml").read_text(encoding="utf-8")
SECRET = b"TOKEN=do-not-leak\n"


def problems(root: Path) -> list[str]:
    with pytest.raises(SpecProblems) as raised:
        load_specs(root)
    return [str(problem) for problem in raised.value.problems]


def with_model(write_spec: WriteSpec, file: str) -> None:
    write_spec("w.yaml", MINIMAL.replace("models/examples/tiny-mlp.pt2", file))


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside the repository, holding a secret named like a model."""
    folder = tmp_path_factory.mktemp("outside")
    (folder / "m.pt2").write_bytes(SECRET)
    return folder


def test_a_model_symlink_to_outside_is_refused_and_nothing_is_written(
    spec_repo: Path, write_spec: WriteSpec, outside: Path
) -> None:
    (spec_repo / "models" / "leak.pt2").symlink_to(outside / "m.pt2")
    with_model(write_spec, "models/leak.pt2")
    assert problems(spec_repo) == [
        "specs/workflows/w.yaml:7:11: models[0].file: models/leak.pt2 leads outside the "
        "repository through a symlink\n"
        "    hint: commit the file itself: synth reads nothing from outside the repository"
    ]
    with pytest.raises(SpecProblems):
        synth(spec_repo)
    assert not (spec_repo / "dist").exists()


def test_a_folder_on_the_way_that_leads_outside_is_refused(
    spec_repo: Path, write_spec: WriteSpec, outside: Path
) -> None:
    (spec_repo / "models" / "elsewhere").symlink_to(outside, target_is_directory=True)
    with_model(write_spec, "models/elsewhere/m.pt2")
    [problem] = problems(spec_repo)
    assert "models/elsewhere/m.pt2 leads outside the repository through a symlink" in problem


@pytest.mark.parametrize("target", ["/proc/self/environ", "/dev/zero", "/sys/kernel/uevent_seqnum"])
def test_a_symlink_into_a_system_tree_is_refused(
    spec_repo: Path, write_spec: WriteSpec, target: str
) -> None:
    (spec_repo / "models" / "sys.pt2").symlink_to(target)
    with_model(write_spec, "models/sys.pt2")
    [problem] = problems(spec_repo)
    assert "leads outside the repository" in problem


@pytest.mark.parametrize(
    "file", ["/proc/self/environ.pt2", "models/../../outside.pt2", "models/./../../x.pt2"]
)
def test_an_absolute_or_climbing_path_is_refused(
    spec_repo: Path, write_spec: WriteSpec, file: str
) -> None:
    with_model(write_spec, file)
    [problem] = problems(spec_repo)
    assert f"'{file}' must be a path inside the repository, relative to its root" in problem


def test_a_symlink_inside_the_repository_is_followed(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    (spec_repo / "models" / "alias.pt2").symlink_to(Path("examples") / "tiny-mlp.pt2")
    with_model(write_spec, "models/alias.pt2")
    assert len(load_specs(spec_repo).workflows) == 1


def test_a_fifo_is_refused_without_waiting_for_a_writer(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    os.mkfifo(spec_repo / "models" / "pipe.pt2")
    with_model(write_spec, "models/pipe.pt2")
    [problem] = problems(spec_repo)
    assert "models[0].file: models/pipe.pt2 is not a regular file" in problem


def test_a_folder_named_like_a_model_is_refused(spec_repo: Path, write_spec: WriteSpec) -> None:
    (spec_repo / "models" / "folder.pt2").mkdir()
    with_model(write_spec, "models/folder.pt2")
    [problem] = problems(spec_repo)
    assert "models/folder.pt2 is not a regular file" in problem


def test_a_spec_file_that_leads_outside_is_refused_and_the_others_still_reported(
    spec_repo: Path, write_spec: WriteSpec, outside: Path
) -> None:
    (outside / "w.yaml").write_text(MINIMAL, encoding="utf-8")
    (spec_repo / "specs" / "workflows" / "linked.yaml").symlink_to(outside / "w.yaml")
    write_spec("bad.yaml", MINIMAL.replace("gpu_type: cpu", "gpu_type: tpu"))
    found = problems(spec_repo)
    assert [line.split(":")[0] for line in found] == [
        "specs/workflows/bad.yaml",
        "specs/workflows/linked.yaml",
    ]
    assert found[1].startswith(
        "specs/workflows/linked.yaml:1:1: specs/workflows/linked.yaml leads outside the repository"
    )


def test_a_fleet_config_that_leads_outside_is_refused(spec_repo: Path, outside: Path) -> None:
    fleet = spec_repo / "specs" / "clusters.yaml"
    (outside / "clusters.yaml").write_bytes(fleet.read_bytes())
    fleet.unlink()
    fleet.symlink_to(outside / "clusters.yaml")
    [problem] = problems(spec_repo)
    assert problem.startswith("specs/clusters.yaml:1:1: specs/clusters.yaml leads outside")


def test_a_spec_fifo_is_refused_without_waiting(spec_repo: Path) -> None:
    os.mkfifo(spec_repo / "specs" / "workflows" / "pipe.yaml")
    [problem] = problems(spec_repo)
    assert "specs/workflows/pipe.yaml is not a regular file" in problem


def test_a_spec_file_over_the_limit_is_refused_before_it_is_read(spec_repo: Path) -> None:
    with (spec_repo / "specs" / "workflows" / "huge.yaml").open("wb") as huge:
        huge.truncate(10 * 1024 * 1024)
    [problem] = problems(spec_repo)
    assert problem == (
        "specs/workflows/huge.yaml:1:1: specs/workflows/huge.yaml is 10,485,760 bytes, more "
        f"than the {MAX_FILE_BYTES:,} allowed"
    )


def test_files_under_specs_that_synth_does_not_read_are_reported(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec("good.yaml", MINIMAL)
    write_spec("upper.YAML", MINIMAL)
    write_spec("notes.txt", "todo")
    (spec_repo / "specs" / "extra.yaml").write_text(MINIMAL, encoding="utf-8")
    assert problems(spec_repo) == [
        "specs/extra.yaml:1:1: synth does not read this file\n"
        "    hint: workflows go in specs/workflows/; move or remove it",
        "specs/workflows/notes.txt:1:1: synth does not read this file\n"
        "    hint: a workflow's file name ends in .yaml or .yml; rename or remove it",
        "specs/workflows/upper.YAML:1:1: synth does not read this file\n"
        "    hint: a workflow's file name ends in .yaml or .yml; rename or remove it",
    ]
