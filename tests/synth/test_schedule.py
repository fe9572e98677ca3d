"""Scheduled workflows (`scheduling.every`): a run is started by `benchfleet schedule`, the only
thing that reads a clock, as a commit; each run is a new identity for its variants, so its
results are kept beside the earlier runs' and nothing one run recorded stands in for the next;
a run still going is never renamed by the next (docs/synth.md, "Scheduled runs")."""

import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from benchfleet.collector import cli as collector_cli
from contract.config import CONFIG_FILE, RunConfig
from contract.dist import read_workload
from contract.layout import SCHEDULED_AT_ANNOTATION, SCHEDULED_RUN_LABEL, workload_file
from synth.cli import cli
from synth.main import synth
from synth.write import generated
from tests.conftest import REPO_ROOT, commit, git
from tests.synth.conftest import RecordJobs, WriteSpec, problems_in
from tests.synth.test_incremental import SPEC

NIGHTLY = SPEC.replace("  deadline: 30m\n", "  deadline: 30m\n  every: 24h\n")
DAY_1 = "2026-12-06T02:17:00Z"
DAY_1_LATER = "2026-12-06T23:59:59Z"
DAY_2 = "2026-12-07T00:00:00Z"
DAY_3 = "2026-12-08T05:00:00+03:00"
"""02:00 UTC on the 8th: periods are UTC days, whatever zone the clock says."""
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "ci",
    "GIT_AUTHOR_EMAIL": "ci@example.com",
    "GIT_COMMITTER_NAME": "ci",
    "GIT_COMMITTER_EMAIL": "ci@example.com",
}


def schedule(root: Path, *arguments: str) -> Result:
    """`benchfleet schedule ARGUMENTS` in `root`."""
    return CliRunner().invoke(cli, ["--root", str(root), "schedule", *arguments], env=GIT_IDENTITY)


def jobs(root: Path) -> dict[str, tuple[str | None, str | None, set[str]]]:
    """Each Job of the workflow in dist/: its scheduled run label, its period annotation, and
    the ids of the variants it runs."""
    path = root / workload_file("alpha", "sweep")
    if not path.exists():
        return {}
    workload = read_workload(path)
    found = {}
    for job in workload.jobs:
        meta = job["metadata"]
        config = RunConfig.model_validate_json(
            workload.configmaps[meta["name"]]["data"][CONFIG_FILE]
        )
        found[meta["name"]] = (
            meta["labels"].get(SCHEDULED_RUN_LABEL),
            meta["annotations"].get(SCHEDULED_AT_ANNOTATION),
            {variant.id for variant in config.variants},
        )
    return found


def variant_ids(root: Path) -> set[str]:
    return {variant for _, _, ids in jobs(root).values() for variant in ids}


def state(root: Path) -> dict[str, object]:
    loaded: dict[str, object] = json.loads((root / "schedules" / "sweep.json").read_text())
    return loaded


@pytest.mark.parametrize(
    ("every", "message"),
    [
        ("30m", "every must be a whole number of seconds, at least 1h"),
        ("3600.5", "every must be a whole number of seconds, at least 1h"),
        ("1h", "every (3600s) is shorter than the deadline (7200s)"),
        ("true", "is not a duration"),
    ],
    ids=["under an hour", "a fraction of a second", "shorter than the deadline", "not a duration"],
)
def test_a_period_that_cannot_fit_a_run_is_an_error_at_every(
    spec_repo: Path, write_spec: WriteSpec, every: str, message: str
) -> None:
    write_spec(
        "sweep.yaml",
        SPEC.replace("  deadline: 30m\n", f"  deadline: 2h\n  every: {every}\n"),
    )
    (problem,) = problems_in(spec_repo)
    assert problem.path == "scheduling.every"
    assert message in problem.message


def test_a_scheduled_workflow_runs_nothing_until_its_first_run_is_started(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec("sweep.yaml", NIGHTLY)
    synth(spec_repo)
    assert jobs(spec_repo) == {}
    listed = CliRunner().invoke(cli, ["--root", str(spec_repo), "variants", "sweep"])
    assert listed.exit_code == 0, listed.output
    assert "8 variants in specs/workflows/sweep.yaml: 0 run, 8 wait" in listed.output
    assert "waits for its first run (`benchfleet schedule`)" in listed.output


def test_the_first_run_starts_at_once_and_the_commit_says_what_runs(
    git_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec("sweep.yaml", NIGHTLY)
    commit(git_repo, "a nightly")
    started = schedule(git_repo, "--now", DAY_1, "--commit")
    assert started.exit_code == 0, started.output
    assert state(git_repo) == {
        "schema_version": 1,
        "workflow": "sweep",
        "run": 1,
        "period_start": "2026-12-06T00:00:00Z",
        "every_s": 86400,
        "deadline_s": 1800,
    }
    found = jobs(git_repo)
    assert len(found) == 2
    assert {(run, at) for run, at, _ in found.values()} == {("1", "2026-12-06T00:00:00Z")}
    subject, body = git(git_repo, "log", "-1", "--format=%s%x00%b").split("\0")
    assert subject == "schedule: start sweep run 1"
    assert "sweep run 1, for the period from 2026-12-06 00:00 UTC (every 24h): 8 variants " in body
    for name in found:
        assert f"  alpha: {name}: 4 variants on " in body
    assert git(git_repo, "status", "--porcelain") == "", "everything it wrote is committed"


def test_the_same_period_starts_nothing_and_writes_nothing(
    git_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    write_spec("sweep.yaml", NIGHTLY)
    assert schedule(git_repo, "--now", DAY_1).exit_code == 0
    record_jobs("sweep")
    synth(git_repo)
    commit(git_repo, "run 1 and its results")
    again = schedule(git_repo, "--now", DAY_1_LATER, "--commit")
    assert again.exit_code == 0, again.output
    assert "sweep: not due: run 1 started for the period from 2026-12-06 00:00 UTC; the next " \
        "is due from 2026-12-07 00:00 UTC" in again.output  # fmt: skip
    assert "nothing to commit" in again.output
    assert state(git_repo)["run"] == 1


def test_a_run_not_yet_recorded_holds_back_the_next_and_keeps_its_jobs(
    git_repo: Path, write_spec: WriteSpec
) -> None:
    """Bumping the run would rename the running Jobs and Flux would prune them: the next run
    waits, saying which Jobs it waits for."""
    write_spec("sweep.yaml", NIGHTLY)
    assert schedule(git_repo, "--now", DAY_1, "--commit").exit_code == 0
    before = generated(git_repo)
    held = schedule(git_repo, "--now", DAY_2, "--commit")
    assert held.exit_code == 0, held.output
    assert "sweep: run 1 is not recorded yet, 2 of its Jobs are left (alpha: sweep-" in held.output
    assert "run 2 waits for them (`collector gather --workflow sweep`, then this again)" in (
        held.output
    )
    assert generated(git_repo) == before
    assert state(git_repo)["run"] == 1


def test_each_run_is_a_new_identity_and_reuses_nothing_an_earlier_run_recorded(
    git_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    write_spec("sweep.yaml", NIGHTLY)
    seen: list[set[str]] = []
    records: set[str] = set()
    for run, moment in enumerate((DAY_1, DAY_2, DAY_3), start=1):
        started = schedule(git_repo, "--now", moment, "--commit")
        assert started.exit_code == 0, started.output
        assert f"schedule: start sweep run {run}" in started.output
        assert {label for label, _, _ in jobs(git_repo).values()} == {str(run)}
        ids = variant_ids(git_repo)
        assert len(ids) == 8, "every variant runs again: nothing earlier stands in for it"
        assert all(not ids & earlier for earlier in seen)
        seen.append(ids)
        records |= set(record_jobs("sweep"))
    done = schedule(git_repo, "--now", DAY_3, "--commit")
    assert "schedule: record 2 Jobs; nothing due" in git(git_repo, "log", "-1", "--format=%s")
    assert done.exit_code == 0
    assert jobs(git_repo) == {}, "run 3 recorded: it leaves dist/"
    kept = {path.stem for path in (git_repo / "results" / "sweep" / "alpha").glob("*.json")}
    assert kept == records and len(records) == 6, "three runs' results, side by side"
    assert state(git_repo)["period_start"] == "2026-12-08T00:00:00Z"


def test_the_same_specs_and_results_synthesize_the_same_files(
    git_repo: Path, write_spec: WriteSpec
) -> None:
    """Time enters only through the schedule file: synth run again, with any clock, writes
    what `benchfleet schedule` wrote."""
    write_spec("sweep.yaml", NIGHTLY)
    assert schedule(git_repo, "--now", DAY_1).exit_code == 0
    written = generated(git_repo)
    synth(git_repo)
    assert generated(git_repo) == written


def test_a_dry_run_says_what_would_start_and_writes_nothing(
    git_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec("sweep.yaml", NIGHTLY)
    synth(git_repo)
    before = generated(git_repo)
    dry = schedule(git_repo, "--now", DAY_1, "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "schedule: start sweep run 1" in dry.output
    assert not (git_repo / "schedules").exists()
    assert generated(git_repo) == before


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("nope", "unknown workflow 'nope'"),
        ("plain", "workflow 'plain' is not scheduled: its spec has no scheduling.every"),
    ],
)
def test_naming_a_workflow_that_is_not_scheduled_is_an_error(
    spec_repo: Path, write_spec: WriteSpec, name: str, message: str
) -> None:
    write_spec("sweep.yaml", NIGHTLY)
    write_spec("plain.yaml", SPEC.replace("id: sweep", "id: plain"))
    refused = schedule(spec_repo, name, "--now", DAY_1)
    assert refused.exit_code == 1
    assert message in refused.output


def _state(run: int = 1, **changes: object) -> str:
    fields = {
        "schema_version": 1,
        "workflow": "sweep",
        "run": run,
        "period_start": "2026-12-06T00:00:00Z",
        "every_s": 86400,
        "deadline_s": 1800,
        **changes,
    }
    return json.dumps(fields)


@pytest.mark.parametrize(
    ("file", "text", "message"),
    [
        ("sweep.json", _state(run=0), "not a schedule: run: Input should be greater than"),
        ("sweep.json", "{", "not a schedule: Invalid JSON"),
        ("sweep.json", "x" * 5000, "is 5,000 bytes, more than the 4,096 allowed"),
        (
            "sweep.json",
            _state(period_start="2026-12-06T01:00:00Z"),
            "is not the start of a period of 86400 s",
        ),
        ("sweep.json", _state(period_start="9999-12-31T00:00:00Z"), "period_start: Value error"),
        ("sweep.json", _state(period_start="0001-01-01T00:00:00Z"), "period_start: Value error"),
        ("sweep.json", _state(every_s=10**30), "every_s: Input should be less than"),
        ("sweep.json", _state(workflow="other"), "the state of workflow 'other' in the file of"),
        ("plain.json", _state(workflow="plain"), "workflow 'plain' is not scheduled"),
        ("gone.json", _state(workflow="gone"), "no scheduled workflow has this file's name"),
        ("notes.txt", "hello", "no scheduled workflow has this file's name"),
    ],
    ids=[
        "run 0",
        "not JSON",
        "too large",
        "not a period start",
        "a period start datetime cannot count on from",
        "a period start no ISO 8601 can write",
        "a period that overflows",
        "another workflow's",
        "an unscheduled workflow's",
        "a removed workflow's",
        "a stray file",
    ],
)
def test_a_schedule_file_that_is_not_a_scheduled_workflows_state_is_a_problem(
    spec_repo: Path, write_spec: WriteSpec, file: str, text: str, message: str
) -> None:
    write_spec("sweep.yaml", NIGHTLY)
    write_spec("plain.yaml", SPEC.replace("id: sweep", "id: plain"))
    (spec_repo / "schedules").mkdir()
    (spec_repo / "schedules" / file).write_text(text)
    (problem,) = problems_in(spec_repo)
    assert problem.file == f"schedules/{file}"
    assert message in problem.message
    assert problem.hint is not None


def test_the_example_scheduled_ci_job_runs_our_commands_with_options_they_have() -> None:
    """examples/ci/benchfleet-schedule.yml is the one clock: each `benchfleet` and `collector`
    command it runs must exist and take the options it passes."""
    workflow = yaml.safe_load(
        (REPO_ROOT / "examples" / "ci" / "benchfleet-schedule.yml").read_text()
    )
    assert workflow[True]["schedule"], "a `schedule:` trigger (YAML 1.1 reads `on` as True)"
    runs = [step["run"] for step in workflow["jobs"]["schedule"]["steps"] if "run" in step]
    commands = [
        line.strip().split()
        for run in runs
        for line in run.splitlines()
        if line.strip().startswith(("benchfleet ", "collector "))
    ]
    used = {(words[0], words[1]) for words in commands}
    assert {("benchfleet", "schedule"), ("collector", "gather"), ("collector", "check")} <= used
    for program, verb, *rest in commands:
        group = cli if program == "benchfleet" else collector_cli
        shown = CliRunner().invoke(group, [verb, "--help"])
        assert shown.exit_code == 0, shown.output
        for option in (word for word in rest if word.startswith("--")):
            has = re.search(rf"{re.escape(option)}(?![\w-])", shown.output)
            assert has, f"{program} {verb} has no {option}"
