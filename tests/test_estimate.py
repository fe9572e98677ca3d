"""contract/estimate.py, `make plan`'s estimate, on recorded timings: the real-size sweep
(tests/data/estimates/: tiny-mlp, tiny-cnn, tiny-transformer, ResNet-50 and BERT-base at
fp32 and bf16, none and int8-dynamic, eager and inductor; 30 variants in 5 pods) run twice
through localrun on a 2-core host under a load of 3-6, the two Jobs recorded as gather
records them (each result trimmed to what an estimate reads). The same variants, the same
model files: the second run is what `make plan` estimates from the first."""

from collections import defaultdict
from dataclasses import replace
from itertools import permutations
from pathlib import Path
from typing import Final

import pytest

from contract.estimate import (
    COMPILE_ALLOWANCE_S,
    CONVERSION_ALLOWANCE_S,
    FIRST_CALLS_ALLOWANCE_S,
    LOAD_ALLOWANCE_S,
    STARTUP_ALLOWANCE_S,
    History,
    Planned,
    estimate,
    history_of,
    planned_from,
)
from contract.records import JobRecord, read_record, seconds_between
from contract.variant import Precision, Quantization, Runtime, VariantSettings
from tests.conftest import TEST_DATA

RECORDS: Final = TEST_DATA / "estimates"
SPEC_BOUND_S: Final = 60.0 + 4.0
"""The sweep's bounds: warm-up at most 60 s (the default), measurement at most 4 s."""


@pytest.fixture(scope="module")
def runs() -> list[JobRecord]:
    return [read_record(path) for path in sorted(RECORDS.glob("*.json"))]


def took(record: JobRecord) -> float:
    """The Job's pods' wall time: getting a node to the runner's end, summed over pods."""
    pods = defaultdict(list)
    for stored in record.variants:
        pods[stored.pod].append(stored)
    total = 0.0
    for variants in pods.values():
        start = variants[0].pod_start
        wall = seconds_between(
            start.scheduled_at if start else None,
            max(v.finished_at for v in variants if v.finished_at),
        )
        assert wall is not None
        total += wall
    return total


def planned(record: JobRecord) -> Planned:
    return planned_from(record.target or "", record.variants)


def test_the_second_run_of_a_real_size_sweep_is_estimated_within_2x_of_what_it_took(
    runs: list[JobRecord],
) -> None:
    """Issue 32's goal: each run as the second, estimated from the other's records."""
    for first, second in permutations(runs):
        history = history_of((first.target or "", stored) for stored in first.variants)
        found = estimate(planned(second), history)
        assert found is not None
        assert (found.from_history, found.loads_known, found.startup_pods) == (30, 5, 5)
        assert took(second) / 2 <= found.seconds <= 2 * took(second), (found, took(second))


def test_a_first_run_is_not_estimated_below_what_it_took(runs: list[JobRecord]) -> None:
    """Without earlier runs the compiles (10 of the 30 variants, 55 % of the pods' time)
    count at their allowance, the loops at their bounds: the estimate holds what the pods
    took, where the bounds alone would have said 30 x 64 s, and the loops' own maxima nothing
    of compile."""
    for run in runs:
        found = estimate(replace(planned(run), bound_s=SPEC_BOUND_S), History())
        assert found is not None and found.compiled == 10
        assert found.seconds >= took(run)


def variant(
    precision: Precision = Precision.FP32, runtime: Runtime = Runtime.EAGER
) -> VariantSettings:
    return VariantSettings(
        model="m",
        precision=precision,
        quantization=Quantization.NONE,
        batch_size=1,
        runtime=runtime,
    )


def test_each_kind_of_work_outside_the_bounds_has_its_allowance() -> None:
    job = Planned(
        target="cpu",
        variants=(variant(), variant(Precision.BF16), variant(runtime=Runtime.INDUCTOR)),
        pods=2,
        loads=("a", "a"),
        bound_s=10.0,
    )
    found = estimate(job, History())
    assert found is not None
    allowed = (
        3 * FIRST_CALLS_ALLOWANCE_S
        + CONVERSION_ALLOWANCE_S
        + COMPILE_ALLOWANCE_S
        + 2 * STARTUP_ALLOWANCE_S
        + 2 * LOAD_ALLOWANCE_S
    )
    assert (found.seconds, found.allowed_s, found.compiled) == (30.0 + allowed, allowed, 1)


def test_without_bounds_only_a_job_every_variant_of_which_ran_before_is_estimated(
    runs: list[JobRecord],
) -> None:
    """Results before schema 6 do not say the bounds: the report cannot recompute an
    estimate that went by them."""
    (record, *_) = runs
    job = planned(record)
    assert job.bound_s is None
    assert estimate(job, History()) is None
    assert estimate(job, history_of(("cpu", stored) for stored in record.variants)) is not None


def test_a_jobs_shape_from_its_runs(runs: list[JobRecord]) -> None:
    job = planned(runs[0])
    assert (len(job.variants), job.pods, len(job.loads)) == (30, 5, 5)


def test_the_fixture_is_what_the_docstring_says(runs: list[JobRecord]) -> None:
    """Two Jobs of the same 30 variants, each in 5 pods: what the goal's test rests on."""
    assert len(runs) == 2
    ids = [{stored.variant.id for stored in run.variants if stored.variant} for run in runs]
    assert ids[0] == ids[1] and len(ids[0]) == 30
    assert {run.job for run in runs} == {path.stem for path in Path(RECORDS).glob("*.json")}
