"""`collector report --format html` writes one self-contained file where --output says, and
refuses a folder rather than filling it; the report shows the Job of each target the user
asks about (the newest by default), every failure of it, and says where each number is from."""

import csv
import hashlib
import io
import json
import subprocess
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchfleet.collector import cli
from collector.cli import HTML_REPORT
from contract.layout import LOCAL_CLUSTER
from contract.options import DEFAULT_DATABASE
from contract.records import JobIdentity, JobRecord, write_record
from report.model import Notes, build_report
from report.text import to_text
from store.database import StoredRun, open_store
from store.history import CURRENT, SpecRevision, record_ages, spec_revisions
from tests.collector.stored import JOB, NOW, failed, succeeded
from tests.report.test_report import (  # noqa: F401 - fixtures
    DEADLINE,
    OLD_JOB,
    TODAY_JOB,
    make_run,
    revisions,
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    with open_store(tmp_path / DEFAULT_DATABASE) as store:
        store.add(JOB, [succeeded(0, p50_ms=1.5), succeeded(1, p50_ms=2.5), failed(2)], NOW)
    return tmp_path


def report(repo: Path, *arguments: str, workflow: str = "cpu-smoke") -> tuple[int, str]:
    done = CliRunner().invoke(
        cli, ["--root", str(repo), "report", "--workflow", workflow, *arguments]
    )
    return done.exit_code, done.output


def test_the_page_is_one_file_at_the_repository_root_by_default(repo: Path) -> None:
    code, output = report(repo, "--format", "html")
    assert code == 0, output
    page = repo / HTML_REPORT
    assert f"wrote {page}" in output
    text = page.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and "data:image/png;base64," in text
    assert [path.name for path in repo.iterdir() if path.suffix == ".png"] == []


def test_the_page_goes_where_output_names_it(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "out" / "weekly.html"
    target.parent.mkdir()
    code, output = report(repo, "--format", "html", "--output", str(target))
    assert code == 0, output
    assert "Failed (1)" in target.read_text(encoding="utf-8")


def test_a_folder_as_output_is_refused_and_left_alone(repo: Path, tmp_path: Path) -> None:
    folder = tmp_path / "report.html"
    folder.mkdir()
    code, output = report(repo, "--format", "html", "--output", str(folder))
    assert code == 1
    assert f"--output {folder} is a folder; name the file to write" in output
    assert list(folder.iterdir()) == []


def record(runs: list[StoredRun], failure: str | None = None) -> JobRecord:
    """The record gather writes for the Job of `runs`."""
    identity = runs[0].job.model_dump(include=set(JobIdentity.model_fields))
    return JobRecord(
        **identity,
        outcome="failed" if failure else "complete",
        failure=failure,
        variants=tuple(run.variant for run in runs),
    )


@pytest.fixture
def history(
    revisions: tuple[list[StoredRun], list[StoredRun]],  # noqa: F811
    tmp_path: Path,
) -> tuple[Path, JobRecord]:
    """A checkout with two revisions' records of the a100 Job, the newest cut short by its
    deadline and also in the database (gather stores before it records); and that record."""
    today, last_week = revisions
    newest = record(today, failure="DeadlineExceeded: the Job was active longer than allowed")
    write_record(tmp_path, record(last_week))
    write_record(tmp_path, newest)
    with open_store(tmp_path / DEFAULT_DATABASE) as store:
        store.add(today[0].job, [run.variant for run in today], NOW)
    return tmp_path, newest


def gpu_report(repo: Path, *arguments: str) -> tuple[int, str]:
    return report(repo, *arguments, workflow="gpu-comparison")


def test_the_report_shows_every_failure_of_the_newest_record(
    history: tuple[Path, JobRecord],
) -> None:
    repo, newest = history
    code, output = gpu_report(repo, "--format", "json")
    assert code == 0, output
    document = json.loads(output)
    recorded = [variant for variant in newest.variants if variant.state == "failed"]
    assert len(document["failures"]) == len(recorded) == 2
    assert [row["job"] for row in document["variants"]] == [TODAY_JOB]
    code, text = gpu_report(repo)
    assert "1 variant measured, 2 failed." in text
    assert "The newest Job of each target; 1 older Job left out" in text
    assert DEADLINE in text


def test_an_older_revision_is_reported_when_named(history: tuple[Path, JobRecord]) -> None:
    code, output = gpu_report(history[0], "--job", OLD_JOB, "--format", "json")
    assert code == 0, output
    document = json.loads(output)
    assert [(row["job"], row["latency"]["p50_ms"]) for row in document["variants"]] == [
        (OLD_JOB, 1.0),
        (OLD_JOB, 1.5),
        (OLD_JOB, 4.0),
        (OLD_JOB, 20.0),
    ]
    assert document["failures"] == []


def test_all_revisions_name_the_job_of_every_row(history: tuple[Path, JobRecord]) -> None:
    code, output = gpu_report(history[0], "--all-revisions", "--format", "csv")
    assert code == 0, output
    rows = list(csv.DictReader(io.StringIO(output)))
    assert [(row["status"], row["batch_size"], row["job"]) for row in rows] == [
        ("measured", "1", TODAY_JOB),
        ("measured", "2", OLD_JOB),
        ("failed", "8", TODAY_JOB),
        ("failed", "64", TODAY_JOB),
    ]


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        (("--job", "gpu-comparison-a100-x"), "no Job named gpu-comparison-a100-x; "),
        (("--job", OLD_JOB, "--all-revisions"), "--job and --all-revisions exclude each other"),
    ],
)
def test_a_job_selection_that_cannot_be_met_is_refused(
    history: tuple[Path, JobRecord], arguments: tuple[str, ...], says: str
) -> None:
    code, output = gpu_report(history[0], *arguments)
    assert code != 0
    assert says in output


def test_cluster_keeps_local_tries_apart_from_the_clusters_run_of_the_same_job(
    tmp_path: Path,
) -> None:
    """localrun stores a try under the Job's own name: the cluster that ran the same Job has
    a run of that name too, and `--baseline-job` alone picked both."""
    local = JOB.model_copy(update={"cluster": LOCAL_CLUSTER})
    edited = local.model_copy(update={"job": f"{JOB.job}x"})
    with open_store(tmp_path / DEFAULT_DATABASE) as store:
        store.add(JOB, [succeeded(0, p50_ms=1.0)], NOW)
        store.add(local, [succeeded(0, p50_ms=2.0)], NOW - timedelta(hours=1))
        store.add(edited, [succeeded(0, p50_ms=3.0)], NOW)
    suggested = ("--baseline-job", JOB.job, "--format", "json")
    code, output = report(tmp_path, *suggested)
    assert code == 1 and f"the baseline Job {JOB.job} is also reported" in output
    code, output = report(tmp_path, "--cluster", LOCAL_CLUSTER, *suggested)
    assert code == 0, output
    document = json.loads(output)
    assert [(row["key"]["cluster"], row["job"]) for row in document["variants"]] == [
        (LOCAL_CLUSTER, edited.job)
    ]
    (change,) = document["baseline"]["changes"]
    assert (change["baseline"]["job"], change["ratio"]["value"]) == (JOB.job, 1.5)
    code, output = report(tmp_path, "--cluster", "eu-west")
    assert code == 1
    assert "no results for workflow 'cpu-smoke' in cluster 'eu-west'; it has results in " in (
        output
    )
    assert "local, us-east" in output


def _git(root: Path, *arguments: str) -> str:
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    return subprocess.run(
        ["git", "-C", str(root), *identity, *arguments], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_commit_of_a_spec_is_the_one_holding_the_bytes_the_job_was_made_from(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "specs" / "workflows" / "w.yaml"
    spec.parent.mkdir(parents=True)
    _git(tmp_path, "init", "-q")
    versions = []
    for text in ("id: w  # first\n", "id: w  # second\n"):
        spec.write_text(text)
        _git(tmp_path, "add", "-A")
        _git(tmp_path, "commit", "-q", "-m", text)
        versions.append(
            (hashlib.sha256(text.encode()).hexdigest(), _git(tmp_path, "rev-parse", "HEAD"))
        )
    spec.write_text("id: w  # not committed\n")
    uncommitted = hashlib.sha256(b"id: w  # not committed\n").hexdigest()
    file = "specs/workflows/w.yaml"
    found = spec_revisions(tmp_path, [(file, sha) for sha, _ in versions] + [(file, uncommitted)])
    assert found == {
        (file, versions[0][0]): SpecRevision(versions[0][1], 1),
        (file, versions[1][0]): SpecRevision(versions[1][1], 0),
        (file, uncommitted): SpecRevision(None, CURRENT),
    }
    elsewhere = spec_revisions(tmp_path / "specs", [(file, versions[0][0])])
    assert elsewhere == {}, "not a repository, nor the checkout's bytes"


def test_provenance_names_the_commit_of_each_reported_jobs_spec(
    revisions: tuple[list[StoredRun], list[StoredRun]],  # noqa: F811
) -> None:
    today, last_week = revisions
    job = today[0].job
    commit = "c0ffee" * 7
    notes = Notes(
        spec_revisions={(job.spec_file or "", job.spec_sha256 or ""): SpecRevision(commit, 0)}
    )
    provenance = to_text(build_report([*last_week, *today], notes=notes)).split("Provenance")[1]
    assert commit[:12] in provenance


def test_records_are_ordered_by_the_commits_that_added_them(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    folder = tmp_path / "results" / "w" / "us-east"
    folder.mkdir(parents=True)
    for job in ("w-cpu-first", "w-cpu-second"):
        (folder / f"{job}.json").write_text("{}\n")
        _git(tmp_path, "add", "-A")
        _git(tmp_path, "commit", "-q", "-m", job)
    (folder / "w-cpu-uncommitted.json").write_text("{}\n")
    assert record_ages(tmp_path, "w") == {
        ("us-east", "w-cpu-second"): 0,
        ("us-east", "w-cpu-first"): 1,
    }
    assert record_ages(tmp_path / "results", "w") == {}, "no such folder from there"
