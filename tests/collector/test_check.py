"""`collector check --scheduled`: a scheduled workflow with no new result within its period
plus a grace exits 1 for CI, saying what is missing and why: no run started, a run recorded
without a result, or from the cluster, a Job not applied by Flux, pending, or failing
(docs/collector.md, "Missing data")."""

import json
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchfleet.collector import cli
from contract.instant import instant
from contract.records import JobRecord, StoredVariant, read_record, write_record
from contract.schedule import ScheduleState, write_schedule
from standin import objects
from standin.api import FakeApiServer
from standin.fixture import fixture_root
from tests.collector.gathering import Collect, Obj, record_of
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
    assert checked.exit_code == 3, "its standing is unknown"
    assert line in checked.output


def test_check_asks_what_to_check(repo: Path) -> None:
    asked = CliRunner().invoke(cli, ["--root", str(repo), "check"])
    assert asked.exit_code == 2
    assert "--scheduled" in asked.output


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_node_clock_three_days_ahead_makes_no_overdue_workflow_ok(
    repo: Path, collector: Collect, api: FakeApiServer, job: Obj
) -> None:
    """Issue #31: a node three days ahead made `check` say ok for a workflow three days
    overdue, and put the last-result gauge three days in the future. gather now holds each
    finish to its own clock when it stores the run, and says the skew."""
    ahead = datetime.now(UTC) + timedelta(days=3, minutes=1)
    for index in range(6):
        pod = objects.succeeded_pod(job, index)
        pod["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"] = _stamp(ahead)
        api.add("pods", pod)
    api.add("jobs", objects.complete(job))
    textfile = repo / "benchfleet.prom"
    gathered = collector("gather", "--metrics-textfile", str(textfile))
    assert gathered.exit_code == 0, gathered.output
    assert "3 d 0 h ahead of the collector's clock when it stored the run" in gathered.stderr
    (variant, *_) = read_record(record_of(repo, job)).variants
    assert variant.finished_at is not None and variant.finished_at <= datetime.now(UTC)
    assert variant.clock_note is not None and f"finished at {_stamp(ahead)}" in variant.clock_note
    assert variant.allocation is not None and variant.allocation.seconds is None
    gauge = next(
        line for line in textfile.read_text().splitlines()
        if line.startswith("benchfleet_last_result_timestamp_seconds{")
    )  # fmt: skip
    assert float(gauge.rsplit(" ", 1)[1]) <= time.time()
    write_schedule(repo, RUN_1)
    later = _stamp(datetime.now(UTC) + timedelta(days=1, hours=2))
    checked = collector("check", "--scheduled", "--now", later)
    assert checked.exit_code == 1, checked.output
    assert "cpu-smoke: MISSING DATA: the last result finished" in checked.output


def test_a_recorded_finish_ahead_of_the_check_is_no_result_and_says_the_skew(
    repo: Path, collector: Collect
) -> None:
    """A record keeps no time of storage: one written before gather held finishes to its
    clock counts nothing while its finish lies ahead."""
    write_schedule(repo, RUN_1)
    _record(repo, succeeded(0).model_copy(update={"finished_at": instant("2026-12-08T12:00:00Z")}))
    checked = collector("check", "--scheduled", "--now", TWO_DAYS_ON)
    assert checked.exit_code == 1
    assert "cpu-smoke: MISSING DATA: no result yet" in checked.output
    assert "index 0: its finish lies 3 d 0 h ahead of this check's clock" in checked.output


RUN_2 = RUN_1.model_copy(update={"run": 2, "period_start": instant("2026-12-04T00:00:00Z")})


def test_a_scheduled_run_that_failed_completely_is_missing_data_at_once(
    repo: Path, collector: Collect, job: Obj
) -> None:
    """Issue #31: run 2 had ended with every variant failed, and the check said ok until a
    day after run 1's result."""
    write_schedule(repo, RUN_2)
    run_1 = JOB.model_copy(update={"scheduled_run": 1})
    write_record(
        repo, JobRecord(**run_1.model_dump(), outcome="complete", variants=(succeeded(0),))
    )
    write_record(
        repo,
        JobRecord(
            **{**_recorded_job(job), "scheduled_run": 2},
            outcome="failed",
            variants=tuple(failed(index) for index in range(6)),
        ),
    )
    checked = collector("check", "--scheduled", "--now", "2026-12-04T03:00:00Z")
    assert checked.exit_code == 1, checked.output
    assert (
        "cpu-smoke: MISSING DATA: run 2, for the period from 2026-12-04 00:00 UTC, ended with no "
        "result, so none will come before the next period; the last result finished "
        "2026-12-03 05:59 UTC" in checked.output
    )
    assert "run 2 is recorded with no result: 6 variants failed: model_load (6)" in checked.output


def _scheduled_by_spec(repo: Path) -> None:
    """The checkout's specs, cpu-smoke given `scheduling.every: 24h`."""
    shutil.copytree(fixture_root() / "specs", repo / "specs")
    shutil.copytree(fixture_root() / "models", repo / "models")
    spec = repo / "specs" / "workflows" / "cpu-smoke.yaml"
    spec.write_text(spec.read_text().replace("scheduling:\n", "scheduling:\n  every: 24h\n"))


@pytest.mark.parametrize("only", [(), ("--workflow", "cpu-smoke")], ids=["all", "named"])
def test_a_scheduled_workflow_without_its_schedule_file_is_unknown_not_silent(
    repo: Path, collector: Collect, only: tuple[str, ...]
) -> None:
    """Issue #31: a scheduled workflow that never ran, or whose file went, exited 0 saying
    nothing."""
    _scheduled_by_spec(repo)
    _record(repo, succeeded(0))
    checked = CliRunner().invoke(
        cli, ["--root", str(repo), "check", "--scheduled", *only, "--now", TWO_DAYS_ON]
    )
    assert checked.exit_code == 3, checked.output
    assert (
        "cpu-smoke: UNKNOWN: its spec runs it every 24h, but schedules/cpu-smoke.json is "
        "missing: no run of it was ever started" in checked.output
    )
    assert "the last result finished 2026-12-03 05:59 UTC" in checked.output


def test_nothing_scheduled_is_said(repo: Path) -> None:
    checked = CliRunner().invoke(cli, ["--root", str(repo), "check", "--scheduled"])
    assert checked.exit_code == 0
    assert "no workflow is scheduled" in checked.output


def test_a_grace_of_0_is_no_grace(repo: Path, collector: Collect) -> None:
    """`--grace 0s` fell back to the run's deadline."""
    write_schedule(repo, RUN_1)
    _record(repo, succeeded(0))
    checked = collector("check", "--scheduled", "--now", "2026-12-04T06:30:00Z", "--grace", "0s")
    assert checked.exit_code == 1


@pytest.mark.parametrize("grace", ["1e400h", "99999999h", "-5m", "nan", "2 days"])
def test_a_grace_out_of_bounds_is_refused_naming_the_option(repo: Path, grace: str) -> None:
    """Issue #31: `--grace 1e400h` ran into an OverflowError's traceback."""
    write_schedule(repo, RUN_1)
    checked = CliRunner().invoke(
        cli, ["--root", str(repo), "check", "--scheduled", "--grace", grace]
    )
    assert checked.exit_code == 2
    assert "Invalid value for '--grace'" in checked.output
    assert checked.exception is None or isinstance(checked.exception, SystemExit)
