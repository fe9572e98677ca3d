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

from contract.config import PhaseConfig
from contract.estimate import (
    CONVERSION,
    FIRST_CALLS,
    FIRST_COMPILE,
    GB,
    LATER_COMPILE,
    LOAD,
    NONE,
    REFERENCE_BYTES,
    STARTUP,
    Allowance,
    History,
    Loops,
    Past,
    Planned,
    Span,
    estimate,
    history_of,
    likely_iteration_s,
    loop_span,
    planned_from,
)
from contract.records import JobRecord, read_record, seconds_between
from contract.result import LoopRules, OkResult
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


SWEEP_WARMUP: Final = PhaseConfig(
    min_iterations=1, min_time_s=0.0, max_iterations=10_000, max_time_s=60.0
)
SWEEP_MEASURE: Final = PhaseConfig(
    min_iterations=8, min_time_s=0.0, max_iterations=8, max_time_s=4.0
)
"""The sweep's loops: one warm-up iteration (at most 60 s, the default), 8 timed ones."""


def test_a_first_run_is_not_estimated_below_what_it_took(runs: list[JobRecord]) -> None:
    """Without earlier runs the compiles (10 of the 30 variants, 55 % of the pods' time)
    count at their allowance, the loops at their bounds: the most holds what the pods took,
    where the bounds alone would have said 30 x 64 s, and the loops' own maxima nothing of
    compile."""
    for run in runs:
        found = estimate(replace(planned(run), bound_s=SPEC_BOUND_S), History())
        assert found is not None and found.compiled == 10
        assert found.high_s >= took(run)


def test_a_first_runs_range_holds_what_it_took_and_its_likely_value_is_near(
    runs: list[JobRecord],
) -> None:
    """With the loops' rules and the models' sizes (what the plan knows from config.json),
    the sweep's first run lies in the range, and the likely value within 2x of it."""
    for run in runs:
        job = replace(planned(run), bound_s=SPEC_BOUND_S, loops=Loops(SWEEP_WARMUP, SWEEP_MEASURE))
        found = estimate(job, History())
        assert found is not None and found.unsized == 0
        assert found.low_s <= took(run) <= found.high_s
        assert took(run) / 2 <= found.seconds <= 2 * took(run), (found, took(run))


def _with_loops(record: JobRecord) -> JobRecord:
    """`record` as a runner of result schema 13 writes it: each result says its loop rules."""
    rules = LoopRules(warmup=SWEEP_WARMUP, measure=SWEEP_MEASURE)
    variants = []
    for stored in record.variants:
        result = stored.result
        if isinstance(result, OkResult) and result.timings is not None:
            timings = result.timings.model_copy(update={"loops": rules})
            result = result.model_copy(update={"timings": timings})
        variants.append(stored.model_copy(update={"result": result}))
    return record.model_copy(update={"variants": tuple(variants)})


def test_a_first_run_is_estimated_after_it_as_the_plan_did_from_the_rules_its_results_say(
    runs: list[JobRecord],
) -> None:
    """The report recomputes the plan's likely figure for a first run from its results: the
    loop rules they say (schema 13) give the estimate the plan gave from config.json."""
    for run in runs:
        job = planned(_with_loops(run))
        assert job.loops == Loops(SWEEP_WARMUP, SWEEP_MEASURE, on_cpu=True)
        plans = replace(planned(run), loops=Loops(SWEEP_WARMUP, SWEEP_MEASURE))
        assert estimate(job, History()) == estimate(plans, History())
        assert estimate(planned(run), History()) != estimate(job, History())


def variant(
    precision: Precision = Precision.FP32,
    runtime: Runtime = Runtime.EAGER,
    model: str = "m",
    batch_size: int = 1,
) -> VariantSettings:
    return VariantSettings(
        model=model,
        precision=precision,
        quantization=Quantization.NONE,
        batch_size=batch_size,
        runtime=runtime,
    )


def test_an_allowance_scales_its_likely_and_most_by_the_models_size() -> None:
    rule = Allowance(1.0, 2.0, 3.0, likely_per_gb_s=10.0, high_per_gb_s=20.0)
    assert rule.span(int(GB / 2)) == Span(1.0, 7.0, 13.0)
    assert rule.span(0) == Span(1.0, 2.0, 3.0)


def test_a_model_of_unknown_size_is_allowed_as_the_largest_measured() -> None:
    for rule in (CONVERSION, FIRST_CALLS, LOAD):
        assert rule.span(None) == rule.span(REFERENCE_BYTES)
        assert rule.span(None).likely_s > rule.span(1_000_000).likely_s
    assert likely_iteration_s(None) == likely_iteration_s(REFERENCE_BYTES)
    assert likely_iteration_s(None) > likely_iteration_s(1_000_000)


def test_each_allowance_is_ordered_least_likely_most() -> None:
    for rule in (FIRST_COMPILE, LATER_COMPILE, CONVERSION, FIRST_CALLS, STARTUP, LOAD):
        for size in (None, 1, REFERENCE_BYTES, 10 * REFERENCE_BYTES):
            span = rule.span(size)
            assert span.low_s <= span.likely_s <= span.high_s, (rule, size)


def phase(
    least: int, min_time: float, most: int = 1_000_000, max_time: float = 60.0
) -> PhaseConfig:
    return PhaseConfig(
        min_iterations=least, min_time_s=min_time, max_iterations=most, max_time_s=max_time
    )


def test_a_closed_loop_is_likely_as_long_as_its_minimums_and_at_most_its_max_time() -> None:
    # min_time decides for a fast iteration, min_iterations for a slow one.
    assert loop_span(phase(50, 1.0), 0.001) == Span(0.0, 1.0, 60.0)
    assert loop_span(phase(50, 1.0), 0.125) == Span(0.0, 6.25, 60.0)
    # A maximum stops it first: max_time, or max_iterations.
    assert loop_span(phase(50, 1.0, max_time=2.0), 0.1) == Span(0.0, 2.0, 2.0)
    assert loop_span(phase(50, 1.0, most=50), 0.01) == Span(0.0, 0.5, 60.0)
    # An iteration's time not guessed (a GPU): min_time.
    assert loop_span(phase(50, 1.0), None) == Span(0.0, 1.0, 60.0)


def test_a_fixed_rate_loop_is_as_long_as_its_queries_on_the_clock() -> None:
    # 100 queries at 20 Hz: 5 s, whatever an iteration takes; min_time decides when longer.
    assert loop_span(phase(100, 1.0), None, rate_hz=20.0) == Span(4.95, 5.0, 60.0)
    assert loop_span(phase(100, 10.0), 0.5, rate_hz=20.0) == Span(9.95, 10.0, 60.0)
    # max_time stops a run the clock would keep longer.
    assert loop_span(phase(100, 1.0, max_time=2.0), None, rate_hz=20.0) == Span(2.0, 2.0, 2.0)


def test_a_pods_first_compile_is_allowed_cold_and_the_others_warm() -> None:
    compiled = tuple(variant(runtime=Runtime.INDUCTOR, batch_size=b) for b in (1, 2, 4))
    job = Planned(target="cpu", variants=compiled, pods=1, loads=(), bound_s=10.0)
    found = estimate(job, History())
    assert found is not None and found.compiled == 3
    one_pod = (
        FIRST_COMPILE.span(None)
        + LATER_COMPILE.span(None).times(2)
        + FIRST_CALLS.span(None).times(3)
        + STARTUP.span(None)
    )
    assert found.allowed_s == pytest.approx(one_pod.likely_s)
    assert found.high_s == pytest.approx(one_pod.high_s + 30.0)
    found = estimate(replace(job, pods=3), History())
    three_pods = (
        FIRST_COMPILE.span(None).times(3)
        + FIRST_CALLS.span(None).times(3)
        + STARTUP.span(None).times(3)
    )
    assert found is not None
    assert found.high_s == pytest.approx(three_pods.high_s + 30.0)


def test_a_variants_loops_and_allowances_follow_its_models_size_and_batch() -> None:
    """A 1 MB model at batch 4 on a CPU, 50 timed iterations of at least 1 s."""
    loops = Loops(phase(5, 0.2, max_time=60.0), phase(50, 1.0, max_time=20.0))
    job = Planned(
        target="cpu",
        variants=(variant(Precision.BF16, model="small", batch_size=4),),
        pods=1,
        loads=("s",),
        bound_s=80.0,
        loops=loops,
        sizes={"s": 1_000_000},
        models={"small": "s"},
    )
    found = estimate(job, History())
    assert found is not None and found.unsized == 0
    iteration = likely_iteration_s(1_000_000) * 4
    expected = (
        loop_span(loops.warmup, iteration)
        + loop_span(loops.measure, iteration)
        + FIRST_CALLS.span(1_000_000)
        + CONVERSION.span(1_000_000)
        + STARTUP.span(None)
        + LOAD.span(1_000_000)
    )
    assert (found.low_s, found.seconds, found.high_s) == pytest.approx(
        (expected.low_s, expected.likely_s, expected.high_s)
    )
    unsized = estimate(replace(job, sizes={}), History())
    assert unsized is not None and unsized.unsized == 1 and unsized.seconds > found.seconds


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
        FIRST_CALLS.span(None).times(3)
        + CONVERSION.span(None)
        + FIRST_COMPILE.span(None)
        + STARTUP.span(None).times(2)
        + LOAD.span(None).times(2)
    )
    assert found.allowed_s == pytest.approx(allowed.likely_s)
    assert found.high_s == pytest.approx(30.0 + allowed.high_s)
    assert found.low_s == pytest.approx(allowed.low_s) and found.compiled == 1


def test_a_variant_that_ran_before_has_no_range() -> None:
    job = Planned(target="cpu", variants=(variant(),), pods=1, loads=(), bound_s=10.0)
    history = History(variants={("cpu", variant().describe()): Past(12.0, "allocated")})
    found = estimate(job, history)
    assert found is not None
    assert (found.low_s, found.seconds, found.high_s) == (12.0, 12.0, 12.0)
    assert NONE + Span.exactly(1.0) == Span(1.0, 1.0, 1.0)


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
