"""Incremental sweeps: once a workflow's Jobs are recorded, an edit runs only the variants
whose measurement it changed (docs/synth.md, whose table of edits this file tests row by
row), a recorded failure is final until the spec file changes, and results/ that cannot be
read stop synth before it writes anything."""

import json
import shutil
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from contract.config import CONFIG_FILE, RunConfig
from contract.dist import read_workload
from contract.estimate import FIRST_CALLS, LOAD, STARTUP, Span
from contract.layout import FLEET_FILE, REPEAT_LABEL, REUSES_ANNOTATION, TARGET_LABEL, workload_file
from contract.records import parse_reuses
from synth.cli import cli
from synth.main import synth
from synth.object_budget import CONFIGMAP_DATA_BYTES
from tests.conftest import REPO_ROOT
from tests.synth.conftest import RecordJobs, WriteSpec, record_jobs_in
from tests.test_records import tiny_variants

SPEC = """\
id: sweep
description: incremental sweeps
owner: tests
clusters: [alpha]
models:
  - name: mlp
    file: models/examples/tiny-mlp.pt2
    inputs: [{shape: [64]}]
  - name: cnn
    file: models/examples/tiny-cnn.pt2
    inputs: [{shape: [3, 64, 64]}]
benchmark:
  warmup: {min_iterations: 5, min_time: 0.2s}
  measure: {min_iterations: 50, min_time: 1s, max_time: 20s}
targets:
  - gpu_type: cpu
  - name: gpu
    gpu_type: nvidia-t4
sweep:
  matrix: {batch_size: [1, 2]}
scheduling:
  retries: 2
  deadline: 30m
"""

T4 = "gpu_type: nvidia-t4\n"

Setting = tuple[str, str, int, str]
"""target, model, batch size, runtime: what a variant of SPEC measures."""

ALL: frozenset[Setting] = frozenset(
    (target, model, batch, "eager")
    for target in ("cpu", "gpu")
    for model in ("mlp", "cnn")
    for batch in (1, 2)
)


@dataclass(frozen=True)
class Edit:
    """One row of the table: an edit of SPEC (or of the repository), and what it touches."""

    apply: Callable[[Path, str], str]
    """(repository root, spec text) -> the new spec text; may change other files."""
    target: str | None = None
    model: str | None = None
    adds: frozenset[Setting] = frozenset()
    """Settings the edit adds to the workflow."""
    start: str = SPEC
    """The spec recorded before the edit."""
    new_repeats: frozenset[str] = frozenset()
    """The repeats (`benchmark.repeats`) the edit adds: what its Jobs' repeat labels say."""


def _spec(old: str, new: str, adds: frozenset[Setting] = frozenset()) -> Edit:
    return Edit(lambda _, text: _replaced(text, old, new), adds=adds)


def _replaced(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new)


def _other_model_file(root: Path, text: str) -> str:
    shutil.copy(REPO_ROOT / "models" / "zoo" / "mlp-w16-d1.pt2", root / "models" / "other.pt2")
    return _replaced(text, "models/examples/tiny-mlp.pt2", "models/other.pt2")


def _fleet_default_priority(root: Path, text: str) -> str:
    fleet = root / FLEET_FILE
    fleet.write_text(fleet.read_text(encoding="utf-8") + "default_priority: high\n")
    return text


def _fleet_results_store(root: Path, text: str) -> str:
    """A store added to a fleet whose Jobs are all recorded: the store renames Jobs
    (tests/synth/test_results_store.py), but a recorded Job is not emitted at all."""
    fleet = root / FLEET_FILE
    fleet.write_text(
        fleet.read_text(encoding="utf-8")
        + "results_store:\n  url: s3://benchmarks/team-a\n  endpoint: https://s3.example.com\n"
        "  region: us-east-1\n  credentials_secret: lake-writer\n"
        "  endpoint_cidrs: [192.0.2.0/24]\n"
    )
    return text


MEASURE = "  measure: {min_iterations: 50, min_time: 1s, max_time: 20s}\n"


def _repeats(count: int) -> str:
    return SPEC.replace(MEASURE, f"{MEASURE}  repeats: {count}\n")


EDITS: dict[str, Edit] = {
    "`sweep.matrix` (a value added)": _spec(
        "batch_size: [1, 2]",
        "batch_size: [1, 2, 4]",
        adds=frozenset((target, model, 4, how) for target, model, _, how in ALL),
    ),
    "`sweep.matrix.runtime` (inductor added)": _spec(
        "matrix: {batch_size: [1, 2]}\n",
        "matrix: {batch_size: [1, 2], runtime: [eager, inductor]}\n"
        "  exclude: [{target: gpu, runtime: inductor}]\n",
        adds=frozenset((t, m, b, "inductor") for t, m, b, _ in ALL if t == "cpu"),
    ),
    "`benchmark.runtime: eager` (written out)": _spec(MEASURE, f"{MEASURE}  runtime: eager\n"),
    "`benchmark.warmup`, `benchmark.measure`": _spec("min_iterations: 50", "min_iterations: 60"),
    "`benchmark.repeats` (raised)": Edit(
        lambda _, text: _repeats(3), start=_repeats(1), new_repeats=frozenset({"1", "2"})
    ),
    "`benchmark.repeats` (lowered)": Edit(lambda _, text: _repeats(2), start=_repeats(3)),
    "`image`": _spec(
        "owner: tests\n",
        "owner: tests\nimage: registry.example.com/benchfleet/runner@sha256:" + "2" * 64 + "\n",
    ),
    "`targets[].resources`": Edit(
        lambda _, text: _replaced(
            text, "gpu_type: nvidia-t4\n", "gpu_type: nvidia-t4\n    resources: large\n"
        ),
        target="gpu",
    ),
    "`targets[].spot`": Edit(
        lambda _, text: _replaced(
            text, "gpu_type: nvidia-t4\n", "gpu_type: nvidia-t4\n    spot: true\n"
        ),
        target="gpu",
    ),
    "`targets[].gpu_type`": Edit(
        lambda _, text: _replaced(text, "gpu_type: nvidia-t4", "gpu_type: nvidia-v100"),
        target="gpu",
    ),
    "`models[].file` (other bytes)": Edit(_other_model_file, model="mlp"),
    "`scheduling.priority`": _spec("retries: 2\n", "retries: 2\n  priority: high\n"),
    "`scheduling.retries`": _spec("retries: 2", "retries: 3"),
    "`scheduling.deadline`": _spec("deadline: 30m", "deadline: 1h"),
    "`scheduling.max_parallel`": _spec("retries: 2\n", "retries: 2\n  max_parallel: 3\n"),
    "`scheduling.variants_per_pod`": _spec("retries: 2\n", "retries: 2\n  variants_per_pod: 4\n"),
    "`benchmark.interleave`": Edit(
        lambda _, text: _replaced(
            _replaced(text, "retries: 2\n", "retries: 2\n  variants_per_pod: 4\n"),
            MEASURE,
            f"{MEASURE}  interleave: true\n",
        )
    ),
    "`benchmark.accuracy`, `models[].accuracy`": Edit(
        lambda _, text: _replaced(
            _replaced(text, MEASURE, f"{MEASURE}  accuracy: {{min_cosine: 0.9}}\n"),
            "inputs: [{shape: [64]}]\n",
            "inputs: [{shape: [64]}]\n    accuracy: {max_rel_error: 0.5}\n",
        )
    ),
    "`description`, `owner`": _spec("description: incremental sweeps", "description: edited"),
    "`default_priority` in `specs/clusters.yaml`": Edit(_fleet_default_priority),
    "`results_store` in `specs/clusters.yaml` (added)": Edit(_fleet_results_store),
}


def _table() -> dict[str, str]:
    """The rows of docs/synth.md's table: field edited -> what it re-runs."""
    text = (REPO_ROOT / "docs" / "synth.md").read_text(encoding="utf-8")
    table = text.split("<!-- rerun-table -->")[1].split("<!-- /rerun-table -->")[0]
    rows = [line.strip().strip("|").split("|") for line in table.strip().splitlines()[2:]]
    return {field.strip(): reruns.strip() for field, reruns in rows}


TABLE = _table()


def _expected(
    reruns: str, edit: Edit, before: frozenset[Setting], after: frozenset[Setting]
) -> frozenset[Setting]:
    match reruns:
        case "the new variants":
            return after - before
        case "the new repeats":
            return after
        case "everything":
            return after
        case "everything on that target":
            return frozenset(s for s in after if s[0] == edit.target)
        case "that model's variants":
            return frozenset(s for s in after if s[1] == edit.model)
        case "nothing":
            return frozenset()
    raise AssertionError(f"docs/synth.md: no test knows what {reruns!r} re-runs")


def running(root: Path, workflow: str = "sweep") -> dict[str, list[Setting]]:
    """Per Job in dist/, the settings its indexes run, in index order."""
    path = root / workload_file("alpha", workflow)
    if not path.is_file():
        return {}
    workload = read_workload(path)
    jobs = {}
    for job in workload.jobs:
        name = job["metadata"]["name"]
        config = RunConfig.model_validate_json(workload.configmaps[name]["data"][CONFIG_FILE])
        assert [v.index for v in config.variants] == list(range(len(config.variants)))
        assert job["spec"]["completions"] == config.completions
        jobs[name] = [
            (config.target, v.model, v.batch_size, str(v.runtime)) for v in config.variants
        ]
    return jobs


def repeats_running(root: Path) -> frozenset[str]:
    """The repeat labels of the Jobs in dist/ (none where the workflow runs each variant
    once)."""
    path = root / workload_file("alpha", "sweep")
    if not path.is_file():
        return frozenset()
    labels = [job["metadata"]["labels"] for job in read_workload(path).jobs]
    return frozenset(label[REPEAT_LABEL] for label in labels if REPEAT_LABEL in label)


def settings(jobs: dict[str, list[Setting]]) -> frozenset[Setting]:
    return frozenset(s for job in jobs.values() for s in job)


def test_every_row_of_the_docs_table_is_tested() -> None:
    assert TABLE.keys() == EDITS.keys()


@pytest.mark.parametrize("field", list(EDITS))
def test_an_edit_after_recording_reruns_what_the_docs_table_says(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs, field: str
) -> None:
    edit = EDITS[field]
    path = write_spec("sweep.yaml", edit.start)
    synth(spec_repo)
    assert settings(running(spec_repo)) == ALL
    record_jobs("sweep")
    synth(spec_repo)
    assert running(spec_repo) == {}, "a recorded workflow has nothing left to run"

    path.write_text(edit.apply(spec_repo, edit.start), encoding="utf-8")
    synth(spec_repo)
    assert settings(running(spec_repo)) == _expected(TABLE[field], edit, ALL, ALL | edit.adds)
    assert repeats_running(spec_repo) == edit.new_repeats


def test_adding_a_batch_size_runs_only_the_new_variants_then_nothing(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    path = write_spec("sweep.yaml", SPEC)
    synth(spec_repo)
    first = running(spec_repo)
    record_jobs("sweep")
    path.write_text(SPEC.replace("batch_size: [1, 2]", "batch_size: [1, 2, 4]"))
    synth(spec_repo)
    second = running(spec_repo)
    assert not second.keys() & first.keys(), "the new Jobs are new names"
    assert sorted(s for job in second.values() for s in job) == sorted(
        (t, m, 4, "eager") for t in ("cpu", "gpu") for m in ("mlp", "cnn")
    )
    record_jobs("sweep")
    synth(spec_repo)
    assert running(spec_repo) == {}


def test_a_job_says_which_recorded_variants_its_revision_reuses(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    """The annotation gather copies into the record, for the report to show them (collector)."""
    path = write_spec("sweep.yaml", SPEC)
    synth(spec_repo)
    first = read_workload(spec_repo / workload_file("alpha", "sweep"))
    batch_1 = {}
    for job in first.jobs:
        name = job["metadata"]["name"]
        config = RunConfig.model_validate_json(first.configmaps[name]["data"][CONFIG_FILE])
        batch_1[config.target] = (name, sorted(v.id for v in config.variants if v.batch_size == 1))
    record_jobs("sweep", failed={2})
    path.write_text(SPEC.replace("batch_size: [1, 2]", "batch_size: [1, 2, 4]"))
    synth(spec_repo)
    for job in read_workload(spec_repo / workload_file("alpha", "sweep")).jobs:
        old, ids = batch_1[job["metadata"]["labels"][TARGET_LABEL]]
        # Batch 1 is reused; batch 2 failed and the spec changed, so it runs again.
        reuses = parse_reuses(job["metadata"]["annotations"][REUSES_ANNOTATION])
        assert reuses == {old: tuple(ids)}


def test_a_recorded_failure_is_final_until_the_spec_file_changes(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    path = write_spec("sweep.yaml", SPEC)
    synth(spec_repo)
    record_jobs("sweep", failed={2})
    synth(spec_repo)
    assert running(spec_repo) == {}, "the same spec would fail the same way: nothing re-runs"
    path.write_text(SPEC.replace("retries: 2", "retries: 4"))
    synth(spec_repo)
    assert settings(running(spec_repo)) == {s for s in ALL if s[2] == 2}


def test_variants_says_which_run_and_which_record_each_reuses(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    path = write_spec("sweep.yaml", SPEC)
    synth(spec_repo)
    (cpu_job, _) = sorted(record_jobs("sweep"))
    path.write_text(SPEC.replace("batch_size: [1, 2]", "batch_size: [1, 2, 4]"))
    result = CliRunner().invoke(cli, ["--root", str(spec_repo), "variants", "sweep"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[-1] == "12 variants in specs/workflows/sweep.yaml: 4 run, 8 recorded"
    cpu_mlp_1 = next(
        line for line in lines if line.split()[2:7] == ["cpu", "mlp", "fp32", "none", "1"]
    )
    assert cpu_mlp_1.endswith(f"recorded in {cpu_job}")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (lambda: b'{"workflow": "sweep"}', "cluster: Field required"),
        # The reported record: 60 MiB that took synth to 3.1 GiB while parsed.
        (lambda: tiny_variants(60 << 20), "it holds about 5,470,838 values, more than 2,000,000"),
    ],
    ids=["not-a-record", "millions-of-tiny-variants"],
)
def test_a_record_that_cannot_be_read_is_a_located_error_and_nothing_is_written(
    spec_repo: Path,
    write_spec: WriteSpec,
    record_jobs: RecordJobs,
    content: Callable[[], bytes],
    message: str,
) -> None:
    write_spec("sweep.yaml", SPEC)
    synth(spec_repo)
    (job, _) = sorted(record_jobs("sweep"))
    record = spec_repo / "results" / "sweep" / "alpha" / f"{job}.json"
    record.write_bytes(content())
    dist = {p: p.read_bytes() for p in (spec_repo / "dist").rglob("*") if p.is_file()}
    tracemalloc.start()
    try:
        result = CliRunner().invoke(cli, ["--root", str(spec_repo), "synth"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.exit_code == 1
    assert f"results/sweep/alpha/{job}.json:1:1: not a results record: {message}" in result.stderr
    assert "Traceback" not in result.output
    assert {p: p.read_bytes() for p in (spec_repo / "dist").rglob("*") if p.is_file()} == dist
    assert peak < 2 * record.stat().st_size + (32 << 20)


def test_plan_says_per_job_what_runs_why_and_what_it_may_cost(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    path = write_spec("sweep.yaml", SPEC)
    synth(spec_repo)
    path.write_text(
        SPEC.replace("batch_size: [1, 2]", "batch_size: [1, 2, 4]").replace(
            "min_iterations: 50", "min_iterations: 60"
        )
    )
    result = CliRunner().invoke(cli, ["--root", str(spec_repo), "plan"])
    assert result.exit_code == 0, result.output
    (cpu,) = [line for line in result.stdout.splitlines() if "sweep/cpu" in line]
    (gpu,) = [line for line in result.stdout.splitlines() if "sweep/gpu" in line]
    assert "6 variants will run: 2 new, 4 changed (measure)" in cpu
    assert "GPU-hours" not in cpu and "GPU-hours" in gpu
    # Warmup at most 60 s by default, measurement at most 20 s, six variants: 8 minutes.
    assert "at most 8.0 pod-minutes measuring, 0.13 GPU-hours" in gpu


def test_a_batch_size_added_to_the_recorded_96_variant_sweep_runs_only_8(tmp_path: Path) -> None:
    """Issue 16's goal, on the committed example: 4 precisions x 2 quantizations more."""
    for folder in ("specs", "models"):
        shutil.copytree(REPO_ROOT / folder, tmp_path / folder)
    synth(tmp_path)
    record_jobs_in(tmp_path, "quantization-sweep", "eu-west")
    spec = tmp_path / "specs" / "workflows" / "quantization-sweep.yaml"
    spec.write_text(spec.read_text().replace("batch_size: [1, 2,", "batch_size: [1, 2, 3,"))
    synth(tmp_path)
    workload = read_workload(tmp_path / workload_file("eu-west", "quantization-sweep"))
    (job,) = workload.jobs
    assert job["spec"]["completions"] == 8
    config = RunConfig.model_validate_json(
        workload.configmaps[job["metadata"]["name"]]["data"][CONFIG_FILE]
    )
    assert {v.batch_size for v in config.variants} == {3}


def test_plan_estimates_a_job_from_earlier_runs_of_the_same_settings(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    path = write_spec("sweep.yaml", SPEC)
    synth(spec_repo)
    record_jobs("sweep", seconds=15.0)
    synth(spec_repo)
    path.write_text(SPEC.replace("min_iterations: 50", "min_iterations: 60"))
    result = CliRunner().invoke(cli, ["--root", str(spec_repo), "plan"])
    assert result.exit_code == 0, result.output
    (cpu,) = [line for line in result.stdout.splitlines() if "sweep/cpu" in line]
    # Four variants, each recorded at 15 s, and four pods whose start-up and model load (a
    # file: at most a ConfigMap's bytes) no record says, at their allowances.
    pods = (STARTUP.span(None) + LOAD.span(CONFIGMAP_DATA_BYTES)).times(4)
    total = Span.exactly(60.0) + pods
    assert "+ create" in cpu
    assert (
        f"about {total.likely_s / 60:.1f} pod-minutes (between {total.low_s / 60:.1f} and "
        f"{total.high_s / 60:.1f}): 4 by earlier runs' own time (retries not recorded); "
        "start-up allowed 8-30 s a pod (none recorded), 0 of 4 model loads recorded (the "
        f"others allowed by the model's size); {pods.likely_s / 60:.1f} pod-minutes of it by "
        "allowances" in cpu
    )
    assert "at most 5.3 pod-minutes measuring" in cpu


def test_plan_estimates_from_the_time_earlier_runs_were_allocated_where_recorded(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    """The allocated time (start-up, retries) is what a run costs; the runner's own time
    leaves that out, so where both are recorded the allocated time wins."""
    path = write_spec("sweep.yaml", SPEC)
    synth(spec_repo)
    record_jobs("sweep", seconds=15.0, allocated=45.0)
    synth(spec_repo)
    path.write_text(
        SPEC.replace("batch_size: [1, 2]", "batch_size: [1, 2, 4]").replace(
            "min_iterations: 50", "min_iterations: 60"
        )
    )
    result = CliRunner().invoke(cli, ["--root", str(spec_repo), "plan", "--format", "json"])
    assert result.exit_code == 0, result.output
    changes = {
        change["target"]: change
        for cluster in json.loads(result.stdout)["clusters"]
        for change in cluster["changes"]
    }
    # Four variants at 45 s each; two new ones at their loops' minimum time (a GPU's
    # iteration is not guessed: warm-up 0.2 s, measurement 1 s) and their first calls'
    # allowance; the new ones' share (2 of 6) of six pods' start-up and model loads (files:
    # at most a ConfigMap's bytes) at their allowances.
    size = CONFIGMAP_DATA_BYTES
    allowed = FIRST_CALLS.span(size).times(2) + (
        (STARTUP.span(None) + LOAD.span(size)).times(6).times(2 / 6)
    )
    loops = Span(0.0, 1.2, 80.0).times(2)
    total = Span.exactly(180.0) + loops + allowed
    estimate = changes["gpu"]["estimate"]
    assert (estimate["low_s"], estimate["seconds"], estimate["high_s"]) == pytest.approx(
        (total.low_s, total.likely_s, total.high_s)
    )
    assert estimate["allowed_s"] == pytest.approx(allowed.likely_s)
    assert {key: estimate[key] for key in ("from_history", "allocated", "loads", "compiled")} == {
        "from_history": 4,
        "allocated": 4,
        "loads": 6,
        "compiled": 0,
    }
    text = CliRunner().invoke(cli, ["--root", str(spec_repo), "plan"]).stdout
    (gpu,) = [line for line in text.splitlines() if "sweep/gpu" in line]
    assert (
        f"about {total.likely_s / 60:.1f} pod-minutes (between {total.low_s / 60:.1f} and "
        f"{total.high_s / 60:.1f}), {total.likely_s / 3600:.2f} GPU-hours: 4 by the time "
        "earlier runs were allocated, 2 by their loops' minimums and the allowances; start-up "
        "allowed 8-30 s a pod (none recorded), 0 of 6 model loads recorded (the others "
        f"allowed by the model's size); {allowed.likely_s / 60:.1f} pod-minutes of it by "
        "allowances (at most 8.0 pod-minutes measuring, 0.13 GPU-hours)" in gpu
    )


def test_a_tail_asked_for_reaches_config_json_and_is_part_of_the_measurement(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    path = write_spec("sweep.yaml", SPEC)
    synth(spec_repo)
    record_jobs("sweep")
    path.write_text(SPEC.replace("max_time: 20s}", "max_time: 20s, tail: p90}"))
    synth(spec_repo)
    assert settings(running(spec_repo)) == ALL, "a tail changes what is measured"
    workload = read_workload(spec_repo / workload_file("alpha", "sweep"))
    for job in workload.jobs:
        data = workload.configmaps[job["metadata"]["name"]]["data"][CONFIG_FILE]
        config = RunConfig.model_validate_json(data)
        assert (config.measure.tail, config.measure.least_iterations) == ("p90", 100)
        assert config.warmup.tail is None
