"""`benchfleet plan` tells a reviewer which Jobs a change creates, replaces and prunes."""

import json
from pathlib import Path, PurePosixPath

import pytest
from click.testing import CliRunner

from synth.cli import cli
from synth.load import load_specs
from synth.main import synth
from synth.plan import plan
from synth.render import render
from synth.write import generated
from tests.conftest import TEST_DATA, commit, git
from tests.synth.conftest import RecordJobs, WriteSpec

MINIMAL = (TEST_DATA / "specs" / "valid-minimal.yaml").read_text(encoding="utf-8")


def proposed(root: Path) -> dict[PurePosixPath, str]:
    return render(load_specs(root))


def test_unchanged_specs_plan_nothing(spec_repo: Path, write_spec: WriteSpec) -> None:
    write_spec("a.yaml", MINIMAL)
    synth(spec_repo)
    plans = plan(generated(spec_repo), proposed(spec_repo))
    assert [(p.cluster, p.changes, p.unchanged, p.other_files) for p in plans] == [
        ("alpha", [], 1, []),
        ("beta", [], 0, []),
    ]


def test_edit_add_and_remove_show_as_replace_create_prune(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec("a.yaml", MINIMAL)
    write_spec("b.yaml", MINIMAL.replace("id: valid-minimal", "id: gone"))
    synth(spec_repo)
    committed = generated(spec_repo)
    write_spec("a.yaml", MINIMAL.replace("gpu_type: cpu", "gpu_type: cpu\n    resources: large"))
    (spec_repo / "specs" / "workflows" / "b.yaml").unlink()
    write_spec("c.yaml", MINIMAL.replace("id: valid-minimal", "id: fresh"))
    alpha = plan(committed, proposed(spec_repo))[0]
    assert [(c.action, c.key) for c in alpha.changes] == [
        ("create", "fresh/cpu"),
        ("prune", "gone/cpu"),
        ("replace", "valid-minimal/cpu"),
    ]
    assert alpha.unchanged == 0


def test_plan_command_prints_and_writes_nothing(spec_repo: Path, write_spec: WriteSpec) -> None:
    write_spec("a.yaml", MINIMAL)
    result = CliRunner().invoke(cli, ["--root", str(spec_repo), "plan"])
    assert result.exit_code == 0, result.output
    assert "+ create   valid-minimal/cpu" in result.stdout
    assert not (spec_repo / "dist").exists()


def test_a_job_whose_results_are_recorded_is_pruned_as_done(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    write_spec("a.yaml", MINIMAL)
    synth(spec_repo)
    record_jobs("valid-minimal")
    result = CliRunner().invoke(cli, ["--root", str(spec_repo), "plan"])
    assert result.exit_code == 0, result.output
    assert "- prune    valid-minimal/cpu" in result.stdout
    assert "done, results recorded: leave the cluster" in result.stdout


def test_a_hand_edited_job_under_its_old_name_is_an_error(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    """The API server refuses a changed pod template under the same name: Flux would stop
    applying the cluster's workloads, so the plan says so before the merge (#13)."""
    write_spec("a.yaml", MINIMAL)
    synth(spec_repo)
    workload = spec_repo / "dist" / "alpha" / "workloads" / "valid-minimal.yaml"
    workload.write_text(workload.read_text().replace("value: valid-minimal", "value: edited"))
    result = CliRunner().invoke(cli, ["--root", str(spec_repo), "plan"])
    assert result.exit_code == 1
    assert "! edited   dist/alpha/workloads/valid-minimal.yaml: Job valid-minimal-" in result.stdout
    assert "the API server would refuse it" in result.stdout
    assert "1 objects in dist/ differ from what synth writes" in result.stderr


def test_plan_as_json(spec_repo: Path, write_spec: WriteSpec) -> None:
    write_spec("a.yaml", MINIMAL)
    result = CliRunner().invoke(cli, ["--root", str(spec_repo), "plan", "--format", "json"])
    assert result.exit_code == 0, result.output
    alpha, beta = json.loads(result.stdout)["clusters"]
    (change,) = alpha["changes"]
    assert (change["action"], change["workflow"], change["target"]) == (
        "create",
        "valid-minimal",
        "cpu",
    )
    assert change["after"]["variants"] == 1 and change["before"] is None
    assert (beta["cluster"], beta["changes"], alpha["edited"]) == ("beta", [], [])


def test_validate_as_json_lists_every_problem(spec_repo: Path, write_spec: WriteSpec) -> None:
    write_spec("a.yaml", MINIMAL.replace("gpu_type: cpu", "gpu_type: cpx"))
    result = CliRunner().invoke(cli, ["--root", str(spec_repo), "validate", "--format", "json"])
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    (problem,) = report["problems"]
    assert report["valid"] is False
    assert (problem["file"], problem["path"]) == ("specs/workflows/a.yaml", "targets[0].gpu_type")
    assert problem["line"] > 0 and problem["hint"]


def test_plan_compares_with_the_committed_dist_not_the_one_synth_just_wrote(
    git_repo: Path, write_spec: WriteSpec
) -> None:
    """The README's order: edit, `make synth`, then `make plan` shows what merging does."""
    write_spec("a.yaml", MINIMAL)
    synth(git_repo)
    commit(git_repo, "applied")
    head = git(git_repo, "rev-parse", "HEAD").strip()
    write_spec("a.yaml", MINIMAL.replace("gpu_type: cpu", "gpu_type: cpu\n    resources: large"))
    synth(git_repo)
    result = CliRunner().invoke(cli, ["--root", str(git_repo), "plan"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"compared with the committed dist/ of HEAD ({head[:12]})"
    assert any(line.startswith("  ~ replace  valid-minimal/cpu") for line in lines)


def test_before_the_first_commit_plan_compares_with_an_empty_dist(
    git_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec("a.yaml", MINIMAL)
    synth(git_repo)
    result = CliRunner().invoke(cli, ["--root", str(git_repo), "plan", "--format", "json"])
    assert result.exit_code == 0, result.output
    planned = json.loads(result.stdout)
    assert planned["compared_with"] == "an empty dist/: no commit yet"
    alpha, _ = planned["clusters"]
    assert [change["action"] for change in alpha["changes"]] == ["create"]


def test_without_git_plan_compares_with_the_working_tree_and_says_so(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec("a.yaml", MINIMAL)
    synth(spec_repo)
    result = CliRunner().invoke(cli, ["--root", str(spec_repo), "plan"])
    assert result.exit_code == 0, result.output
    first, *rest = result.stdout.splitlines()
    assert first.startswith("compared with dist/ in the working tree: no git repository (")
    assert "  1 Jobs unchanged (they will not run again)" in rest


# Edits that change only labels or annotations, which the API server changes in place.
IN_PLACE = {
    "description": ("description: the smallest valid workflow", "description: edited"),
    "owner": ("owner: tests", "owner: someone-else"),
    "a comment in the spec file": ("id: valid-minimal\n", "id: valid-minimal\n# a comment\n"),
}


@pytest.mark.parametrize("edit", list(IN_PLACE))
def test_an_edit_that_only_changes_annotations_is_no_hand_edit(
    git_repo: Path, write_spec: WriteSpec, edit: str
) -> None:
    write_spec("a.yaml", MINIMAL)
    synth(git_repo)
    commit(git_repo, "applied")
    old, new = IN_PLACE[edit]
    write_spec("a.yaml", MINIMAL.replace(old, new))
    result = CliRunner().invoke(cli, ["--root", str(git_repo), "plan"])
    assert result.exit_code == 0, result.output
    assert "edited" not in result.stdout
    assert "  1 Jobs unchanged (they will not run again)" in result.stdout
