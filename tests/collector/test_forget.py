"""`collector forget` deletes stored runs: a local try freely, a cluster's only where results/
still holds them, and nothing at all when any asked-for run would be lost."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from benchfleet.collector import cli
from collector.forget import ForgetError, forget
from contract.lake import LAKE_ENV
from contract.layout import LOCAL_CLUSTER
from contract.options import DEFAULT_DATABASE
from contract.records import JobRecord, write_record
from store.database import open_store
from tests.collector.stored import JOB, NOW, failed, succeeded

LOCAL_JOB = JOB.model_copy(update={"cluster": LOCAL_CLUSTER})
OLDER_LOCAL_JOB = LOCAL_JOB.model_copy(update={"job": "cpu-smoke-cpu-0123456789"})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """Two local tries of cpu-smoke and one us-east run of it, all in the database."""
    with open_store(tmp_path / DEFAULT_DATABASE) as store:
        store.add(LOCAL_JOB, [succeeded(0), failed(1)], NOW)
        store.add(OLDER_LOCAL_JOB, [succeeded(0, p50_ms=3.0)], NOW)
        store.add(JOB, [succeeded(0), succeeded(1)], NOW)
    return tmp_path


def stored_jobs(repo: Path) -> set[tuple[str, str]]:
    with open_store(repo / DEFAULT_DATABASE) as store:
        return {(run.job.cluster, run.job.job) for run in store.runs("cpu-smoke")}


def run_forget(repo: Path, *arguments: str) -> tuple[int, str]:
    done = CliRunner().invoke(cli, ["--root", str(repo), "forget", *arguments])
    return done.exit_code, done.output


def test_local_tries_are_forgotten_and_the_clusters_runs_stay(repo: Path) -> None:
    code, output = run_forget(repo, "--cluster", LOCAL_CLUSTER)
    assert code == 0, output
    assert f"forgot 2 runs of cpu-smoke Job {LOCAL_JOB.job} in local" in output
    assert f"forgot 1 run of cpu-smoke Job {OLDER_LOCAL_JOB.job} in local" in output
    assert "forgot 3 runs in all" in output
    assert stored_jobs(repo) == {(JOB.cluster, JOB.job)}


def test_one_job_is_forgotten_by_name(repo: Path) -> None:
    code, output = run_forget(repo, "--cluster", LOCAL_CLUSTER, "--job", OLDER_LOCAL_JOB.job)
    assert code == 0, output
    assert stored_jobs(repo) == {(JOB.cluster, JOB.job), (LOCAL_CLUSTER, LOCAL_JOB.job)}


def test_a_dry_run_deletes_nothing(repo: Path) -> None:
    code, output = run_forget(repo, "--cluster", LOCAL_CLUSTER, "--dry-run")
    assert code == 0, output
    assert "would forget 3 runs in all" in output
    assert len(stored_jobs(repo)) == 3


def test_a_clusters_runs_held_only_here_are_refused(repo: Path) -> None:
    code, output = run_forget(repo, "--cluster", JOB.cluster)
    assert code != 0
    assert "refusing to forget runs held only in this database" in output
    assert f"cpu-smoke/{JOB.job}" in output
    assert len(stored_jobs(repo)) == 3


def test_a_clusters_recorded_runs_go_from_the_database_and_stay_in_results(repo: Path) -> None:
    record = JobRecord(
        **JOB.model_dump(), outcome="complete", variants=(succeeded(0), succeeded(1))
    )
    path, _ = write_record(repo, record)
    code, output = run_forget(repo, "--cluster", JOB.cluster)
    assert code == 0, output
    assert f"still recorded in results/, and so in the report: {JOB.job}" in output
    assert (JOB.cluster, JOB.job) not in stored_jobs(repo)
    assert path.is_file()


@pytest.mark.parametrize(
    ("cluster", "workflow", "jobs", "says"),
    [
        ("eu-west", None, (), "the database holds no runs of cluster eu-west"),
        (LOCAL_CLUSTER, "gpu-comparison", (), "no runs of cluster local, workflow gpu-comparison"),
        (LOCAL_CLUSTER, None, ("cpu-smoke-cpu-x",), "no stored Job named cpu-smoke-cpu-x"),
    ],
)
def test_nothing_to_forget_is_an_error_that_says_what_is_stored(
    repo: Path, cluster: str, workflow: str | None, jobs: tuple[str, ...], says: str
) -> None:
    with open_store(repo / DEFAULT_DATABASE) as store, pytest.raises(ForgetError, match=says):
        forget(store, repo, cluster, workflow=workflow, jobs=jobs)
    assert len(stored_jobs(repo)) == 3


def test_a_forgotten_try_can_be_a_baseline_no_more(repo: Path) -> None:
    """Before: the older try is the baseline of the newer one; after forgetting it, naming it
    is an error that lists what is left."""
    arguments = ["--root", str(repo), "report", "--workflow", "cpu-smoke"]
    done = CliRunner().invoke(cli, [*arguments, "--baseline-job", OLDER_LOCAL_JOB.job])
    assert done.exit_code == 0, done.output
    assert "Against the baseline" in done.output
    run_forget(repo, "--cluster", LOCAL_CLUSTER, "--job", OLDER_LOCAL_JOB.job)
    done = CliRunner().invoke(cli, [*arguments, "--baseline-job", OLDER_LOCAL_JOB.job])
    assert done.exit_code != 0
    assert f"no Job named {OLDER_LOCAL_JOB.job}" in done.output


def test_everywhere_removes_the_record_and_the_database_rows_of_the_job_named(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(LAKE_ENV, raising=False)
    record = JobRecord(
        **JOB.model_dump(), outcome="complete", variants=(succeeded(0), succeeded(1))
    )
    path, _ = write_record(repo, record)
    other = JOB.model_copy(update={"job": "cpu-smoke-cpu-1111111111"})
    other_path, _ = write_record(
        repo, JobRecord(**other.model_dump(), outcome="complete", variants=(succeeded(0),))
    )
    arguments = ("--cluster", JOB.cluster, "--workflow", "cpu-smoke", "--everywhere")
    code, output = run_forget(repo, *arguments, "--job", JOB.job, "--dry-run")
    assert code == 0, output
    assert path.is_file()
    assert f"would remove cpu-smoke Job {JOB.job} in us-east" in output
    code, output = run_forget(repo, *arguments, "--job", JOB.job)
    assert code == 0, output
    assert "removed 2 runs from the database, 1 record from results/" in output
    assert "nothing from a lake (none named" in output
    assert not path.exists()
    assert other_path.is_file()
    assert stored_jobs(repo) == {
        (LOCAL_CLUSTER, LOCAL_JOB.job),
        (LOCAL_CLUSTER, OLDER_LOCAL_JOB.job),
    }


def test_everywhere_needs_a_workflow_and_a_job_found_somewhere(repo: Path) -> None:
    code, output = run_forget(repo, "--cluster", JOB.cluster, "--everywhere")
    assert code != 0
    assert "--everywhere needs --workflow" in output
    code, output = run_forget(
        repo, "--cluster", JOB.cluster, "--workflow", "cpu-smoke", "--everywhere", "--job", "nope"
    )
    assert code != 0
    assert "no Job named nope of workflow cpu-smoke in cluster us-east" in output
    assert len(stored_jobs(repo)) == 3
