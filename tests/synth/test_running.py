"""A record arriving never renames a Job that may be running (docs/synth.md, "Jobs that may be
running"): the README's loop, `collector gather` then `make synth`, on a repository whose
committed dist/ holds a Job that no record covers yet."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from synth.cli import cli
from synth.main import synth
from tests.conftest import commit, git
from tests.synth.conftest import RecordJobs, WriteSpec
from tests.synth.test_incremental import SPEC, Setting, running

WIDER = SPEC.replace("batch_size: [1, 2]", "batch_size: [1, 2, 4]")
RETRIES = "retries: 2"


def _replaced_while_running(
    repo: Path,
    write_spec: WriteSpec,
    record_jobs: RecordJobs,
    first: str,
    second: str,
    *,
    committed: bool = True,
) -> dict[str, list[Setting]]:
    """Revision `first` applied, then `second` synthesized (and `committed`) before gather
    recorded the first's Jobs, then the record of the first arriving (all it measured
    succeeded): the second revision's Jobs, which run as the record arrives if committed."""
    path = write_spec("sweep.yaml", first)
    synth(repo)
    if committed:
        commit(repo, "first revision")
    record_jobs("sweep")
    results = repo / "results"
    results.rename(repo / "gathered-later")
    path.write_text(second)
    synth(repo)
    if committed:
        commit(repo, "second revision, before the first was recorded")
    current = running(repo)
    (repo / "gathered-later").rename(results)
    return current


def assert_given_way(root: Path, current: dict[str, list[Setting]]) -> None:
    """The Jobs in dist/ are not `current` and run only what WIDER adds to SPEC, which no
    record covers."""
    jobs = running(root)
    assert not jobs.keys() & current.keys()
    assert {batch for settings in jobs.values() for _, _, batch, _ in settings} == {4}


# Each row: the revision replaced while it ran, and the one that replaced it.
REVISIONS = {
    "a value added to the sweep": (SPEC, WIDER),
    "repeated variants": (
        SPEC.replace("retries: 2\n", "retries: 2\n  max_parallel: 4\n").replace(
            "max_time: 20s}\n", "max_time: 20s}\n  repeats: 2\n"
        ),
        WIDER.replace("retries: 2\n", "retries: 2\n  max_parallel: 4\n").replace(
            "max_time: 20s}\n", "max_time: 20s}\n  repeats: 2\n"
        ),
    ),
    "grouped pods": (
        SPEC.replace("retries: 2\n", "retries: 2\n  variants_per_pod: 3\n"),
        WIDER.replace("retries: 2\n", "retries: 2\n  variants_per_pod: 3\n"),
    ),
    # The second revision's Jobs run only variants the first recorded: nothing is left to
    # run, but pruning them would still stop what runs.
    "an edit that re-runs nothing once recorded": (SPEC, SPEC.replace(RETRIES, "retries: 3")),
}


@pytest.mark.parametrize("revisions", list(REVISIONS))
def test_a_record_of_an_older_revision_leaves_the_running_jobs_as_they_are(
    git_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs, revisions: str
) -> None:
    first, second = REVISIONS[revisions]
    current = _replaced_while_running(git_repo, write_spec, record_jobs, first, second)
    synth(git_repo)
    assert running(git_repo) == current
    synth(git_repo)
    assert running(git_repo) == current, "synth again: the same dist/"


def test_plan_and_variants_show_the_running_jobs_unchanged(
    git_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    current = _replaced_while_running(git_repo, write_spec, record_jobs, SPEC, WIDER)
    plan = CliRunner().invoke(cli, ["--root", str(git_repo), "plan"])
    assert plan.exit_code == 0, plan.output
    assert "create" not in plan.stdout and "replace" not in plan.stdout
    assert "2 Jobs unchanged (they will not run again)" in plan.stdout
    variants = CliRunner().invoke(cli, ["--root", str(git_repo), "variants", "sweep"])
    assert variants.exit_code == 0, variants.output
    assert variants.stdout.splitlines()[-1] == (
        f"12 variants in specs/workflows/sweep.yaml: {sum(map(len, current.values()))} run, 0 "
        "recorded"
    )


def test_an_edit_of_the_running_jobs_spec_runs_only_what_has_no_record(
    git_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    path = git_repo / "specs" / "workflows" / "sweep.yaml"
    current = _replaced_while_running(git_repo, write_spec, record_jobs, SPEC, WIDER)
    synth(git_repo)
    commit(git_repo, "results of the first revision")
    path.write_text(WIDER.replace(RETRIES, "retries: 3"))
    synth(git_repo)
    assert_given_way(git_repo, current)


def test_the_running_jobs_leave_dist_once_recorded(
    git_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    _replaced_while_running(git_repo, write_spec, record_jobs, SPEC, WIDER)
    synth(git_repo)
    record_jobs("sweep")
    synth(git_repo)
    assert running(git_repo) == {}


def test_only_the_committed_dist_keeps_a_job_not_the_working_tree(
    git_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    """A Job synthesized but never committed runs nowhere: a record arriving gives it the
    variants left, under a new name."""
    current = _replaced_while_running(
        git_repo, write_spec, record_jobs, SPEC, WIDER, committed=False
    )
    git(git_repo, "add", "-A", "--", ".", ":!dist")
    git(git_repo, "commit", "-q", "-m", "everything but dist/")
    synth(git_repo)
    assert_given_way(git_repo, current)


def test_without_git_a_record_gives_the_jobs_the_variants_left(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    current = _replaced_while_running(
        spec_repo, write_spec, record_jobs, SPEC, WIDER, committed=False
    )
    synth(spec_repo)
    assert_given_way(spec_repo, current)
