"""`make plan`'s estimate counts what its bounds do not: a first run's compiles, conversions
and first calls, each pod's start-up and each model's load, at their stated allowances
(contract/estimate.py); and a Job whose target ran before on a CPU without what its
variants need gets a note saying so."""

import json
from pathlib import Path
from typing import Any, Final

import pytest
from click.testing import CliRunner

from contract.config import ModelConfig, ModelSource, PhaseConfig
from contract.estimate import (
    CONVERSION,
    FIRST_CALLS,
    FIRST_COMPILE,
    LOAD,
    STARTUP,
    likely_iteration_s,
    loop_span,
)
from contract.layout import record_path, recorded_jobs
from contract.records import StoredVariant, read_record, write_record
from contract.result import Environment, OkResult
from contract.weights import LayerRecord
from synth.cli import cli
from synth.main import synth
from synth.object_budget import CONFIGMAP_DATA_BYTES
from synth.plan import PARAMETER_BYTES, known_bytes
from tests.conftest import REPO_ROOT
from tests.synth.conftest import RecordJobs, WriteSpec

SPEC: Final = """\
id: compiled
description: eager and compiled, fp32 and bf16
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
sweep:
  matrix: {precision: [fp32, bf16], runtime: [eager, inductor]}
scheduling:
  deadline: 30m
"""
HASWELL: Final = ("avx", "avx2", "f16c", "fma", "sse", "sse2", "sse4_1", "sse4_2", "ssse3")
"""Issue 32's CPU: no AVX-512, VNNI or bf16."""


def _plan(root: Path, *arguments: str) -> str:
    result = CliRunner().invoke(cli, ["--root", str(root), "plan", *arguments])
    assert result.exit_code == 0, result.output
    return result.stdout


def _change(output: str) -> dict[str, Any]:
    (change,) = json.loads(output)["clusters"][0]["changes"]
    return change  # type: ignore[no-any-return]


def test_a_first_runs_estimate_counts_its_compiles_and_what_else_lies_outside_the_bounds(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec("compiled.yaml", SPEC)
    estimate = _change(_plan(spec_repo, "--format", "json"))["estimate"]
    # 8 variants (2 models x 2 precisions x eager and inductor), each in its own pod with
    # its model (a file: at most a ConfigMap's bytes): its loops, every variant's first
    # calls, the 4 bf16 ones' conversion, the 4 compiled ones' compile (each the first of
    # its pod), 8 start-ups and 8 loads.
    size = CONFIGMAP_DATA_BYTES
    allowed = (
        FIRST_CALLS.span(size).times(8)
        + CONVERSION.span(size).times(4)
        + FIRST_COMPILE.span(None).times(4)
        + STARTUP.span(None).times(8)
        + LOAD.span(size).times(8)
    )
    iteration = likely_iteration_s(size)
    loops = loop_span(
        PhaseConfig(min_iterations=5, min_time_s=0.2, max_iterations=10_000, max_time_s=60.0),
        iteration,
    ) + loop_span(
        PhaseConfig(min_iterations=50, min_time_s=1.0, max_iterations=1_000_000, max_time_s=20.0),
        iteration,
    )
    total = loops.times(8) + allowed
    assert (estimate["compiled"], estimate["unsized"]) == (4, 0)
    assert estimate["allowed_s"] == pytest.approx(allowed.likely_s)
    assert (estimate["low_s"], estimate["seconds"], estimate["high_s"]) == pytest.approx(
        (total.low_s, total.likely_s, total.high_s)
    )
    assert estimate["high_s"] == pytest.approx(8 * 80.0 + allowed.high_s)
    (line,) = [line for line in _plan(spec_repo).splitlines() if "compiled/cpu" in line]
    assert (
        "8 by their loops' minimums and the allowances (4 compiling, likely 80 s the first in "
        "a pod and 35 s a later one)"
    ) in line
    assert f"about {total.likely_s / 60:.1f} pod-minutes (between " in line
    assert "(at most 10.7 pod-minutes measuring)" in line


def _ran_on(flags: tuple[str, ...], stored: StoredVariant) -> StoredVariant:
    result = stored.result
    assert isinstance(result, OkResult)
    environment = Environment(
        python="3.13", torch="2.13", device="cpu", device_name="Intel Xeon E5-2680 v3",
        cpu_model="Intel Xeon E5-2680 v3", threads=2, hostname="pod", cpu_flags=flags,
    )  # fmt: skip
    return stored.model_copy(
        update={"result": result.model_copy(update={"environment": environment})}
    )


def _record_machine(root: Path, flags: tuple[str, ...]) -> None:
    for job in recorded_jobs(root, "compiled", "alpha"):
        record = read_record(record_path(root, "compiled", "alpha", job))
        variants = tuple(_ran_on(flags, stored) for stored in record.variants)
        write_record(root, record.model_copy(update={"variants": variants}))


def test_a_job_whose_target_ran_on_a_cpu_without_what_it_needs_gets_a_note(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    path = write_spec("compiled.yaml", SPEC)
    synth(spec_repo)
    record_jobs("compiled", seconds=10.0)
    _record_machine(spec_repo, HASWELL)
    path.write_text(SPEC.replace("min_iterations: 50", "min_iterations: 60"))
    lines = _plan(spec_repo).splitlines()
    notes = [line.strip() for line in lines if line.strip().startswith("note:")]
    assert notes == [
        "note: cpu ran on Intel Xeon E5-2680 v3 before, which lacks amx_bf16 or avx512_bf16 "
        "(bf16, 4 variants here): no bf16 dot-product instructions: torch converts to fp32 "
        "and back around each matmul and convolution, so bf16 runs slower than fp32 "
        "(1.8-2.5x on the CPU of issue 32)",
        "note: cpu ran on Intel Xeon E5-2680 v3 before, which lacks avx512f (AVX-512, 8 "
        "variants here): no AVX-512: torch's vectorized CPU kernels run at AVX2's width, half "
        "of AVX-512's; compare its numbers with CPUs of the same extensions only",
    ]
    lacks = _change(_plan(spec_repo, "--format", "json"))["lacks"]
    assert [(lack["need"], lack["variants"]) for lack in lacks] == [("bf16", 4), ("AVX-512", 8)]


def test_a_cpu_with_what_the_variants_need_gets_no_note(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    path = write_spec("compiled.yaml", SPEC)
    synth(spec_repo)
    record_jobs("compiled", seconds=10.0)
    _record_machine(spec_repo, (*HASWELL, "avx512f", "avx512_bf16", "avx512_vnni"))
    path.write_text(SPEC.replace("min_iterations: 50", "min_iterations: 60"))
    assert "note:" not in _plan(spec_repo)
    assert _change(_plan(spec_repo, "--format", "json"))["lacks"] == []


def test_a_fixed_rate_runs_measurement_is_estimated_by_its_queries_over_its_rate(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    """50 queries at 10 Hz take 5 s (min_time 1 s is shorter), whatever an iteration takes;
    the closed loop of the same rule would have been guessed from the model's size."""
    fixed = SPEC.replace(
        "  measure: {min_iterations: 50, min_time: 1s, max_time: 20s}\n",
        "  measure: {min_iterations: 50, min_time: 1s, max_time: 20s}\n"
        "  scenario: fixed_rate\n  rate_hz: 10\n",
    ).replace("{precision: [fp32, bf16], runtime: [eager, inductor]}", "{precision: [fp32]}")
    write_spec("compiled.yaml", fixed)
    estimate = _change(_plan(spec_repo, "--format", "json"))["estimate"]
    size = CONFIGMAP_DATA_BYTES
    iteration = likely_iteration_s(size)
    warmup = loop_span(
        PhaseConfig(min_iterations=5, min_time_s=0.2, max_iterations=10_000, max_time_s=60.0),
        iteration,
    )
    measure = PhaseConfig(
        min_iterations=50, min_time_s=1.0, max_iterations=1_000_000, max_time_s=20.0
    )
    assert loop_span(measure, iteration, rate_hz=10.0).likely_s == 5.0
    per_pod = (
        warmup
        + loop_span(measure, iteration, rate_hz=10.0)
        + FIRST_CALLS.span(size)
        + STARTUP.span(None)
        + LOAD.span(size)
    )
    assert (estimate["low_s"], estimate["seconds"], estimate["high_s"]) == pytest.approx(
        (per_pod.times(2).low_s, per_pod.times(2).likely_s, per_pod.times(2).high_s)
    )


def test_what_the_plan_knows_of_a_models_size_before_its_pod() -> None:
    def model(source: ModelSource, **fields: Any) -> ModelConfig:
        return ModelConfig(source=source, location="m.pt2", sha256="0" * 64, **fields)

    assert known_bytes(model("file")) == CONFIGMAP_DATA_BYTES
    assert known_bytes(model("url", size_bytes=5_000_000)) == 5_000_000
    layers = LayerRecord(parameters=1_000)
    assert known_bytes(model("oci", layers=layers)) == 1_000 * PARAMETER_BYTES
    assert known_bytes(model("oci")) is None
    assert known_bytes(model("image_path")) is None


def test_a_first_run_of_the_cpu_smoke_example_is_likely_far_below_its_bounds(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    """The example's loops stop at their minimums (warm-up 0.2 s, measurement 1 s or 50
    iterations) long before their maxima (60 s and 20 s): the likely pod time counts the
    minimums, the most the maxima, and the line says both."""
    spec = (REPO_ROOT / "specs" / "workflows" / "cpu-smoke.yaml").read_text()
    write_spec("cpu-smoke.yaml", spec)
    output = _plan(spec_repo, "--format", "json")
    for cluster in json.loads(output)["clusters"]:
        (change,) = cluster["changes"]
        estimate = change["estimate"]
        bounds = change["after"]["max_pod_seconds"]
        assert bounds == 6 * 80.0
        assert estimate["low_s"] <= estimate["seconds"] <= bounds / 2 < estimate["high_s"]
        assert (estimate["from_history"], estimate["unsized"]) == (0, 0)
    for line in _plan(spec_repo).splitlines():
        if "cpu-smoke/cpu" in line:
            assert "6 variants will run: 6 new; about " in line
            assert " pod-minutes (between " in line
            assert "6 by their loops' minimums and the allowances" in line
            assert "(at most 8.0 pod-minutes measuring)" in line
