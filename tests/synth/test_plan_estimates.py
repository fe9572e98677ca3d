"""`make plan`'s estimate counts what its bounds do not: a first run's compiles, conversions
and first calls, each pod's start-up and each model's load, at their stated allowances
(contract/estimate.py); and a Job whose target ran before on a CPU without what its
variants need gets a note saying so."""

import json
from pathlib import Path
from typing import Any, Final

from click.testing import CliRunner

from contract.estimate import (
    COMPILE_ALLOWANCE_S,
    CONVERSION_ALLOWANCE_S,
    FIRST_CALLS_ALLOWANCE_S,
    LOAD_ALLOWANCE_S,
    STARTUP_ALLOWANCE_S,
)
from contract.layout import record_path, recorded_jobs
from contract.records import StoredVariant, read_record, write_record
from contract.result import Environment, OkResult
from synth.cli import cli
from synth.main import synth
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
    # its model: the bounds (warm-up 60 s, measurement 20 s), every variant's first calls,
    # the 4 bf16 ones' conversion, the 4 compiled ones' compile, 8 start-ups and 8 loads.
    allowed = (
        8 * FIRST_CALLS_ALLOWANCE_S
        + 4 * CONVERSION_ALLOWANCE_S
        + 4 * COMPILE_ALLOWANCE_S
        + 8 * STARTUP_ALLOWANCE_S
        + 8 * LOAD_ALLOWANCE_S
    )
    assert (estimate["compiled"], estimate["allowed_s"]) == (4, allowed)
    assert estimate["seconds"] == 8 * 80.0 + allowed
    (line,) = [line for line in _plan(spec_repo).splitlines() if "compiled/cpu" in line]
    assert "8 by the bounds and allowances (4 compiling, 200 s each)" in line
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
