"""`collector sync`, `report --lake` and `forget --everywhere` against the real SeaweedFS
server: two roots publish the same fleet once, a third root with no database reports it
byte for byte as the first does, a different run under a published Job's name is refused,
a sync killed by SIGKILL leaves whole files only and a re-run finishes it, and a forgotten
run leaves no file in the lake."""

import gzip
import os
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from benchfleet.collector import cli
from contract.lake import raw_key, runs_prefix
from contract.options import DEFAULT_DATABASE
from store.published import EXTENSIONS, JSONL, parquet_digest, read_jsonl
from tests.collector.stored import NOW
from tests.lake.fleet import CLUSTERS, WORKFLOW, fleet, gathered, job, reported_alike
from tests.lakeserver import Lake

REPO_ROOT = Path(__file__).resolve().parents[2]


def collector(root: Path, lake: Lake, *arguments: str) -> Result:
    return CliRunner().invoke(cli, ["--root", str(root), *arguments], env=lake.env())


def keys(lake: Lake) -> list[str]:
    return [listed.key for listed in lake.store().list(runs_prefix(lake.url))]


def test_two_roots_publish_once_and_a_third_reports_from_the_lake_alone(
    tmp_path: Path, lake: Lake
) -> None:
    records = fleet(jobs_per_cluster=3, variants=4, samples=200)
    first = gathered(tmp_path / "first", records, NOW)
    second = gathered(tmp_path / "second", records, NOW + timedelta(hours=1))
    done = collector(first, lake, "sync")
    assert done.exit_code == 0, done.output
    assert "published 6 Jobs, 0 there already" in done.output
    assert len(keys(lake)) == 6 * len(EXTENSIONS)
    done = collector(second, lake, "sync")
    assert done.exit_code == 0, done.output
    assert "published 0 Jobs, 6 there already" in done.output
    assert f"already in the lake, the same run: {WORKFLOW}/{CLUSTERS[0]}/" in done.output
    assert len(keys(lake)) == 6 * len(EXTENSIONS)
    done = collector(first, lake, "sync")
    assert "published 0 Jobs, 0 there already, 6 published before" in done.output

    third = tmp_path / "third"
    third.mkdir()
    reported_alike(first, third, lake, WORKFLOW)
    every = collector(third, lake, "report", "--workflow", WORKFLOW, "--all-revisions", "--lake")
    assert every.exit_code == 0, every.output
    for record in records:
        assert record.job in every.stdout
    assert not (third / DEFAULT_DATABASE).exists()


def test_a_different_run_under_a_published_jobs_name_is_refused_and_nothing_overwritten(
    tmp_path: Path, lake: Lake
) -> None:
    records = fleet(jobs_per_cluster=1, variants=2, samples=50)
    first = gathered(tmp_path / "first", records, NOW)
    assert collector(first, lake, "sync").exit_code == 0
    before = {key: lake.store().get(key, 1 << 24) for key in keys(lake)}
    changed = [
        records[0].model_copy(update={"owner": "someone-else"}),
        *records[1:],
    ]
    other = gathered(tmp_path / "other", changed, NOW)
    done = collector(other, lake, "sync")
    assert done.exit_code == 1
    assert "the lake holds a different run under this Job's name" in done.output
    assert "nothing overwritten" in done.output
    assert {key: lake.store().get(key, 1 << 24) for key in keys(lake)} == before


def test_a_sync_killed_mid_way_leaves_whole_files_and_a_rerun_finishes_it(
    tmp_path: Path, lake: Lake
) -> None:
    records = fleet(jobs_per_cluster=40, variants=8, samples=2000)
    root = gathered(tmp_path / "root", records, NOW)
    env = {**os.environ, **lake.env(), "PYTHONPATH": str(REPO_ROOT)}
    command = [sys.executable, "-c", "from benchfleet.collector import cli; cli()"]
    process = subprocess.Popen(
        [*command, "--root", str(root), "sync", "--lake", str(lake.url)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while len(keys(lake)) < 10 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait()
    assert process.returncode == -signal.SIGKILL
    cut = keys(lake)
    assert 0 < len(cut) < len(records) * len(EXTENSIONS), "the sync was not stopped mid-way"
    for key in cut:
        data = lake.store().get(key, 1 << 26)
        if key.endswith(JSONL):
            read_jsonl(data, key)
            assert gzip.decompress(data).endswith(b"\n")
        else:
            assert parquet_digest(data, key)
    done = collector(root, lake, "sync")
    assert done.exit_code == 0, done.output
    assert len(keys(lake)) == len(records) * len(EXTENSIONS)
    third = tmp_path / "third"
    third.mkdir()
    arguments = ("report", "--workflow", WORKFLOW, "--format", "json")
    there = collector(third, lake, *arguments, "--lake")
    assert there.exit_code == 0, there.output
    assert there.stdout == collector(root, lake, *arguments).stdout


def test_forget_everywhere_removes_the_published_files_and_raw_objects_of_the_job_only(
    tmp_path: Path, lake: Lake
) -> None:
    records = fleet(jobs_per_cluster=2, variants=2, samples=20)
    root = gathered(tmp_path / "root", records, NOW)
    assert collector(root, lake, "sync").exit_code == 0
    gone, kept = job(CLUSTERS[0], 0), job(CLUSTERS[0], 1)
    for identity in (gone, kept):
        key = raw_key(
            lake.url,
            workflow=WORKFLOW,
            cluster=identity.cluster,
            job=identity.job,
            variant="v0",
            attempt="pod-0",
        )
        lake.store().put_once(key, b"{}")
    arguments = ("forget", "--cluster", gone.cluster, "--workflow", WORKFLOW, "--everywhere")
    done = collector(root, lake, *arguments, "--job", gone.job)
    assert done.exit_code == 0, done.output
    said = "removed 2 runs from the database, 1 record from results/ (commit the deletion), "
    assert f"{said}{len(EXTENSIONS) + 1} objects from {lake.url}" in done.output
    left = [listed.key for listed in lake.store().list(lake.url.key(""))]
    assert [key for key in left if gone.job in key] == []
    assert len([key for key in left if kept.job in key]) == len(EXTENSIONS) + 1
    assert len(left) == len(records) * len(EXTENSIONS) + 1 - len(EXTENSIONS)
    assert not (root / "results" / WORKFLOW / gone.cluster / f"{gone.job}.json").exists()
    reporting = ("report", "--workflow", WORKFLOW, "--all-revisions")
    for where in ((), ("--lake", str(lake.url))):
        report = collector(root, lake, *reporting, *where)
        assert report.exit_code == 0, report.output
        assert gone.job not in report.stdout
        assert kept.job in report.stdout


@pytest.mark.parametrize("ext", EXTENSIONS)
def test_each_published_file_is_whole_and_names_its_schema(
    tmp_path: Path, lake: Lake, ext: str
) -> None:
    root = gathered(tmp_path / "root", fleet(jobs_per_cluster=1, variants=2, samples=10), NOW)
    assert collector(root, lake, "sync").exit_code == 0
    files = [key for key in keys(lake) if key.endswith(f".{ext}")]
    assert len(files) == len(CLUSTERS)
    for key in files:
        data = lake.store().get(key, 1 << 24)
        if ext == JSONL:
            assert read_jsonl(data, key).record.workflow == WORKFLOW
        else:
            assert len(parquet_digest(data, key)) == 64


def test_a_sync_to_a_stopped_store_says_so_and_a_later_sync_publishes_everything(
    tmp_path: Path, lake: Lake
) -> None:
    records = fleet(jobs_per_cluster=1, variants=2, samples=10)
    root = gathered(tmp_path / "root", records, NOW)
    with lake.stopped():
        done = collector(root, lake, "sync")
    assert done.exit_code == 1
    assert "unreachable" in done.output
    assert lake.env()["AWS_SECRET_ACCESS_KEY"] not in done.output
    done = collector(root, lake, "sync")
    assert done.exit_code == 0, done.output
    assert f"published {len(records)} Jobs" in done.output


def test_a_report_from_the_lake_refuses_a_file_of_a_newer_schema_naming_it(
    tmp_path: Path, lake: Lake
) -> None:
    root = gathered(tmp_path / "root", fleet(jobs_per_cluster=1, variants=2, samples=10), NOW)
    assert collector(root, lake, "sync").exit_code == 0
    key = next(key for key in keys(lake) if key.endswith(JSONL))
    lines = gzip.decompress(lake.store().get(key, 1 << 24)).split(b"\n")
    newer = lines[0].replace(b'"schema_version":1', b'"schema_version":2')
    lake.store().delete([key])
    lake.store().put_once(key, gzip.compress(b"\n".join([newer, *lines[1:]])))
    done = collector(tmp_path, lake, "report", "--workflow", WORKFLOW, "--lake")
    assert done.exit_code == 1
    assert f"{key}: schema_version 2 is newer than the 1 this collector reads" in done.output


def test_forget_everywhere_from_a_root_with_nothing_but_the_lake(
    tmp_path: Path, lake: Lake
) -> None:
    records = fleet(jobs_per_cluster=2, variants=2, samples=10)
    root = gathered(tmp_path / "root", records, NOW)
    assert collector(root, lake, "sync").exit_code == 0
    bare = tmp_path / "bare"
    bare.mkdir()
    arguments = ("forget", "--cluster", CLUSTERS[1], "--workflow", WORKFLOW, "--everywhere")
    done = collector(bare, lake, *arguments, "--dry-run")
    assert done.exit_code == 0, done.output
    assert "would remove 0 runs from the database, 0 records from results/" in done.output
    assert len(keys(lake)) == len(records) * len(EXTENSIONS)
    done = collector(bare, lake, *arguments)
    assert done.exit_code == 0, done.output
    assert f"{2 * len(EXTENSIONS)} objects from {lake.url}" in done.output
    assert not [key for key in keys(lake) if f"cluster={CLUSTERS[1]}/" in key]
    assert len(keys(lake)) == len(records) // 2 * len(EXTENSIONS)
