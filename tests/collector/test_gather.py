"""`collector gather`, end to end: the real `kubernetes` client against the stand-in API server
(standin/api.py: tests/cluster/ meets the real one), Jobs and pods shaped as Kubernetes 1.33
returns them (standin/objects.py, made from a workflow of its own: standin/fixture.py), a real
SQLite file and results/."""

import copy
import json
import shutil
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from benchfleet.collector import cli
from collector.workload import expected_from
from contract.accuracy import Accuracy, AccuracyGate, default_gate, gates_text
from contract.layout import (
    GATES_ANNOTATION,
    REPEAT_LABEL,
    REUSES_ANNOTATION,
    SCHEDULED_AT_ANNOTATION,
    SCHEDULED_RUN_LABEL,
)
from contract.records import read_record, reuses_text
from contract.result import OkResult, parse_result, without_samples
from contract.variant import Precision, Quantization
from standin import objects
from standin.api import FakeApiServer
from standin.fixture import fixture_root
from tests.collector.gathering import (
    NAMESPACE,
    NAMESPACES,
    WORKLOAD,
    Collect,
    Obj,
    finish_all,
    kubeconfig,
    record_of,
    requests,
    rows,
)
from tests.collector.stored import succeeded
from tests.test_records import tiny_variants


def test_a_finished_workflow_is_stored_and_recorded_in_one_gather(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    finish_all(api, job)
    run = collector("gather")
    assert run.exit_code == 0, run.output
    assert rows(repo) == [(i, "succeeded", "termination-message") for i in range(6)]
    record = read_record(record_of(repo, job))
    assert (record.outcome, len(record.variants), record.target) == ("complete", 6, "cpu")
    assert record.description and record.owner, "synth's annotations reach the record"
    assert all(v.result is not None and v.result.status == "ok" for v in record.variants)
    assert all(v.pod_start and v.pod_start.started_at for v in record.variants), (
        "each run says when its pod got its node and started its runner"
    )
    assert f"wrote {record_of(repo, job)}" in run.stdout
    assert not any(key.endswith("log") for key in requests(api)), "logs are not needed"


def test_results_carrying_every_iteration_are_stored_without_a_log_read(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """A real runner's result carries 1180 iterations (about 4 KB of samples): the message
    holds all the rest, so gather stores it from there, flagged until its samples are read,
    and the report has its intervals from the runner's summary."""
    finish_all(api, job)
    run = collector("gather")
    assert run.exit_code == 0, run.output
    assert not any(key.endswith("log") for key in requests(api)), "no request per variant"
    with sqlite3.connect(repo / ".benchfleet" / "results.sqlite") as db:
        query = "SELECT json_extract(result_json, '$.samples_in_log') FROM variant_runs"
        assert [flag for (flag,) in db.execute(query)] == [1] * 6
    lines = [objects.ok_result(job, i) for i in range(6)]
    assert all(isinstance(r, OkResult) and r.samples for r in lines), "the log line has them"


def test_samples_are_read_from_the_logs_when_asked_while_the_pods_are_there(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    finish_all(api, job)
    collector("gather", "--keep")
    lines = [objects.ok_result(job, i) for i in range(6)]
    pods = [objects.succeeded_pod(job, i)["metadata"]["name"] for i in range(6)]
    for index, line in enumerate(lines[:5]):
        api.set_log(NAMESPACE, pods[index], "runner", objects.runner_log(job, index, line))
    run = collector("samples")
    assert run.exit_code == 0, run.output
    assert "read the samples of 5 of 6 runs" in run.stdout
    assert f"{pods[5]}: samples not read: its log cannot be read" in run.stderr
    assert requests(api)["GET log"] == 6, "one read per pod"
    with sqlite3.connect(repo / ".benchfleet" / "results.sqlite") as db:
        stored = [text for (text,) in db.execute("SELECT result_json FROM variant_runs")]
    assert [parse_result(text) for text in stored[:5]] == lines[:5], "the log lines, whole"
    assert parse_result(stored[5]) == without_samples(lines[5]), "still unread, still there"
    again = collector("samples")
    assert "read the samples of 0 of 1 run" in again.stdout
    assert requests(api)["GET log"] == 7, "only the unread one is asked for again"


def test_a_recorded_job_is_not_gathered_again(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    finish_all(api, job)
    collector("gather")
    again = collector("gather")
    assert again.exit_code == 0
    assert "already recorded in results/" in again.stderr
    assert len(rows(repo)) == 6


def test_with_keep_gathering_twice_stores_each_variant_once(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    finish_all(api, job)
    collector("gather", "--keep")
    again = collector("gather", "--keep")
    assert "stored 0 variant runs (6 were stored before)" in again.stdout
    assert len(rows(repo)) == 6
    assert not record_of(repo, job).exists()


def test_gather_follows_the_jobs_until_they_finish(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    api.add("jobs", objects.job_status(job, active=6, ready=6))
    for index in range(6):
        api.add("pods", objects.running_pod(job, index))

    def finish_later() -> None:
        time.sleep(1.0)
        for index in range(6):
            api.update("pods", objects.succeeded_pod(job, index))
        api.update("jobs", objects.complete(job))

    threading.Thread(target=finish_later, daemon=True).start()
    run = collector("gather", "--timeout", "30s")
    assert run.exit_code == 0, run.output
    assert len(rows(repo)) == 6
    made = requests(api)
    # Followed by its watches, not by lists: one list of each kind, and one more of the Job's
    # pods where the Job's watch showed it complete before the pods' watch showed them
    # succeeded (the two are not ordered: gather.py `_confirmed`), as threads on a loaded
    # machine may deliver them.
    assert made["GET jobs"] == 1 and made["GET pods"] in (1, 2), made
    assert made["watch jobs"] <= 2 and made["watch pods"] <= 2, made


def test_failures_are_explained_stored_and_recorded(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    oom = objects.oom_killed_pod(job, 1, failures=2)
    api.set_log(NAMESPACE, oom["metadata"]["name"], "runner", objects.starting_log(job, 1))
    pods = [
        objects.succeeded_pod(job, 0),
        oom,
        objects.failed_pod(job, 2, "bad_config", "index 2 is out of range"),
        objects.succeeded_pod(job, 3, ignored=1),
        objects.succeeded_pod(job, 4),
        objects.succeeded_pod(job, 5),
    ]
    for pod in pods:
        api.add("pods", pod)
    failed = objects.failed_job(
        job, "FailedIndexes", completed=[0, 3, 4, 5], failed_indexes=[1, 2], failed=4
    )
    api.add("jobs", failed)
    run = collector("gather")
    assert run.exit_code == 1
    assert "OOMKilled" in run.stdout and "bad_config" in run.stdout
    assert "2 variants failed" in run.output
    record = read_record(record_of(repo, job))
    by_index = {v.index: v for v in record.variants}
    assert record.outcome == "failed"
    assert (by_index[1].state, by_index[1].reason) == ("failed", "OOMKilled")
    # No result came back, and config.json still says which variant it was.
    assert by_index[1].variant is not None and by_index[1].result is None
    assert (by_index[1].variant.model, by_index[1].variant.precision) == ("tiny-mlp", "bf16")
    assert "retries exhausted" in by_index[1].explanation
    assert (by_index[2].state, by_index[2].reason) == ("failed", "bad_config")
    assert (by_index[3].state, by_index[3].preemptions) == ("succeeded", 1)
    assert requests(api)["GET log"] == 1, "only the OOMKilled pod needed its log"


def test_a_timeout_stores_what_finished_and_says_why_the_rest_waits(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    for index in range(5):
        api.add("pods", objects.succeeded_pod(job, index))
    waiting = objects.unschedulable_pod(job, 5, message=None)
    api.add("pods", waiting)
    api.add("events", objects.failed_scheduling_event(waiting))
    api.add("jobs", objects.job_status(job, active=1, completed=range(5)))
    run = collector("gather", "--timeout", "2s")
    assert run.exit_code == 1
    assert "NOT FINISHED: 5 of 6 variants finished" in run.stdout
    assert "Insufficient nvidia.com/gpu" in run.stdout
    assert len(rows(repo)) == 5
    assert not record_of(repo, job).exists()


def test_an_interrupted_gather_resumes_without_duplicates(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    for index in range(3):
        api.add("pods", objects.succeeded_pod(job, index))
    api.add("jobs", objects.job_status(job, active=3, completed=range(3)))
    first = collector("gather", "--no-wait")
    assert first.exit_code == 1 and len(rows(repo)) == 3
    for index in range(3, 6):
        api.add("pods", objects.succeeded_pod(job, index))
    api.update("jobs", objects.complete(job))
    second = collector("gather", "--no-wait")
    assert second.exit_code == 0, second.output
    assert "stored 3 variant runs (3 were stored before)" in second.stdout
    assert [index for index, _, _ in rows(repo)] == list(range(6))
    assert len(read_record(record_of(repo, job)).variants) == 6


def test_a_malformed_termination_message_falls_back_to_the_log(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    finish_all(api, job)
    good = objects.with_termination_message(objects.succeeded_pod(job, 0), '{"status": "o')
    api.update("pods", good)
    log = objects.runner_log(job, 0, objects.ok_result(job, 0))
    api.set_log(NAMESPACE, good["metadata"]["name"], "runner", log)
    bad = objects.with_termination_message(objects.succeeded_pod(job, 1), "BENCH_RESULT {")
    api.update("pods", bad)
    api.set_log(NAMESPACE, bad["metadata"]["name"], "runner", "no result here\n")
    run = collector("gather")
    assert run.exit_code == 1
    stored = {index: (state, source) for index, state, source in rows(repo)}
    assert stored[0] == ("succeeded", "log")
    assert stored[1] == ("failed", None)
    assert "the pod succeeded but left no usable result" in run.stdout


def test_results_are_in_the_database_even_when_the_record_cannot_be_written(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    finish_all(api, job)
    blocked = record_of(repo, job).parent
    blocked.parent.mkdir(parents=True)
    blocked.write_text("a file where the folder should be")
    run = collector("gather")
    assert run.exit_code == 1
    assert "cannot write" in run.output
    assert len(rows(repo)) == 6


def test_a_fresh_clone_reports_from_the_records_alone(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    finish_all(api, job)
    collector("gather")
    (repo / ".benchfleet" / "results.sqlite").unlink()
    report = collector("report", "--format", "markdown")
    assert report.exit_code == 0, report.output
    assert "tiny-transformer" in report.stdout and "bf16" in report.stdout


def test_metrics_are_written_for_node_exporter(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    finish_all(api, job)
    textfile = repo / "metrics" / "benchfleet.prom"
    assert collector("gather", "--metrics-textfile", str(textfile)).exit_code == 0
    text = textfile.read_text()
    assert 'benchfleet_latency_p50_seconds{batch_size="4"' in text
    assert "benchfleet_job_duration_seconds_count" in text
    assert 'benchfleet_last_result_timestamp_seconds{batch_size="4"' in text


def test_the_last_result_stays_exported_when_a_gather_finds_nothing_new(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    finish_all(api, job)
    assert collector("gather").exit_code == 0
    textfile = repo / "metrics" / "benchfleet.prom"
    assert collector("gather", "--metrics-textfile", str(textfile)).exit_code == 0
    text = textfile.read_text()
    assert "benchfleet_latency_p50_seconds{" not in text, "nothing new was observed"
    assert 'benchfleet_last_result_timestamp_seconds{batch_size="4"' in text


def test_status_says_why_a_variant_waits(collector: Collect, api: FakeApiServer, job: Obj) -> None:
    waiting = objects.unschedulable_pod(job, 0, message=None)
    api.add("pods", waiting)
    api.add("events", objects.failed_scheduling_event(waiting))
    api.add("jobs", objects.job_status(job, active=1))
    run = collector("status")
    assert run.exit_code == 0, run.output
    assert "index 0: pending: unschedulable" in run.stdout
    assert "Insufficient nvidia.com/gpu" in run.stdout


def test_status_of_finished_variants_reads_no_log(
    collector: Collect, api: FakeApiServer, job: Obj
) -> None:
    """A 1000-variant `collector status` took 47 s when every result with samples cost a log
    read; the message holds what status counts."""
    finish_all(api, job)
    run = collector("status")
    assert run.exit_code == 0, run.output
    assert "succeeded 6  failed 0" in run.stdout
    assert not any(key.endswith("log") for key in requests(api))


def leftover(job: Obj, name: str = "cpu-smoke-cpu-0123456789") -> Obj:
    """The Job an earlier version of the spec made: same workflow, another content hash."""
    old = copy.deepcopy(job)
    old["metadata"]["name"] = name
    old["metadata"]["labels"]["job"] = old["metadata"]["name"]
    template_labels = old["spec"]["template"]["metadata"]["labels"]
    for key in ("job", "job-name", "batch.kubernetes.io/job-name"):
        template_labels[key] = old["metadata"]["name"]
    return old


def test_the_record_says_what_the_jobs_revision_reused(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """synth's annotation on the Job in dist/ reaches the record, where the report reads it."""
    workload = repo / WORKLOAD
    text = workload.read_text(encoding="utf-8")
    reuses = {"cpu-smoke-cpu-0123456789": ("v000000000001", "v000000000002")}
    documents = [d for d in yaml.safe_load_all(text) if d]
    for document in documents:
        if document["kind"] == "Job":
            document["metadata"]["annotations"][REUSES_ANNOTATION] = reuses_text(reuses)
    workload.write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    finish_all(api, job)
    assert collector("gather").exit_code == 0
    assert read_record(record_of(repo, job)).reuses == reuses


def test_the_record_and_the_store_say_which_repeat_the_job_is(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """synth's repeat label on the Job in dist/ reaches the record and the store, where the
    report groups a variant's repeats and synth reuses each repeat apart."""
    workload = repo / WORKLOAD
    documents = [d for d in yaml.safe_load_all(workload.read_text(encoding="utf-8")) if d]
    for document in documents:
        if document["kind"] == "Job":
            document["metadata"]["labels"][REPEAT_LABEL] = "1"
    workload.write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    finish_all(api, job)
    assert collector("gather").exit_code == 0
    assert read_record(record_of(repo, job)).repeat == 1
    with sqlite3.connect(repo / ".benchfleet" / "results.sqlite") as db:
        assert list(db.execute("SELECT DISTINCT repeat FROM variant_runs")) == [(1,)]


def test_a_finished_job_dist_no_longer_holds_is_gathered_too(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    finish_all(api, job)
    old = leftover(job)
    for index in range(6):
        api.add("pods", objects.succeeded_pod(old, index))
    api.add("jobs", objects.complete(old))
    run = collector("gather")
    assert run.exit_code == 0, run.output
    assert len(rows(repo)) == 12
    assert record_of(repo, old).exists()


def gather_with_a_leftover(collector: Collect, api: FakeApiServer, job: Obj) -> None:
    """The dist/ Job finished, and a finished Job of an earlier spec beside it, both gathered:
    the earlier one's results are stored, so clean may delete it."""
    finish_all(api, job)
    stored = leftover(job)
    for index in range(6):
        api.add("pods", objects.succeeded_pod(stored, index))
    api.add("jobs", objects.complete(stored))
    collector("gather")


def test_clean_deletes_only_finished_stored_jobs_that_dist_does_not_hold(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    gather_with_a_leftover(collector, api, job)
    running = leftover(job, "cpu-smoke-cpu-9999999999")
    api.add("jobs", objects.job_status(running, active=6))
    unstored = leftover(job, "cpu-smoke-cpu-8888888888")
    api.add("jobs", objects.complete(unstored))

    dry = collector("clean", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert "cpu-smoke-cpu-0123456789: would delete" in dry.stdout
    assert not [r for r in api.requests if r.method == "DELETE"]

    run = collector("clean")
    assert run.exit_code == 0, run.output
    deleted = [r.path.rsplit("/", 1)[-1] for r in api.requests if r.method == "DELETE"]
    assert deleted == ["cpu-smoke-cpu-0123456789"]
    assert "cpu-smoke-cpu-9999999999: keep: not in dist/, but still running" in run.stdout
    assert (
        "cpu-smoke-cpu-8888888888: keep: not in dist/ and finished, but its results" in run.stdout
    )
    assert job["metadata"]["name"] not in run.stdout, "a Job in dist/ is never a candidate"


def test_a_completed_index_waits_for_its_pod_to_show_the_result(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """Jobs and pods come on two watches: the Job may say an index completed while the pod
    as gather last saw it still runs. Storing then would record a success without its
    result as a failure."""
    api.add("jobs", objects.complete(job))
    for index in range(6):
        api.add("pods", objects.running_pod(job, index))
    early = collector("gather", "--no-wait")
    assert early.exit_code == 1 and rows(repo) == []
    for index in range(6):
        api.update("pods", objects.succeeded_pod(job, index))
    assert collector("gather", "--no-wait").exit_code == 0
    assert {state for _, state, _ in rows(repo)} == {"succeeded"}


def test_a_workflow_whose_jobs_all_left_dist_has_nothing_to_gather(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    finish_all(api, job)
    collector("gather")
    (repo / WORKLOAD).unlink()  # what `make synth` does once the record is there
    run = CliRunner().invoke(cli, ["--root", str(repo), "gather", "--workflow", "cpu-smoke"])
    assert run.exit_code == 0, run.output
    assert "every Job of cpu-smoke is recorded in results/cpu-smoke/ (us-east)" in run.stderr


def git(repo: Path, *arguments: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *arguments],
        check=True,
        capture_output=True,
    )


def test_report_flags_a_regression_against_the_records_at_a_git_revision(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    finish_all(api, job)
    collector("gather")
    git(repo, "init", "-q")
    git(repo, "add", "results")
    git(repo, "commit", "-q", "-m", "results of last week")
    path = record_of(repo, job)
    # This week index 0 ran 40 % slower: every latency figure of its result scaled up.
    record = read_record(path)
    slower = record.variants[0].result
    assert isinstance(slower, OkResult)
    scaled = slower.latency.model_copy(
        update={
            k: v * 1.4
            for k, v in slower.latency.model_dump().items()
            if k.endswith("_ms") and v is not None
        }
    )
    variants = (
        record.variants[0].model_copy(
            update={"result": slower.model_copy(update={"latency": scaled})}
        ),
        *record.variants[1:],
    )
    path.write_text(record.model_copy(update={"variants": variants}).model_dump_json())
    (repo / ".benchfleet" / "results.sqlite").unlink()
    run = collector("report", "--format", "markdown", "--baseline", "HEAD")
    assert run.exit_code == 0, run.output
    assert "🔴 **1 regression against the baseline**" in run.stdout


def test_a_record_of_millions_of_tiny_variants_is_refused_in_the_checkout_and_in_git(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """The reported record (60 MiB, 3.1 GiB while parsed) is told apart by its size and
    count, whether the checkout or a baseline revision holds it."""
    finish_all(api, job)
    collector("gather")
    (repo / ".benchfleet" / "results.sqlite").unlink()
    path = record_of(repo, job)
    good = path.read_bytes()
    path.write_bytes(tiny_variants(60 << 20))
    git(repo, "init", "-q")
    git(repo, "add", "results")
    git(repo, "commit", "-q", "-m", "a record replaced")
    run = collector("report", "--format", "markdown")
    assert run.exit_code == 1
    assert f"{path} is not a results record: it holds about 5," in run.output
    path.write_bytes(good)
    run = collector("report", "--format", "markdown", "--baseline", "HEAD")
    assert run.exit_code == 1
    assert "HEAD:results/" in run.output and "is not a results record: it holds about 5," in (
        run.output
    )
    assert "Traceback" not in run.output


def test_json_logs_carry_the_jobs_context(api: FakeApiServer, repo: Path, job: Obj) -> None:
    finish_all(api, job)
    run = CliRunner().invoke(
        cli,
        ["--root", str(repo), "--log-format", "json", "gather", "--workflow", "cpu-smoke"],
        env={"BENCHFLEET_K8S_KUBECONFIG": kubeconfig(api.url)},
    )
    assert run.exit_code == 0, run.output
    lines = [json.loads(line) for line in run.stderr.splitlines() if line.startswith("{")]
    (finished,) = [line for line in lines if line["message"].startswith("Job complete")]
    assert finished["job_id"] == job["metadata"]["name"]
    assert (finished["namespace"], finished["gpu_type"], finished["workflow_id"]) == (
        NAMESPACE,
        "cpu",
        "cpu-smoke",
    )


class TestClusterIdentity:
    """Nothing is recorded under a cluster the credential is not confirmed to reach (#15)."""

    def test_a_credential_reaching_another_cluster_is_refused(
        self, collector: Collect, api: FakeApiServer, repo: Path, job: Obj
    ) -> None:
        finish_all(api, job)
        api.update("configmaps", objects.cluster_identity("eu-west", NAMESPACE))
        run = collector("gather")
        assert run.exit_code == 1
        assert "reach cluster 'eu-west'" in run.stderr
        assert "not us-east: nothing is recorded under us-east" in run.stderr
        assert not (repo / ".benchfleet" / "results.sqlite").exists() or rows(repo) == []
        assert not record_of(repo, job).exists()

    def test_a_cluster_that_does_not_say_which_it_is_is_refused(
        self, collector: Collect, api: FakeApiServer, repo: Path, job: Obj
    ) -> None:
        finish_all(api, job)
        api.delete("configmaps", NAMESPACE, "benchfleet-cluster")
        run = collector("gather")
        assert run.exit_code == 1
        assert "cannot confirm that the credentials" in run.stderr
        assert "dist/us-east/infrastructure/" in run.stderr
        assert not record_of(repo, job).exists()

    @staticmethod
    def _two_clusters(repo: Path) -> Callable[[FakeApiServer], Result]:
        """dist/ running cpu-smoke in us-east and eu-west; a gather of every cluster with a
        credential that reaches us-east alone."""
        for cluster in ("us-east", "eu-west"):
            for path in (WORKLOAD, NAMESPACES):
                local = Path(str(path).replace("us-east", cluster))
                (repo / local).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(fixture_root() / local, repo / local)

        def gather(api: FakeApiServer) -> Result:
            return CliRunner().invoke(
                cli,
                ["--root", str(repo), "gather", "--workflow", "cpu-smoke"],
                env={
                    "BENCHFLEET_K8S_KUBECONFIG": kubeconfig(api.url),
                    "KUBECONFIG": "/nonexistent",
                },
            )

        return gather

    def test_a_gather_with_nothing_new_where_it_reaches_is_no_failure(
        self, api: FakeApiServer, repo: Path, job: Obj
    ) -> None:
        """Issue #31: the second gather exited 1 saying no cluster could be confirmed, though
        us-east had been, and had nothing new."""
        gather = self._two_clusters(repo)
        finish_all(api, job)
        assert gather(api).exit_code == 0
        again = gather(api)
        assert again.exit_code == 0, again.output
        assert "us-east: nothing left of cpu-smoke to follow" in again.stderr
        assert "eu-west: skipped: " in again.stderr
        assert "nothing new to gather of cpu-smoke (us-east: all recorded)" in again.stdout

    def test_without_cluster_one_credential_gathers_only_the_cluster_it_reaches(
        self, api: FakeApiServer, repo: Path, job: Obj
    ) -> None:
        """The defect: a single-context kubeconfig stored us-east's Job under both clusters."""
        gather = self._two_clusters(repo)
        finish_all(api, job)
        run = gather(api)
        assert run.exit_code == 0, run.output
        assert "eu-west: skipped: the credentials from environment variable" in run.stderr
        assert "reach cluster 'us-east'" in run.stderr
        assert "us-east: stored 6 variant runs" in run.stdout
        assert sorted(p.name for p in (repo / "results" / "cpu-smoke").iterdir()) == ["us-east"]
        with sqlite3.connect(repo / ".benchfleet" / "results.sqlite") as db:
            assert list(db.execute("SELECT DISTINCT cluster FROM variant_runs")) == [("us-east",)]


def test_clean_with_a_role_in_one_namespace_cleans_there_and_says_what_it_skipped(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """The defect: a collector whose Role is in benchfleet-dev got a 403 elsewhere and aborted
    before deleting anything."""
    gather_with_a_leftover(collector, api, job)
    forbidden = 'jobs.batch is forbidden: User "system:serviceaccount:benchfleet-dev:c" cannot'
    api.fail_next(1000, 403, path_contains="/namespaces/benchfleet-prod/", message=forbidden)
    run = collector("clean")
    assert run.exit_code == 0, run.output
    assert "us-east/benchfleet-prod: skipped: the credential may not list Jobs here" in run.stderr
    assert "cpu-smoke-cpu-0123456789: delete: not in dist/, finished, results stored" in run.stdout
    deleted = [r.path.rsplit("/", 1)[-1] for r in api.requests if r.method == "DELETE"]
    assert deleted == ["cpu-smoke-cpu-0123456789"]
    listed = {r.path for r in api.requests if r.method == "GET" and r.path.endswith("/jobs")}
    assert all("/namespaces/" in path for path in listed), "nothing is listed cluster-wide"


def test_clean_that_may_list_no_namespace_fails_saying_so(
    collector: Collect, api: FakeApiServer
) -> None:
    api.fail_next(1000, 403, path_contains="/jobs")
    run = collector("clean")
    assert run.exit_code == 1
    assert "may not list Jobs in any benchfleet namespace (benchfleet-dev, benchfleet-prod)" in (
        run.output
    )


def _measured(job: Obj, index: int, cosine: float) -> OkResult:
    result = objects.ok_result(job, index)
    assert isinstance(result, OkResult)
    accuracy = Accuracy(seed=0, cosine=cosine, max_rel_error=1e-7, top1_agreement=1.0)
    return result.model_copy(update={"accuracy": accuracy})


def _judged(repo: Path) -> list[tuple[int, str | None, int | None]]:
    with sqlite3.connect(repo / ".benchfleet" / "results.sqlite") as db:
        query = "SELECT job_index, accuracy_gate, accuracy_failed FROM variant_runs ORDER BY 1"
        return list(db.execute(query))


@pytest.mark.parametrize("edited", [False, True], ids=["as synth wrote it", "gate loosened"])
def test_each_result_is_judged_by_the_gate_its_job_says(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj, edited: bool
) -> None:
    """Index 0 (fp32) matches its reference; index 1 (bf16) is far from it: outside the
    default gate, inside a loosened one (an edited spec, whose annotation Flux updates in
    place, under the same Job name); the rest carry no accuracy: not judged."""
    if edited:
        workload = repo / "dist" / "us-east" / "workloads" / "cpu-smoke.yaml"
        loose = gates_text((i, AccuracyGate(min_cosine=0.9)) for i in range(6))
        documents = list(yaml.safe_load_all(workload.read_text(encoding="utf-8")))
        for document in documents:
            document["metadata"].setdefault("annotations", {})[GATES_ANNOTATION] = loose
        workload.write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    results = {0: _measured(job, 0, 1.0), 1: _measured(job, 1, 0.98)}
    for index in range(6):
        api.add("pods", objects.succeeded_pod(job, index, results.get(index)))
    api.add("jobs", objects.complete(job))
    run = collector("gather")
    assert run.exit_code == 0, run.output
    judged = _judged(repo)
    assert [failed for _, _, failed in judged] == [0, 0 if edited else 1, None, None, None, None]
    gate = AccuracyGate.model_validate_json(str(judged[1][1]))
    assert gate.min_cosine == (0.9 if edited else 0.999)
    stored = read_record(record_of(repo, job)).variants
    assert [v.accuracy_failed for v in stored[:2]] == [False, not edited]
    assert stored[1].accuracy_gate == gate


def test_a_gates_annotation_that_is_not_synths_leaves_the_default_gates(
    job: Obj, caplog: pytest.LogCaptureFixture
) -> None:
    edited = copy.deepcopy(job)
    edited["metadata"]["annotations"][GATES_ANNOTATION] = '[{"gate": {"min_cosine": 5}}]'
    expected = expected_from("us-east", edited)
    assert expected.gates == {}
    assert f"annotation {GATES_ANNOTATION} is not synth's, ignored" in caplog.text
    stored = succeeded(0).judged(expected.gates.get(0))
    assert stored.accuracy_gate == default_gate(Precision.FP32, Quantization.NONE)
    assert expected_from("us-east", job).gates, "synth's own annotation is read"


@pytest.mark.parametrize("text", ["yesterday", "2026-13-01T00:00:00Z", "0001-01-01T00:00:00Z"])
def test_a_scheduled_at_annotation_that_is_no_time_is_said_and_left_out(
    job: Obj, caplog: pytest.LogCaptureFixture, text: str
) -> None:
    """Issue #31: the annotation was stored and recorded as it came, unread."""
    edited = copy.deepcopy(job)
    edited["metadata"]["labels"][SCHEDULED_RUN_LABEL] = "3"
    edited["metadata"]["annotations"][SCHEDULED_AT_ANNOTATION] = text + "x" * 10_000
    identity = expected_from("us-east", edited).identity
    assert (identity.scheduled_run, identity.scheduled_at) == (3, None)
    assert f"annotation {SCHEDULED_AT_ANNOTATION} is not synth's, ignored: " in caplog.text
    assert "x" * 100 not in caplog.text, "the value is cut short"
    edited["metadata"]["annotations"][SCHEDULED_AT_ANNOTATION] = "2026-12-07T00:00:00Z"
    read = expected_from("us-east", edited).identity.scheduled_at
    assert read is not None and read.isoformat() == "2026-12-07T00:00:00+00:00"


def test_a_gather_of_a_job_with_a_bad_scheduled_at_records_it_without(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    finish_all(api, job)
    old = leftover(job)
    old["metadata"]["labels"][SCHEDULED_RUN_LABEL] = "3"
    old["metadata"]["annotations"][SCHEDULED_AT_ANNOTATION] = "not a time"
    for index in range(6):
        api.add("pods", objects.succeeded_pod(old, index))
    api.add("jobs", objects.complete(old))
    run = collector("gather")
    assert run.exit_code == 0, run.output
    assert "annotation benchfleet.io/scheduled-at is not synth's, ignored" in run.stderr
    record = read_record(record_of(repo, old))
    assert (record.scheduled_run, record.scheduled_at) == (3, None)


@pytest.mark.parametrize("timeout", ["nan", "1e400h", "99999999h", "-1s"])
def test_a_timeout_out_of_bounds_is_refused_naming_the_option(
    collector: Collect, timeout: str
) -> None:
    """`--timeout nan` never ended (no comparison with nan is true); `1e400h` overflowed."""
    run = collector("gather", "--timeout", timeout)
    assert run.exit_code == 2
    assert "Invalid value for '--timeout'" in run.output
