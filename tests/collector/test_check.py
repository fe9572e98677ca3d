"""`collector check --scheduled`: a scheduled workflow with no new result within its period
plus a grace exits 1 for CI, saying what is missing and why: no run started, a run recorded
without a result, or from the cluster, a Job not applied by Flux, pending, or failing
(docs/collector.md, "Missing data")."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchfleet.collector import cli
from contract.instant import instant
from contract.records import JobRecord, StoredVariant, write_record
from contract.schedule import ScheduleState, write_schedule
from standin import objects
from standin.api import FakeApiServer
from tests.collector.gathering import Collect, Obj
from tests.collector.stored import JOB, failed, succeeded

RUN_1 = ScheduleState.model_validate(
    {
        "workflow": "cpu-smoke",
        "run": 1,
        "period_start": "2026-12-03T00:00:00Z",
        "every_s": 86400,
        "deadline_s": 3600,
    }
)
SAME_DAY = "2026-12-03T12:00:00Z"
"""Six hours after the last result (05:59): well within a day and an hour."""
TWO_DAYS_ON = "2026-12-05T12:00:00Z"


def _record(repo: Path, *variants: StoredVariant) -> None:
    write_record(repo, JobRecord(**JOB.model_dump(), outcome="complete", variants=variants))


def _recorded_job(job: Obj) -> Obj:
    return {**JOB.model_dump(), "job": job["metadata"]["name"], "scheduled_run": 1}


def test_a_result_within_the_period_and_grace_is_no_alert(repo: Path, collector: Collect) -> None:
    write_schedule(repo, RUN_1)
    _record(repo, succeeded(0))
    checked = collector("check", "--scheduled", "--now", SAME_DAY)
    assert checked.exit_code == 0, checked.output
    assert (
        "cpu-smoke: ok: the last result finished 2026-12-03 05:59 UTC; the next is due by "
        "2026-12-04 06:59 UTC" in checked.output
    )


def test_a_job_flux_has_not_applied_is_named(
    repo: Path, collector: Collect, api: FakeApiServer
) -> None:
    write_schedule(repo, RUN_1)
    checked = collector("check", "--scheduled", "--now", TWO_DAYS_ON)
    assert checked.exit_code == 1
    assert "cpu-smoke: MISSING DATA: no result yet, and one was due by 2026-12-04 01:00 UTC" in (
        checked.output
    )
    assert (
        "no run started for the period from 2026-12-05 00:00 UTC: the last, run 1, was for "
        "the period from 2026-12-03 00:00 UTC; run 1 is not recorded, which holds run 2 back"
        in checked.output
    )
    assert "us-east: Job cpu-smoke-cpu-" in checked.output
    assert "not applied by Flux: the cluster has no such Job" in checked.output


def test_a_job_kueue_holds_is_pending_in_the_queue(
    repo: Path, collector: Collect, api: FakeApiServer, job: Obj
) -> None:
    write_schedule(repo, RUN_1)
    api.add("jobs", objects.suspended(job))
    checked = collector("check", "--scheduled", "--now", TWO_DAYS_ON)
    assert checked.exit_code == 1
    assert "pending: 6 of 6 variants wait: not started: the Job is suspended" in checked.output


def test_a_job_whose_variants_fail_is_failing(
    repo: Path, collector: Collect, api: FakeApiServer, job: Obj
) -> None:
    write_schedule(repo, RUN_1)
    api.add("pods", objects.failed_pod(job, 0))
    api.add("jobs", objects.job_status(job, active=5, failed=1, failed_indexes=[0]))
    checked = collector("check", "--scheduled", "--now", TWO_DAYS_ON)
    assert checked.exit_code == 1
    assert "failing: 1 of 6 variants failed, the first: failed" in checked.output
    assert "runner error model_load" in checked.output


def test_a_run_recorded_without_a_result_says_why_its_variants_failed(
    repo: Path, collector: Collect, job: Obj
) -> None:
    write_schedule(repo, RUN_1)
    _record(repo, succeeded(0).model_copy(update={"finished_at": instant("2026-12-01T01:00:00Z")}))
    write_record(
        repo,
        JobRecord(
            **_recorded_job(job),
            outcome="failed",
            variants=tuple(failed(index) for index in range(6)),
        ),
    )
    checked = collector("check", "--scheduled", "--now", TWO_DAYS_ON)
    assert checked.exit_code == 1
    assert "the last result finished 2026-12-01 01:00 UTC" in checked.output
    assert "run 1 is recorded with no result: 6 variants failed: model_load (6)" in checked.output
    assert "is the scheduled CI job running `benchfleet schedule`?" in checked.output


def test_a_cluster_the_check_cannot_reach_is_a_reason_of_its_own(repo: Path) -> None:
    write_schedule(repo, RUN_1)
    checked = CliRunner().invoke(
        cli,
        ["--root", str(repo), "check", "--scheduled", "--now", TWO_DAYS_ON],
        env={"BENCHFLEET_K8S_KUBECONFIG": None, "KUBECONFIG": str(repo / "none")},
    )
    assert checked.exit_code == 1
    assert "us-east: cannot tell why: " in checked.output


def test_the_grace_is_the_runs_deadline_unless_given(repo: Path, collector: Collect) -> None:
    write_schedule(repo, RUN_1)
    _record(repo, succeeded(0))
    just_after = "2026-12-04T07:00:00Z"
    assert collector("check", "--scheduled", "--now", just_after).exit_code == 1
    assert collector("check", "--scheduled", "--now", just_after, "--grace", "2h").exit_code == 0


def test_json_says_each_workflows_standing(repo: Path, collector: Collect) -> None:
    write_schedule(repo, RUN_1)
    checked = collector("check", "--scheduled", "--now", TWO_DAYS_ON, "--format", "json")
    assert checked.exit_code == 1
    document = json.loads(checked.stdout)
    (workflow,) = document["workflows"]
    assert workflow["overdue"] is True
    assert workflow["due_by"] == "2026-12-04T01:00:00+00:00"
    assert any("not applied by Flux" in reason for reason in workflow["reasons"])


@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("cpu-smoke.json", "{", "schedules/cpu-smoke.json: not a schedule: "),
        ("other.json", RUN_1.model_dump_json(), "holds the schedule of workflow 'cpu-smoke'"),
    ],
    ids=["broken", "another workflow's"],
)
def test_a_schedule_that_cannot_be_read_fails_the_check(
    repo: Path, collector: Collect, name: str, text: str, line: str
) -> None:
    (repo / "schedules").mkdir()
    (repo / "schedules" / name).write_text(text)
    checked = CliRunner().invoke(cli, ["--root", str(repo), "check", "--scheduled"])
    assert checked.exit_code == 1
    assert line in checked.output


def test_check_asks_what_to_check(repo: Path) -> None:
    asked = CliRunner().invoke(cli, ["--root", str(repo), "check"])
    assert asked.exit_code == 2
    assert "--scheduled" in asked.output
