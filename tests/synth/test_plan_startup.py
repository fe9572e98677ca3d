"""`make plan`'s estimate from earlier runs counts what a pod costs besides its variants'
loops: its start-up (the kubelet's part and the runner process's) once per pod, and each
model's load once per pod and model, where results/ recorded them, and says so."""

import json
from pathlib import Path

from click.testing import CliRunner

from contract.layout import record_path, recorded_jobs
from contract.records import PodStart, StoredVariant, read_record, write_record
from contract.result import ModelLoad, OkResult, PhaseTiming
from synth.cli import cli
from synth.main import synth
from tests.synth.conftest import RecordJobs, WriteSpec
from tests.synth.test_incremental import SPEC

PHASE = PhaseTiming(iterations=10, seconds=2.0, stopped_by="minimums")


def _with_startup(stored: StoredVariant) -> StoredVariant:
    """A variant as a schema-4 runner and a gather that reads pods' starts record it: its pod
    got its node at :00 and started the runner at :08, the process took 4 s to its code,
    the model's fetch and load 3 s, the variant's own parts 5 s."""
    result = stored.result
    assert isinstance(result, OkResult) and result.timings is not None
    timings = result.timings.model_copy(
        update={
            "load_s": 3.5,
            "copy_s": 0.5,
            "prepare_s": 0.5,
            "first_iteration_ms": 0.0,
            "warmup": PHASE,
            "measure": PHASE,
            "process_s": 4.0,
            "model": ModelLoad(source="file", file_bytes=1000, fetch_s=1.0, load_s=2.0),
        }
    )
    return stored.model_copy(
        update={
            "pod": f"pod-{stored.index}",
            "pod_start": PodStart(
                scheduled_at="2026-12-06T09:00:00Z", started_at="2026-12-06T09:00:08Z"
            ),
            "result": result.model_copy(update={"timings": timings}),
        }
    )


def _record_startups(spec_repo: Path) -> None:
    """Rewrite each recorded Job of `sweep` in `alpha` with its pods' start-ups (_with_startup)."""
    for job in recorded_jobs(spec_repo, "sweep", "alpha"):
        record = read_record(record_path(spec_repo, "sweep", "alpha", job))
        variants = tuple(map(_with_startup, record.variants))
        write_record(spec_repo, record.model_copy(update={"variants": variants}))


def _planned_after_an_edit(spec_repo: Path, path: Path, *arguments: str) -> str:
    """`plan`'s output once the measure's minimum changed: a Job per target created, each
    of the same settings as the recorded one before it."""
    synth(spec_repo)
    path.write_text(SPEC.replace("min_iterations: 50", "min_iterations: 60"))
    result = CliRunner().invoke(cli, ["--root", str(spec_repo), "plan", *arguments])
    assert result.exit_code == 0, result.output
    return result.stdout


def _cpu_line(output: str) -> str:
    (cpu,) = [line for line in output.splitlines() if "sweep/cpu" in line]
    return cpu


def test_the_estimate_counts_each_pods_start_up_and_model_loads_where_recorded(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    path = write_spec("sweep.yaml", SPEC)
    synth(spec_repo)
    record_jobs("sweep", seconds=1.0)
    _record_startups(spec_repo)
    cpu = _cpu_line(_planned_after_an_edit(spec_repo, path))
    # Four pods of one variant each: 4 x 5 s of variants, 4 x (8 + 4) s of start-up, 4 x 3 s
    # of model loads: 80 s.
    assert (
        "about 1.3 pod-minutes: 4 by earlier runs' own time (retries not recorded); start-up "
        "12 s a pod by 4 earlier pods, 4 of 4 model loads recorded" in cpu
    )
    planned = CliRunner().invoke(cli, ["--root", str(spec_repo), "plan", "--format", "json"])
    assert planned.exit_code == 0, planned.output
    changes = json.loads(planned.stdout)["clusters"][0]["changes"]
    (estimate,) = [c["estimate"] for c in changes if c["target"] == "cpu"]
    assert estimate["seconds"] == 80.0 and estimate["startup_s"] == 12.0


def test_without_recorded_start_ups_the_estimate_allows_for_them_and_says_so(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    path = write_spec("sweep.yaml", SPEC)
    synth(spec_repo)
    record_jobs("sweep", seconds=15.0)
    cpu = _cpu_line(_planned_after_an_edit(spec_repo, path))
    assert (
        "4 by earlier runs' own time (retries not recorded); start-up allowed 8-30 s a pod (none "
        "recorded), 0 of 4 model loads recorded (the others allowed by the model's size)" in cpu
    )


def test_an_allocated_run_holds_its_pods_start_up_and_loads_so_they_are_not_added_again(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    path = write_spec("sweep.yaml", SPEC)
    synth(spec_repo)
    record_jobs("sweep", seconds=1.0, allocated=30.0)
    _record_startups(spec_repo)
    output = _planned_after_an_edit(spec_repo, path, "--format", "json")
    changes = json.loads(output)["clusters"][0]["changes"]
    (estimate,) = [c["estimate"] for c in changes if c["target"] == "cpu"]
    # Four variants allocated 30 s each, start-up and loads within: 120 s, though 12 s of
    # start-up a pod and 3 s a load are recorded too.
    assert (estimate["seconds"], estimate["allocated"], estimate["startup_s"]) == (120.0, 4, 12.0)
