"""The local executor runs a synthesized Job's pods through the real runner, as `make demo` does.

The workload is dist/'s cpu-smoke file with shorter measurement windows written into its
config.json, so each pod takes about as long as importing torch.
"""

import json
import os
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from benchfleet.collector import cli as collector_cli
from contract.dist import read_workload
from contract.reported import REPORTED_DIR, REPORTED_ENV, REPORTED_VOLUME, reported_configmap
from contract.result import ErrorInfo, ErrorResult, compact
from localrun.__main__ import main
from localrun.cli import run_workflow
from localrun.pod import PodPlan, PodRun, PodSpecError
from localrun.process import process_environment, run_process
from localrun.streams import Watch
from localrun.workflow import pod_plans, read_outcome, workload_file
from tests.conftest import REPO_ROOT
from tests.localrun.conftest import DATABASE, SMOKE, EditConfig, quick, stored


def plan_for(root: Path, index: int, workdir: Path) -> PodPlan:
    workload = workload_file(root, "cpu-smoke", None)
    return next(pod_plans(read_workload(workload), workdir, (index,)))


@pytest.mark.slow
def test_a_pod_runs_the_runner_on_the_configmaps_files(quick_root: Path, tmp_path: Path) -> None:
    plan = plan_for(quick_root, 3, tmp_path / "pod")
    outcome = read_outcome(plan, run_process(plan, timeout_s=300))
    assert outcome.problem is None, outcome.run.stderr
    result = outcome.result
    assert result is not None and result.variant is not None
    assert (result.status, result.workflow, result.variant.index) == ("ok", "cpu-smoke", 3)
    assert result.environment is not None
    assert result.environment.pod_name == f"{plan.job_name}-3-local"
    assert plan.cpu_limit is not None and result.environment.threads <= plan.cpu_limit
    assert json.loads(outcome.run.termination_log)["status"] == "ok"


def test_container_paths_in_the_env_point_at_the_volume_files(tmp_path: Path) -> None:
    plan = plan_for(REPO_ROOT, 0, tmp_path / "pod")
    env, termination_log = process_environment(plan)
    assert json.loads(Path(env["CONFIG_PATH"]).read_text())["workflow"] == "cpu-smoke"
    assert sorted(path.name for path in Path(env["MODEL_PATH"]).iterdir()) == [
        "tiny-cnn.pt2",
        "tiny-mlp.pt2",
        "tiny-transformer.pt2",
    ]
    assert Path(env["TMPDIR"]).is_dir() and env["HOME"] == env["TMPDIR"]
    assert Path(env["TERMINATION_LOG"]) == termination_log
    assert all(str(tmp_path) in env[name] for name in ("CONFIG_PATH", "MODEL_PATH", "TMPDIR"))


def test_the_callers_environment_does_not_leak_into_the_pod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "64")
    env, _ = process_environment(plan_for(REPO_ROOT, 0, tmp_path / "pod"))
    assert "OMP_NUM_THREADS" not in env
    assert set(env) - set(os.environ) >= {"WORKFLOW_ID", "CONFIG_PATH", "VARIANT_INDEX"}


def test_every_index_of_every_job_gets_a_plan(tmp_path: Path) -> None:
    workload = read_workload(SMOKE)
    (job,) = workload.jobs
    plans = list(pod_plans(workload, tmp_path))
    assert [plan.index for plan in plans] == list(range(job["spec"]["completions"]))
    assert len({plan.workdir for plan in plans}) == len(plans)


def test_an_unknown_workflow_names_those_dist_holds() -> None:
    with pytest.raises(PodSpecError, match=r"no workflow 'cpu-smok'.*cpu-smoke"):
        workload_file(REPO_ROOT, "cpu-smok", None)


def pod_run(stdout: str = "", termination_log: str = "", stderr: str = "") -> PodRun:
    return PodRun(["runner"], stdout, stderr, exit_code=3, termination_log=termination_log)


@pytest.fixture
def plan(tmp_path: Path) -> PodPlan:
    return plan_for(REPO_ROOT, 0, tmp_path / "pod")


def test_the_termination_log_stands_in_when_the_result_line_is_missing(plan: PodPlan) -> None:
    failed = ErrorResult(error=ErrorInfo(type="model_load", message="bad sha"))
    outcome = read_outcome(plan, pod_run(termination_log=compact(failed)))
    assert outcome.result == failed


def test_a_malformed_result_line_is_reported_not_raised(plan: PodPlan) -> None:
    outcome = read_outcome(plan, pod_run(stdout='BENCH_RESULT {"status": "ok"}\n'))
    assert outcome.result is None
    assert outcome.problem is not None and outcome.problem.startswith("malformed result")


def test_a_pod_without_a_result_shows_its_exit_code_and_stderr(plan: PodPlan) -> None:
    outcome = read_outcome(plan, pod_run(stderr="Traceback\nMemoryError"))
    assert outcome.problem == "exit 3, no result; stderr: Traceback | MemoryError"


def test_the_command_stores_local_runs_and_reports_them(quick_root: Path) -> None:
    run = CliRunner().invoke(main, ["cpu-smoke", "--root", str(quick_root), "--index", "0"])
    assert run.exit_code == 0, run.output
    ((cluster, index, state, p50_ms),) = stored(quick_root)
    assert (cluster, index, state) == ("local", 0, "succeeded")
    assert p50_ms is not None and p50_ms > 0
    assert "benchfleet report: cpu-smoke" in run.stdout
    assert "tiny-mlp" in run.stdout and "local" in run.stdout
    # Judged by the gate the Job says, as gather judges a cluster's run: fp32 against its
    # own fp32 reference passes.
    with sqlite3.connect(quick_root / DATABASE) as db:
        query = (
            "SELECT json_extract(accuracy_gate, '$.min_cosine'), accuracy_failed FROM variant_runs"
        )
        assert db.execute(query).fetchall() == [(0.99999, 0)]
    assert "passed (cosine 1" in run.stdout
    # Its start-up as a cluster pod's: this machine its node, its process the container.
    with sqlite3.connect(quick_root / DATABASE) as db:
        ((start, finished),) = db.execute("SELECT pod_start, finished_at FROM variant_runs")
    times = json.loads(start)
    assert times["scheduled_at"] <= times["started_at"] <= finished
    assert "Start-up on cpu (local): 1 pod" in run.stdout
    assert "runner start: Python, imports" in run.stdout


def collected(root: Path) -> list[str]:
    with sqlite3.connect(root / DATABASE) as db:
        return [row[0] for row in db.execute("SELECT collected_at FROM variant_runs")]


def test_a_second_try_reuses_the_first_and_again_runs_it_over_it(quick_root: Path) -> None:
    command = ["cpu-smoke", "--root", str(quick_root), "--index", "0"]
    first = CliRunner().invoke(main, command)
    assert first.exit_code == 0, first.output
    first_try = r"\n  cpu: about [\d.]+ pod-minutes .*1 by their loops' minimums"
    assert re.search(first_try, first.output), "a first try goes by the loops and allowances"
    before = collected(quick_root)
    second = CliRunner().invoke(main, command)
    assert second.exit_code == 0, second.output
    assert "reusing 1 variant that earlier local tries measured" in second.output
    assert "index 0: tiny-mlp" in second.output and "reused, measured" in second.output
    assert "running 0 pods" in second.output
    assert "tiny-mlp" in second.stdout, "the report shows the reused run"
    assert collected(quick_root) == before, "nothing ran, nothing was stored again"
    again = CliRunner().invoke(main, [*command, "--again"])
    assert again.exit_code == 0, again.output
    assert "reusing" not in again.output and "running 1 pod" in again.output
    assert "pod-minutes" not in second.output, "nothing to run, nothing to estimate"
    estimated = "pod-minutes: 1 by earlier runs' own time (retries not recorded); start-up"
    assert estimated in again.output, "the second try goes by the first"
    assert len(stored(quick_root)) == 1, "the Job's own run replaced"


def test_the_command_fails_when_a_pod_reports_an_error(
    make_root: Callable[[EditConfig], Path],
) -> None:
    def corrupt_sha(config: dict[str, Any]) -> None:
        quick(config)
        config["models"]["tiny-mlp"]["sha256"] = "0" * 64

    root = make_root(corrupt_sha)
    run = CliRunner().invoke(main, ["cpu-smoke", "--root", str(root), "--index", "1"])
    assert run.exit_code == 1
    assert "runner error model_mismatch (exit 7)" in run.stdout and "sha256" in run.stdout
    assert "1 of 1 variant did not succeed" in run.output
    assert stored(root)[0][2] == "failed"
    retried = CliRunner().invoke(main, ["cpu-smoke", "--root", str(root), "--index", "1"])
    assert "reusing" not in retried.output, "a failure is tried again"
    assert "runner error model_mismatch" in retried.stdout


def test_a_try_of_one_index_is_judged_by_that_index_alone(
    make_root: Callable[[EditConfig], Path],
) -> None:
    """A try per pod (`--index N`) passes or fails by its own pod: an earlier try's failure
    of another index of the Job is reported, not held against it."""

    def second_fails(config: dict[str, Any]) -> None:
        quick(config)
        config["variants"][1]["inputs"] = [{"shape": [3, 8], "dtype": "float32"}]

    root = make_root(second_fails)
    failed = CliRunner().invoke(main, ["cpu-smoke", "--root", str(root), "--index", "1"])
    assert failed.exit_code == 1
    assert "1 of 1 variant did not succeed" in failed.output
    passed = CliRunner().invoke(main, ["cpu-smoke", "--root", str(root), "--index", "0"])
    assert passed.exit_code == 0, passed.output
    assert "did not succeed" not in passed.output
    assert "runner error bad_config" in passed.stdout, "index 1's failure is still reported"
    assert [(index, state) for _, index, state, _ in stored(root)] == [
        (0, "succeeded"),
        (1, "failed"),
    ]


def test_a_try_after_an_edit_is_compared_with_the_one_before_and_both_can_be_forgotten(
    quick_root: Path,
) -> None:
    first = CliRunner().invoke(main, ["cpu-smoke", "--root", str(quick_root), "--index", "0"])
    assert first.exit_code == 0, first.output
    workload = quick_root / "dist" / "us-east" / "workloads" / SMOKE.name
    (job,) = read_workload(workload).jobs
    old = job["metadata"]["name"]
    assert f"--baseline-job {old}` compares a new try with this one" in first.output
    # A spec edit gives the Job a new content-hash name: the earlier try stays stored.
    workload.write_text(workload.read_text(encoding="utf-8").replace(old, f"{old}x"))
    second = CliRunner().invoke(
        main, ["cpu-smoke", "--root", str(quick_root), "--index", "0", "--again"]
    )
    assert second.exit_code == 0, second.output
    collector = ["--root", str(quick_root)]
    compared = CliRunner().invoke(
        collector_cli,
        [
            *collector,
            "report",
            "--workflow",
            "cpu-smoke",
            "--baseline-job",
            old,
            "--format",
            "json",
        ],
    )
    assert compared.exit_code == 0, compared.output
    document = json.loads(compared.output)
    (change,) = document["baseline"]["changes"]
    current = document["variants"][change["current"]]  # rows are written once, by index
    assert (change["baseline"]["job"], current["job"]) == (old, f"{old}x")
    forgotten = CliRunner().invoke(collector_cli, [*collector, "forget", "--cluster", "local"])
    assert forgotten.exit_code == 0, forgotten.output
    assert "forgot 2 runs in all" in forgotten.output
    assert stored(quick_root) == []


def test_a_grouped_pod_stores_every_variant_of_its_group(
    make_root: Callable[[EditConfig], Path],
) -> None:
    def grouped(config: dict[str, Any]) -> None:
        quick(config)
        config["groups"] = [[0, 1, 2], [3, 4, 5]]
        # One variant of the group fails on its own: the others are stored all the same.
        config["variants"][1]["inputs"] = [{"shape": [3, 8], "dtype": "float32"}]

    root = make_root(grouped)
    workload = root / "dist" / "us-east" / "workloads" / SMOKE.name
    workload.write_text(
        workload.read_text(encoding="utf-8").replace("completions: 6", "completions: 2")
    )
    run = CliRunner().invoke(main, ["cpu-smoke", "--root", str(root), "--index", "0"])
    assert run.exit_code == 1
    assert "index 0: ok, error, ok" in run.output
    assert "1 of 3 variants did not succeed" in run.output
    assert [(index, state) for _, index, state, _ in stored(root)] == [
        (0, "succeeded"),
        (1, "failed"),
        (2, "succeeded"),
    ]


def _group_pods(workload: Path) -> None:
    """Two pods of three variants, as synth writes a Job with variants_per_pod 3: each pod
    reads the ids its index need not run from the folder a retry's come in."""
    documents = list(yaml.safe_load_all(workload.read_text(encoding="utf-8")))
    for document in documents:
        if document and document["kind"] == "Job":
            document["spec"]["completions"] = 2
            pod = document["spec"]["template"]["spec"]
            name = reported_configmap(document["metadata"]["name"])
            pod["volumes"].append(
                {"name": REPORTED_VOLUME, "configMap": {"name": name, "optional": True}}
            )
            (container,) = pod["containers"]
            container["volumeMounts"].append(
                {"name": REPORTED_VOLUME, "mountPath": REPORTED_DIR, "readOnly": True}
            )
            container["env"].append({"name": REPORTED_ENV, "value": REPORTED_DIR})
    workload.write_text(yaml.safe_dump_all(documents), encoding="utf-8")


def test_a_try_after_an_edit_runs_only_what_changed_and_reports_the_rest_as_reused(
    make_root: Callable[[EditConfig], Path],
) -> None:
    """A grouped pod whose group an edit changed in part: its runner is handed the ids an
    earlier local try measured, as a retry is, and runs the rest; the reports show both."""

    def grouped(config: dict[str, Any]) -> None:
        quick(config)
        config["groups"] = [[0, 1, 2], [3, 4, 5]]

    root = make_root(grouped)
    workload = root / "dist" / "us-east" / "workloads" / SMOKE.name
    _group_pods(workload)
    first = CliRunner().invoke(main, ["cpu-smoke", "--root", str(root), "--index", "0"])
    assert first.exit_code == 0, first.output
    (job,) = read_workload(workload).jobs
    old = job["metadata"]["name"]
    # The edit: variant 2 measures something else now (a new id), and so the Job is renamed.
    text = workload.read_text(encoding="utf-8").replace(old, f"{old}x")
    variant_id = json.loads(read_workload(workload).configmaps[old]["data"]["config.json"])[
        "variants"
    ][2]["id"]
    workload.write_text(text.replace(variant_id, f"{variant_id}0"))
    second = CliRunner().invoke(main, ["cpu-smoke", "--root", str(root), "--index", "0"])
    assert second.exit_code == 0, second.output
    assert "reusing 2 variants that earlier local tries measured" in second.output
    assert "and 2 variants that pods running the rest of their group skip" in second.output
    assert "index 0: ok" in second.output and "index 0: ok, ok" not in second.output
    with sqlite3.connect(root / DATABASE) as db:
        rows = list(db.execute("SELECT job, job_index FROM variant_runs ORDER BY job, job_index"))
    assert rows == [(old, 0), (old, 1), (old, 2), (f"{old}x", 2)]
    report = CliRunner().invoke(
        collector_cli,
        ["--root", str(root), "report", "--workflow", "cpu-smoke", "--cluster", "local",
         "--format", "json", "--baseline-job", old],
    )  # fmt: skip
    assert report.exit_code == 0, report.output
    document = json.loads(report.output)
    assert sorted(row["job"] for row in document["variants"]) == [old, old, f"{old}x"]
    assert len(document["baseline"]["reused"]) == 2, "the reused runs are the same runs"


def _renamed(workload: Path) -> None:
    """What `make synth` does to a Job whose spec was edited: a new content-hash name."""
    (job,) = read_workload(workload).jobs
    old = job["metadata"]["name"]
    workload.write_text(workload.read_text(encoding="utf-8").replace(old, f"{old}x"))


# What `make synth` may do to the workloads file while a pod runs.
MEANWHILE: dict[str, Callable[[Path], None]] = {
    "the spec was edited: the Job renamed": _renamed,
    "the Job was recorded: the file left dist/": Path.unlink,
}


@pytest.mark.slow
@pytest.mark.parametrize("meanwhile", list(MEANWHILE))
def test_what_ran_is_stored_under_the_job_it_ran_as_whatever_synth_did_meanwhile(
    quick_root: Path, meanwhile: str
) -> None:
    workload = quick_root / "dist" / "us-east" / "workloads" / SMOKE.name
    (job,) = read_workload(workload).jobs

    def synth_meanwhile(plan: PodPlan, watch: Watch) -> PodRun:
        MEANWHILE[meanwhile](workload)
        return run_process(plan, timeout_s=300, watch=watch)

    run_workflow(quick_root, DATABASE, "cpu-smoke", None, (0,), executor=synth_meanwhile)
    with sqlite3.connect(quick_root / DATABASE) as db:
        rows = list(db.execute("SELECT cluster, job, job_index, state FROM variant_runs"))
    assert rows == [("local", job["metadata"]["name"], 0, "succeeded")]


def test_a_run_that_stores_nothing_fails(make_root: Callable[[EditConfig], Path]) -> None:
    root = make_root(quick)
    workload = root / "dist" / "us-east" / "workloads" / SMOKE.name
    documents = [d for d in yaml.safe_load_all(workload.read_text()) if d and d["kind"] != "Job"]
    workload.write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    run = CliRunner().invoke(main, ["cpu-smoke", "--root", str(root)])
    assert run.exit_code == 1
    assert f"nothing to store: dist/us-east/workloads/{SMOKE.name} holds no pod to run" in (
        run.output
    )
