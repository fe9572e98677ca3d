"""Reports: comparisons, significance from CI overlap, baselines, and renderers that escape
user text and give the same bytes for the same runs."""

import base64
import csv
import dataclasses
import io
import json
import random
import re
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

import pytest
from matplotlib.figure import Figure

from contract.accuracy import NOT_MEANINGFUL, Accuracy, AccuracyGate, DrawnInput
from contract.instant import instant
from contract.order_stats import paired_ratio
from contract.records import JobIdentity, Reuses, StoredVariant
from contract.result import (
    Applied,
    BenchResult,
    Environment,
    ErrorInfo,
    ErrorResult,
    LatencyStats,
    OkResult,
    Paired,
    RecordedInputs,
    Rounds,
    Validity,
)
from contract.samples import Samples, encode
from contract.variant import VariantRef
from report import html
from report.analysis import analyse
from report.csv import CSV_COLUMNS, to_csv
from report.html import _curves, to_html, tradeoff_points
from report.intervals import Ratio
from report.json import to_json
from report.layout import lay_out
from report.markdown import to_markdown
from report.model import (
    FLAGS,
    REPORT_SCHEMA_VERSION,
    JobChoiceError,
    Notes,
    Report,
    UnknownJob,
    build_report,
)
from report.table import format_ratio
from report.text import to_text
from report.verdict import ADVICE, run_verdict, verdict_lines
from runner.stats import reliable_percentiles
from store.database import StoredRun, open_store
from store.history import CURRENT, SpecRevision

DEVICES = {"a100": "NVIDIA A100-SXM4-80GB", "v100": "Tesla V100-SXM2-16GB", "t4": "Tesla T4"}
LAST_WEEK = "2026-11-26T06:00:00Z"
TODAY = "2026-12-03T06:00:00Z"
TODAY_JOB = f"gpu-comparison-a100-{TODAY[:10]}"
"""make_run's Job on an A100 today, as its Job names follow the finish date."""
OLD_JOB = f"gpu-comparison-a100-{LAST_WEEK[:10]}"
DEADLINE = "deadline exceeded: the Job's activeDeadlineSeconds (3600) passed before it ran"
EXACT = Accuracy(seed=0, cosine=1.0, max_rel_error=1e-7, top1_agreement=1.0)
"""What a runner measures of an unchanged program: make_run's default."""
CLOSE = Accuracy(seed=0, cosine=0.99999, max_rel_error=0.004, top1_agreement=1.0)
FAR = Accuracy(seed=0, cosine=0.95, max_rel_error=0.3, top1_agreement=1.0)


class MakeRun(Protocol):
    def __call__(
        self,
        *,
        model: str = "tiny-cnn",
        target: str = "a100",
        cluster: str = "us-east",
        precision: str = "fp32",
        quantization: str = "none",
        batch_size: int = 1,
        runtime: str = "eager",
        p50_ms: float = 1.0,
        iqr_ms: float = 0.01,
        count: int = 100,
        finished_at: str = TODAY,
        failure: str | None = None,
        index: int = 0,
        flags: dict[str, object] | None = None,
        samples: Samples | None = None,
        accuracy: Accuracy | None = EXACT,
        gate: AccuracyGate | None = None,
    ) -> StoredRun: ...


def _latency(p50_ms: float, iqr_ms: float, count: int) -> LatencyStats:
    std = iqr_ms / 1.35
    return LatencyStats(
        count=count,
        mean_ms=p50_ms,
        std_ms=std,
        cv=std / p50_ms,
        # No latency is 0 or below: a spread wider than the median bunches at the bottom.
        min_ms=max(p50_ms - iqr_ms, p50_ms / 4),
        p25_ms=max(p50_ms - iqr_ms / 2, p50_ms / 2),
        p50_ms=p50_ms,
        p75_ms=p50_ms + iqr_ms / 2,
        p90_ms=p50_ms + iqr_ms,
        p95_ms=p50_ms + 1.5 * iqr_ms,
        p99_ms=p50_ms + 2 * iqr_ms,
        max_ms=p50_ms + 3 * iqr_ms,
        iqr_ms=iqr_ms,
    )


@pytest.fixture(scope="module")
def make_run() -> MakeRun:
    """A stored run of one variant: measured, or failed when `failure` explains why. Its
    `accuracy` (None: a runner before accuracy) is judged as gather stores it: by `gate`, the
    one its Job said, or its default."""

    def make(
        *,
        model: str = "tiny-cnn",
        target: str = "a100",
        cluster: str = "us-east",
        precision: str = "fp32",
        quantization: str = "none",
        batch_size: int = 1,
        runtime: str = "eager",
        p50_ms: float = 1.0,
        iqr_ms: float = 0.01,
        count: int = 100,
        finished_at: str = TODAY,
        failure: str | None = None,
        index: int = 0,
        flags: dict[str, object] | None = None,
        samples: Samples | None = None,
        accuracy: Accuracy | None = EXACT,
        gate: AccuracyGate | None = None,
    ) -> StoredRun:
        ref = VariantRef(
            index=index,
            id=f"{model}-{precision}-{quantization}-b{batch_size}"
            + ("" if runtime == "eager" else f"-{runtime}"),
            model=model,
            precision=precision,
            quantization=quantization,
            batch_size=batch_size,
            runtime=runtime,
        )
        result: BenchResult
        if failure is not None:
            error = ErrorInfo(type="out_of_memory", message=failure)
            result = ErrorResult(target=target, variant=ref, error=error)
        else:
            result = OkResult(
                workflow="gpu-comparison",
                target=target,
                variant=ref,
                latency=_latency(p50_ms, iqr_ms, count),
                throughput_samples_per_s=batch_size * 1000 / p50_ms,
                validity=Validity(
                    noisy=iqr_ms / p50_ms > 0.1,
                    noise=iqr_ms / p50_ms,
                    reliable_percentiles=reliable_percentiles(count),
                    output_finite=True,
                ).model_copy(update=flags or {}),
                samples=samples,
                accuracy=accuracy,
                environment=Environment(
                    python="3.11.7",
                    torch="2.13.0",
                    device="cuda",
                    device_name=DEVICES.get(target, "AMD EPYC 7763"),
                    cpu_model="AMD EPYC 7763",
                    threads=4,
                    hostname=f"pod-{index}",
                ),
            )
        job = JobIdentity(
            workflow="gpu-comparison",
            cluster=cluster,
            namespace="benchfleet",
            job=f"gpu-comparison-{target}-{finished_at[:10]}",
            target=target,
            spec_file="specs/workflows/gpu-comparison.yaml",
            spec_sha256="a" * 64,
            image="registry.example.com/benchfleet/runner@sha256:" + "b" * 64,
        )
        variant = StoredVariant(
            index=index,
            state="failed" if failure else "succeeded",
            explanation=failure or "ok",
            pod=f"pod-{index}",
            attempts=1,
            finished_at=finished_at,
            result_source="termination-message",
            result=result,
        )
        return StoredRun(job=job, variant=variant.judged(gate), collected_at=finished_at)

    return make


@pytest.fixture(scope="module")
def gpu_comparison(make_run: MakeRun) -> list[StoredRun]:
    """tiny-cnn at batch 1 on three GPUs: A100 fastest, V100 1.9x, T4 3.1x."""
    return [
        make_run(target="t4", p50_ms=3.1),
        make_run(target="a100", p50_ms=1.0),
        make_run(target="v100", p50_ms=1.9),
    ]


@pytest.fixture(scope="module")
def sweep(make_run: MakeRun) -> list[StoredRun]:
    """tiny-transformer on an A100 at two precisions and two batch sizes."""
    return [
        make_run(model="tiny-transformer", precision=precision, batch_size=batch, p50_ms=p50)
        for precision, batch, p50 in [
            ("fp32", 1, 2.0),
            ("fp32", 8, 8.0),
            ("fp16", 1, 1.2),
            ("fp16", 8, 4.0),
        ]
    ]


@pytest.fixture(scope="module")
def unnamed_failure(make_run: MakeRun) -> StoredRun:
    """A run that left no result at all: nothing says which variant it was."""
    run = make_run(target="t4", index=7)
    variant = run.variant.model_copy(
        update={"state": "failed", "explanation": "pod never scheduled", "result": None}
    )
    return StoredRun(job=run.job, variant=variant, collected_at=run.collected_at)


@pytest.fixture(scope="module")
def regressed(make_run: MakeRun) -> tuple[list[StoredRun], list[StoredRun]]:
    """(today, last week): a100 30 % slower, t4 unchanged, v100 gone, h100 new."""
    today = [
        make_run(target="a100", p50_ms=1.3),
        make_run(target="t4", p50_ms=3.1),
        make_run(target="h100", p50_ms=0.7),
    ]
    last_week = [
        make_run(target="a100", p50_ms=1.0, finished_at=LAST_WEEK),
        make_run(target="t4", p50_ms=3.1, finished_at=LAST_WEEK),
        make_run(target="v100", p50_ms=1.9, finished_at=LAST_WEEK),
    ]
    return today, last_week


@pytest.fixture(scope="module")
def everything(
    gpu_comparison: list[StoredRun],
    sweep: list[StoredRun],
    unnamed_failure: StoredRun,
    make_run: MakeRun,
) -> list[StoredRun]:
    """Every section at once: targets, a sweep, a ranking, failures."""
    oom = make_run(model="tiny-transformer", batch_size=64, failure="OOMKilled", index=3)
    return [*gpu_comparison, *sweep, unnamed_failure, oom]


def test_targets_are_compared_by_their_ratio_to_the_fastest(
    gpu_comparison: list[StoredRun],
) -> None:
    (comparison,) = build_report(gpu_comparison).by_target
    assert comparison.varies == ("target",)
    assert [(e.row.key.target, e.ratio.value) for e in comparison.entries] == [
        ("a100", 1.0),
        ("v100", pytest.approx(1.9)),
        ("t4", pytest.approx(3.1)),
    ]
    assert [e.is_significant for e in comparison.entries] == [False, True, True]


def test_text_says_how_many_times_slower_each_target_is(gpu_comparison: list[StoredRun]) -> None:
    text = to_text(build_report(gpu_comparison))
    assert "3.10x slower than a100 [" in text
    assert "1.90x slower than a100 [" in text
    assert "Tesla T4" in text


def test_one_target_gives_no_by_target_section(sweep: list[StoredRun]) -> None:
    report = build_report(sweep)
    assert report.by_target == ()
    assert "By target" not in to_text(report)


def test_the_best_configuration_has_the_lowest_p50_per_sample(sweep: list[StoredRun]) -> None:
    (best,) = build_report(sweep).best_configurations
    first, second = best.comparison.entries[:2]
    assert (first.row.key.precision, first.row.key.batch_size) == ("fp16", 8)
    assert (second.row.key.precision, second.row.key.batch_size) == ("fp32", 8)
    assert best.comparison.varies == ("precision", "batch_size")


@pytest.mark.parametrize(
    ("iqr_ms", "count", "is_significant", "says"),
    [
        (0.01, 100, True, "is faster"),
        (0.09, 4, False, "is not faster"),
        (20.0, 100, False, "cannot be said to be faster"),
    ],
)
def test_the_best_is_significant_only_when_the_ratios_ci_excludes_one_and_nothing_is_flagged(
    make_run: MakeRun, iqr_ms: float, count: int, is_significant: bool, says: str
) -> None:
    runs = [
        make_run(precision=precision, p50_ms=p50, iqr_ms=iqr_ms, count=count)
        for precision, p50 in [("fp16", 1.0), ("bf16", 1.1)]
    ]
    report = build_report(runs)
    (best,) = report.best_configurations
    assert best.is_significant is is_significant
    assert f"fp16 {says} per sample than the runner-up" in to_text(report)


def test_models_are_ranked_by_p50_fastest_first(make_run: MakeRun) -> None:
    runs = [make_run(model=name, target="t4", p50_ms=p50) for name, p50 in [("b", 2), ("a", 3)]]
    runs.append(make_run(model="c", target="t4", p50_ms=1.0))
    (ranking,) = build_report(runs).rankings
    assert [entry.row.key.model for entry in ranking.entries] == ["c", "b", "a"]
    assert ranking.fixed[:2] == (("cluster", "us-east"), ("target", "t4"))


@pytest.mark.parametrize(
    ("p50_ms", "iqr_ms", "verdict"),
    [
        (1.10, 0.01, "regression"),
        (1.04, 0.01, "unchanged"),
        (1.10, 2.00, "inconclusive"),
        (0.90, 0.01, "improvement"),
        (0.90, 2.00, "inconclusive"),
        # Within the threshold, but the interval reaches beyond it: no claim either way.
        (1.04, 0.30, "inconclusive"),
        (1.00, 2.00, "inconclusive"),
    ],
)
def test_a_change_counts_only_beyond_the_threshold_with_disjoint_cis(
    make_run: MakeRun, p50_ms: float, iqr_ms: float, verdict: str
) -> None:
    last_week = [make_run(p50_ms=1.0, iqr_ms=iqr_ms, finished_at=LAST_WEEK)]
    today = [make_run(p50_ms=p50_ms, iqr_ms=iqr_ms)]
    comparison = build_report(today, baseline=last_week, regression_threshold=0.05).baseline
    assert comparison is not None
    (change,) = comparison.changes
    assert change.ratio.value == pytest.approx(p50_ms)
    assert change.verdict == verdict


def test_variants_unmatched_in_the_baseline_are_new_or_missing(
    regressed: tuple[list[StoredRun], list[StoredRun]],
) -> None:
    today, last_week = regressed
    comparison = build_report(today, baseline=last_week).baseline
    assert comparison is not None
    assert [key.target for key in comparison.new] == ["h100"]
    assert [key.target for key in comparison.missing] == ["v100"]
    assert [(c.current.key.target, c.verdict) for c in comparison.changes] == [
        ("a100", "regression"),
        ("t4", "unchanged"),
    ]


def replaying(run: StoredRun, sha256: str) -> StoredRun:
    """`run` as a variant that replayed the recorded inputs `sha256` would have stored it."""
    result = run.variant.result
    assert isinstance(result, OkResult)
    recorded = result.model_copy(
        update={"schema_version": 9, "recorded_inputs": RecordedInputs(sha256=sha256, samples=8)}
    )
    return dataclasses.replace(run, variant=run.variant.model_copy(update={"result": recorded}))


@pytest.mark.parametrize(
    ("now", "before", "said"),
    [
        ("ab" * 32, None, "now it replayed recorded inputs abababababab, in the baseline it drew"),
        (None, "cd" * 32, "now it drew its inputs, in the baseline it replayed recorded inputs"),
        ("ab" * 32, "cd" * 32, "in the baseline it replayed recorded inputs cdcdcdcdcdcd"),
    ],
)
def test_a_run_fed_other_inputs_than_its_baseline_concludes_nothing_and_says_why(
    make_run: MakeRun, now: str | None, before: str | None, said: str
) -> None:
    today, last_week = make_run(p50_ms=1.5), make_run(p50_ms=1.0, finished_at=LAST_WEEK)
    today = replaying(today, now) if now else today
    last_week = replaying(last_week, before) if before else last_week
    comparison = build_report([today], baseline=[last_week]).baseline
    assert comparison is not None
    (change,) = comparison.changes
    assert change.verdict == "inconclusive"
    assert any(doubt.startswith("fed other inputs: ") and said in doubt for doubt in change.doubts)


def test_runs_fed_the_same_recording_compare_as_ever(make_run: MakeRun) -> None:
    today = replaying(make_run(p50_ms=1.5), "ab" * 32)
    last_week = replaying(make_run(p50_ms=1.0, finished_at=LAST_WEEK), "ab" * 32)
    comparison = build_report([today], baseline=[last_week]).baseline
    assert comparison is not None
    (change,) = comparison.changes
    assert change.verdict == "regression"
    assert change.current.recorded_inputs == "ab" * 32


def member(run: StoredRun, family: str, **params: int | float | str) -> StoredRun:
    """`run` as a variant of a model of `family` at `params` would have stored it."""
    result = run.variant.result
    assert isinstance(result, OkResult)
    facts = result.model_copy(update={"schema_version": 9, "family": family, "params": params})
    return dataclasses.replace(run, variant=run.variant.model_copy(update={"result": facts}))


@pytest.fixture(scope="module")
def policy_family(make_run: MakeRun) -> list[StoredRun]:
    """pi-small at three chunk sizes and two step counts, and a model of another family that
    shares a param's name."""
    runs = [
        member(make_run(model=f"pi-c{chunk}-s{steps}", p50_ms=p50), "pi-small",
               action_chunk=chunk, denoise_steps=steps)
        for chunk, steps, p50 in [(4, 10, 1.0), (8, 10, 1.5), (16, 10, 3.0), (8, 5, 0.8)]
    ]  # fmt: skip
    other = member(make_run(model="act-c8", p50_ms=0.2), "act", action_chunk=8)
    return [*runs, other]


def test_a_familys_members_are_compared_along_each_param_the_others_held(
    policy_family: list[StoredRun],
) -> None:
    analysis = analyse(build_report(policy_family))
    along = {(c.family, c.param): c for c in analysis.params}
    assert set(along) == {("pi-small", "action_chunk"), ("pi-small", "denoise_steps")}
    chunks = along["pi-small", "action_chunk"].entries
    # At 10 steps, chunks 8 and 16 against 4; at 5 steps chunk 8 alone: nothing to compare.
    assert [(dict(e.row.params)["action_chunk"], e.reference.key.model) for e in chunks] == [
        (8, "pi-c4-s10"),
        (16, "pi-c4-s10"),
    ]
    assert [e.ratio.value for e in chunks] == pytest.approx([1.5, 3.0])
    (steps,) = along["pi-small", "denoise_steps"].entries
    assert (steps.row.key.model, steps.reference.key.model) == ("pi-c8-s10", "pi-c8-s5")
    text = to_text(build_report(policy_family))
    assert "Family pi-small, action_chunk: each member against its smallest action_chunk" in text
    assert json.loads(to_json(build_report(policy_family)))["params"][0]["param"] == "action_chunk"


def test_models_without_a_family_are_compared_along_no_param(make_run: MakeRun) -> None:
    assert analyse(build_report([make_run(model="a"), make_run(model="b")])).params == ()


def test_failed_variants_are_listed_with_their_explanation(everything: list[StoredRun]) -> None:
    report = build_report(everything)
    assert [(f.target, f.explanation) for f in report.failures] == [
        ("a100", "OOMKilled"),
        ("t4", "pod never scheduled"),
    ]
    for rendered in (to_text(report), to_markdown(report)):
        assert "OOMKilled" in rendered
        assert "pod never scheduled" in rendered


@pytest.mark.parametrize("reverse", [False, True])
def test_the_newest_job_of_a_target_wins_and_the_older_is_listed(
    make_run: MakeRun, reverse: bool
) -> None:
    runs = [make_run(p50_ms=1.0, finished_at=LAST_WEEK), make_run(p50_ms=2.0)]
    report = build_report(runs[::-1] if reverse else runs)
    assert [row.latency.p50_ms for row in report.variants] == [2.0]
    assert report.superseded == 0
    assert [(job.job, job.reported) for job in report.jobs] == [(TODAY_JOB, True), (OLD_JOB, False)]
    text = to_text(report)
    assert "The newest Job of each target; 1 older Job left out" in text
    combined = build_report(runs[::-1] if reverse else runs, all_revisions=True)
    assert [row.latency.p50_ms for row in combined.variants] == [2.0]
    assert combined.superseded == 1
    assert "the newest Job's run of a variant wins" in to_text(combined)


def cut_off(run: StoredRun, collected_at: str = "") -> StoredRun:
    """`run` as gather stores an index its Job's deadline ended before any pod finished it:
    named from config.json, with no result and no finish time. `collected_at` is empty as
    a record in results/ gives it, or when the database stored it."""
    result = run.variant.result
    assert result is not None
    variant = run.variant.model_copy(
        update={
            "state": "failed",
            "variant": result.variant,
            "explanation": DEADLINE,
            "reason": "DeadlineExceeded",
            "pod": None,
            "attempts": 0,
            "finished_at": None,
            "result_source": None,
            "result": None,
        }
    )
    return StoredRun(job=run.job, variant=variant, collected_at=collected_at)


@pytest.fixture(scope="module")
def revisions(make_run: MakeRun) -> tuple[list[StoredRun], list[StoredRun]]:
    """(today, last week): two spec revisions of the a100 Job. Last week's measured batch 1,
    2, 8 and 64; today's (which dropped batch 2) measured batch 1, ran out of memory at batch
    8 and hit its deadline before batch 64 started."""
    last_week = [
        make_run(batch_size=batch, p50_ms=p50, index=index, finished_at=LAST_WEEK)
        for index, (batch, p50) in enumerate([(1, 1.0), (2, 1.5), (8, 4.0), (64, 20.0)])
    ]
    today = [
        make_run(batch_size=1, p50_ms=1.1, index=0),
        make_run(batch_size=8, index=1, failure="CUDA out of memory"),
        cut_off(make_run(batch_size=64, index=2)),
    ]
    return today, last_week


@pytest.mark.parametrize("reverse", [False, True])
def test_a_failure_without_a_finish_time_is_never_replaced_by_an_older_jobs_result(
    revisions: tuple[list[StoredRun], list[StoredRun]], reverse: bool
) -> None:
    today, last_week = revisions
    runs = [*last_week, *today]
    report = build_report(runs[::-1] if reverse else runs)
    assert [(row.key.batch_size, row.latency.p50_ms, row.job) for row in report.variants] == [
        (1, 1.1, TODAY_JOB)
    ]
    assert [(f.job, f.explanation, f.finished_at) for f in report.failures] == [
        (TODAY_JOB, "CUDA out of memory", instant(TODAY)),
        (TODAY_JOB, DEADLINE, None),
    ]
    text = to_text(report)
    assert "Failed (2)" in text and DEADLINE in text
    assert "20.00" not in text


def test_provenance_names_what_the_reported_numbers_came_from(
    revisions: tuple[list[StoredRun], list[StoredRun]],
) -> None:
    today, last_week = revisions
    text = to_text(build_report([*last_week, *today]))
    provenance = text.split("Provenance")[1]
    (row,) = [line for line in provenance.splitlines() if TODAY_JOB in line]
    assert OLD_JOB not in provenance, "only the reported Jobs"
    for cell in (
        "specs/workflows/gpu-comparison.yaml",
        "a" * 12,
        "registry.example.com/benchfleet/runner@sha256:" + "b" * 64,
        "2.13.0",
        "NVIDIA A100-SXM4-80GB",
        "2026-12-03 06:00Z to 2026-12-03 06:00Z",
    ):
        assert cell in row


def test_the_workflows_description_and_owner_head_the_report(
    revisions: tuple[list[StoredRun], list[StoredRun]],
) -> None:
    today, last_week = revisions
    about = {
        TODAY_JOB: ("Which GPU serves tiny-cnn fastest?", "ml-platform@example.com"),
        OLD_JOB: ("an older wording", "someone-else@example.com"),
    }
    text = to_text(build_report([*last_week, *today], notes=Notes(about=about)))
    assert (
        "gpu-comparison: Which GPU serves tiny-cnn fastest? (owner: ml-platform@example.com)"
        in text
    )
    assert "older wording" not in text


def test_the_report_counts_every_failure_of_the_newest_job(
    revisions: tuple[list[StoredRun], list[StoredRun]],
) -> None:
    today, last_week = revisions
    report = build_report([*last_week, *today])
    assert len(report.failures) == sum(run.variant.state == "failed" for run in today) == 2
    (newest, older) = report.jobs
    assert (newest.job, newest.measured, newest.failed, newest.finished_at) == (
        TODAY_JOB,
        1,
        2,
        instant(TODAY),
    )
    assert (older.job, older.reported) == (OLD_JOB, False)
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert [(row["status"], row["finished_at"]) for row in rows] == [
        ("measured", TODAY),
        ("failed", TODAY),
        ("failed", ""),
    ]


def test_an_older_job_asked_for_by_name_shows_its_own_numbers(
    revisions: tuple[list[StoredRun], list[StoredRun]],
) -> None:
    today, last_week = revisions
    report = build_report([*today, *last_week], jobs=[OLD_JOB])
    assert [(row.key.batch_size, row.latency.p50_ms, row.job) for row in report.variants] == [
        (1, 1.0, OLD_JOB),
        (2, 1.5, OLD_JOB),
        (8, 4.0, OLD_JOB),
        (64, 20.0, OLD_JOB),
    ]
    assert report.failures == ()
    assert f"Only the Jobs asked for ({OLD_JOB}); 1 other Job left out." in to_text(report)


def test_a_name_no_job_has_is_refused(revisions: tuple[list[StoredRun], list[StoredRun]]) -> None:
    today, last_week = revisions
    with pytest.raises(UnknownJob, match=f"no Job named gpu-comparison-a100-x; .*{OLD_JOB}"):
        build_report([*today, *last_week], jobs=["gpu-comparison-a100-x"])


def test_a_stored_job_named_as_the_baseline_is_compared_with_the_newest(
    revisions: tuple[list[StoredRun], list[StoredRun]],
) -> None:
    today, last_week = revisions
    report = build_report([*today, *last_week], baseline_jobs=[OLD_JOB])
    assert report.baseline is not None
    (change,) = report.baseline.changes
    assert (change.current.job, change.baseline.job) == (TODAY_JOB, OLD_JOB)
    assert (change.baseline.latency.p50_ms, change.current.latency.p50_ms) == (1.0, 1.1)
    assert [key.batch_size for key in report.baseline.missing] == [2, 8, 64]
    assert [row.job for row in report.variants] == [TODAY_JOB]


def test_a_baseline_job_the_report_shows_is_refused(
    revisions: tuple[list[StoredRun], list[StoredRun]],
) -> None:
    today, last_week = revisions
    with pytest.raises(JobChoiceError, match=f"baseline Job {TODAY_JOB} is also reported"):
        build_report([*today, *last_week], baseline_jobs=[TODAY_JOB])
    with pytest.raises(UnknownJob, match="no Job named nope"):
        build_report([*today, *last_week], baseline_jobs=["nope"])


def test_all_revisions_combine_each_variant_from_the_newest_job_that_ran_it(
    revisions: tuple[list[StoredRun], list[StoredRun]],
) -> None:
    today, last_week = revisions
    report = build_report([*last_week, *today], all_revisions=True)
    assert [(row.key.batch_size, row.latency.p50_ms, row.job) for row in report.variants] == [
        (1, 1.1, TODAY_JOB),
        (2, 1.5, OLD_JOB),
    ]
    assert [f.explanation for f in report.failures] == ["CUDA out of memory", DEADLINE]
    assert report.superseded == 3
    variants_table = to_text(report).split("Variants (2)")[1]
    assert f"{OLD_JOB}  2026-11-26 06:00Z" in variants_table
    assert f"{TODAY_JOB}  2026-12-03 06:00Z" in variants_table
    document = json.loads(to_json(report))
    assert [row["job"] for row in document["variants"]] == [TODAY_JOB, OLD_JOB]
    assert document["selection"] == "all"


def test_an_incremental_revision_shows_what_it_reused_under_the_job_that_measured_it(
    revisions: tuple[list[StoredRun], list[StoredRun]],
) -> None:
    """Synth left a variant with a recorded result out of today's Job; the Job's record says
    it reuses last week's: the default report shows it beside today's own, named by its Job,
    and nothing else of last week's."""
    today, last_week = revisions
    reuses: dict[str, Reuses] = {TODAY_JOB: {OLD_JOB: ("tiny-cnn-fp32-none-b2",)}}
    report = build_report([*last_week, *today], notes=Notes(reuses=reuses))
    assert [(row.key.batch_size, row.latency.p50_ms, row.job) for row in report.variants] == [
        (1, 1.1, TODAY_JOB),
        (2, 1.5, OLD_JOB),
    ]
    assert [f.job for f in report.failures] == [TODAY_JOB, TODAY_JOB]
    assert [(job.job, job.reported) for job in report.jobs] == [(TODAY_JOB, True), (OLD_JOB, True)]


def test_a_local_try_reuses_by_the_store_in_its_own_cluster_only(
    revisions: tuple[list[StoredRun], list[StoredRun]],
) -> None:
    """The store's reuses (a local try's, localrun) name a cluster: the same Job names in
    another cluster reuse nothing by them. A Job that is only reused from may be the
    baseline: its runs are the same on both sides."""
    today, last_week = revisions
    tried: dict[tuple[str, str], Reuses] = {
        ("us-east", TODAY_JOB): {OLD_JOB: ("tiny-cnn-fp32-none-b2",)}
    }
    report = build_report([*last_week, *today], notes=Notes(tried=tried))
    assert [row.job for row in report.variants] == [TODAY_JOB, OLD_JOB]
    elsewhere = {("local", TODAY_JOB): tried["us-east", TODAY_JOB]}
    report = build_report([*last_week, *today], notes=Notes(tried=elsewhere))
    assert [row.job for row in report.variants] == [TODAY_JOB]
    compared = build_report([*last_week, *today], notes=Notes(tried=tried), baseline_jobs=[OLD_JOB])
    assert compared.baseline is not None
    assert [row.job for row in compared.baseline.reused] == [OLD_JOB]


def test_a_reused_result_is_not_compared_with_itself(
    revisions: tuple[list[StoredRun], list[StoredRun]],
) -> None:
    """`--baseline main` where main's records hold the Job today's revision reuses batch 2
    from: the same run on both sides, which said +0.0%."""
    today, last_week = revisions
    reuses: dict[str, Reuses] = {TODAY_JOB: {OLD_JOB: ("tiny-cnn-fp32-none-b2",)}}
    report = build_report([*last_week, *today], baseline=last_week, notes=Notes(reuses=reuses))
    assert report.baseline is not None
    assert [(row.key.batch_size, row.job) for row in report.baseline.reused] == [(2, OLD_JOB)]
    assert [change.current.key.batch_size for change in report.baseline.changes] == [1]
    text = to_text(report)
    assert "+0.0%" not in text
    assert "0 new, 2 missing, 1 reused, same run." in text
    reused = text.split("Reused: the baseline's own run, not measured again (1)")[1]
    assert re.search(rf"tiny-cnn .*\b2 +eager +1\.500 +{OLD_JOB} +reused, same run", reused)
    rows = {row["batch_size"]: row for row in csv.DictReader(io.StringIO(to_csv(report)))}
    assert (rows["2"]["verdict"], rows["2"]["change_ratio"]) == ("reused", "")
    document = json.loads(to_json(report))
    (reused_row,) = document["baseline"]["reused"]
    assert document["variants"][reused_row]["job"] == OLD_JOB


def test_a_job_with_no_finish_time_at_all_is_newer_than_one_stored_before_it(
    make_run: MakeRun,
) -> None:
    # Every index ended by the deadline: only the database's time of storing orders it.
    runs = [make_run(finished_at=LAST_WEEK), cut_off(make_run(), collected_at=TODAY)]
    report = build_report(runs)
    assert report.variants == ()
    assert [(f.job, f.explanation) for f in report.failures] == [(TODAY_JOB, DEADLINE)]


@pytest.mark.parametrize(
    "selection",
    [{}, {"jobs": [OLD_JOB]}, {"jobs": [OLD_JOB, TODAY_JOB]}, {"all_revisions": True}],
)
def test_every_selection_renders_the_same_bytes_whatever_the_order_of_the_runs(
    revisions: tuple[list[StoredRun], list[StoredRun]], selection: dict[str, Any]
) -> None:
    today, last_week = revisions
    runs = [*today, *last_week]
    shuffled = random.Random(5).sample(runs, len(runs))
    first = build_report(runs, baseline=last_week, **selection)
    second = build_report(shuffled, baseline=last_week[::-1], **selection)
    for render in (to_text, to_markdown, to_csv, to_json):
        assert render(first) == render(second)


def test_a_later_failure_replaces_an_earlier_measurement(make_run: MakeRun) -> None:
    runs = [make_run(finished_at=LAST_WEEK), make_run(failure="OOMKilled")]
    report = build_report(runs)
    assert report.variants == ()
    assert [failed.explanation for failed in report.failures] == ["OOMKilled"]


def test_p99_is_marked_unreliable_below_1000_iterations(make_run: MakeRun) -> None:
    report = build_report([make_run(count=100), make_run(target="t4", count=1000)])
    assert [row.is_p99_reliable for row in report.variants] == [False, True]
    assert "1.020?" in to_text(report)


def test_markdown_puts_regressions_first_under_a_marker(
    regressed: tuple[list[StoredRun], list[StoredRun]],
) -> None:
    today, last_week = regressed
    markdown = to_markdown(build_report(today, baseline=last_week))
    headings = [line for line in markdown.splitlines() if line.startswith("### ")]
    assert headings[0].startswith("### 🔴 Regressions")
    assert "🔴 **1 regression against the baseline**" in markdown.split("###")[0]
    assert "| us-east | a100 | tiny-cnn |" in markdown.split("###")[1]


def test_markdown_escapes_names_that_would_break_a_table(make_run: MakeRun) -> None:
    markdown = to_markdown(build_report([make_run(model="a|b <img> *c*")]))
    assert r"a\|b &lt;img&gt; \*c\*" in markdown
    assert "<img>" not in markdown


def test_outputs_are_identical_whatever_the_order_of_the_runs(
    everything: list[StoredRun], regressed: tuple[list[StoredRun], list[StoredRun]]
) -> None:
    _, last_week = regressed
    shuffled = random.Random(3).sample(everything, len(everything))
    first = build_report(everything, baseline=last_week)
    second = build_report(shuffled, baseline=last_week[::-1])
    for render in (to_text, to_markdown, to_csv, to_json):
        assert render(first) == render(second)


def test_json_has_sorted_keys_and_a_schema_version(everything: list[StoredRun]) -> None:
    text = to_json(build_report(everything))
    document = json.loads(text)
    assert document["schema_version"] == REPORT_SCHEMA_VERSION
    assert list(document) == sorted(document)
    row = document["by_target"][0]["entries"][2]["row"]
    assert document["variants"][row]["key"]["target"] == "t4"
    assert document["variants"][0]["latency"]["p50_ms"] == 1.0


def sized_sweep(make_run: MakeRun, targets: int) -> list[StoredRun]:
    """Two models x two precisions x three batch sizes on each of `targets` targets, every
    one in a by-target comparison, a best configuration, a ranking and every axis."""
    return [
        make_run(
            model=model,
            target=f"gpu-{target:02d}",
            precision=precision,
            batch_size=batch,
            p50_ms=(1 + target / 10) * (1 + batch / 4) * (0.6 if precision == "bf16" else 1),
        )
        for target in range(targets)
        for model in ("tiny-cnn", "tiny-mlp")
        for precision in ("fp32", "bf16")
        for batch in (1, 2, 4)
    ]


def json_values(node: object) -> int:
    """How many values a parsed JSON document holds, itself included."""
    if isinstance(node, dict):
        return 1 + sum(map(json_values, node.values()))
    if isinstance(node, list):
        return 1 + sum(map(json_values, node))
    return 1


def test_json_writes_each_row_once_and_grows_with_the_variants(make_run: MakeRun) -> None:
    """A variant is in a dozen comparisons; written in each, 10,000 variants made 360 MB."""
    small, large = (
        json.loads(to_json(build_report(sized_sweep(make_run, targets)))) for targets in (4, 8)
    )
    assert (len(small["variants"]), len(large["variants"])) == (48, 96)
    assert json_values(large) <= 2.05 * json_values(small)
    # Only `variants` holds rows (a row has its latency); everything else points into it.
    text = json.dumps(large)
    assert text.count('"latency": {') == len(large["variants"])
    axis = large["axes"][0]["entries"][0]
    assert isinstance(axis["row"], int) and isinstance(axis["reference"], int)
    assert large["variants"][axis["reference"]]["key"]["target"] == "gpu-00"


def test_a_baseline_row_is_written_whole_beside_the_current_rows_index(
    regressed: tuple[list[StoredRun], list[StoredRun]],
) -> None:
    today, last_week = regressed
    document = json.loads(to_json(build_report(today, baseline=last_week)))
    change = document["baseline"]["changes"][0]
    assert document["variants"][change["current"]]["latency"]["p50_ms"] == 1.3
    assert change["baseline"]["latency"]["p50_ms"] == 1.0


def test_csv_has_one_row_per_variant_in_stable_columns(
    everything: list[StoredRun], regressed: tuple[list[StoredRun], list[StoredRun]]
) -> None:
    report = build_report(everything, baseline=regressed[1])
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert len(rows) == len(report.variants) + len(report.failures)
    by_target = {row["target"]: row for row in rows if row["model"] == "tiny-cnn"}
    assert (by_target["a100"]["verdict"], by_target["t4"]["verdict"]) == ("unchanged", "unchanged")
    assert [row["explanation"] for row in rows if row["status"] == "failed"] == [
        "OOMKilled",
        "pod never scheduled",
    ]


def test_a_threshold_that_is_no_fraction_is_refused(gpu_comparison: list[StoredRun]) -> None:
    with pytest.raises(ValueError, match="regression_threshold is a fraction"):
        build_report(gpu_comparison, regression_threshold=5)


@pytest.fixture(scope="module")
def hostile(make_run: MakeRun, sweep: list[StoredRun]) -> Report:
    """A GPU comparison of a model whose name is HTML, next to a sweep, and a model with
    mathtext in its name whose faster configuration is outside its accuracy gate."""
    name = "<script>alert(1)</script>"
    runs = [make_run(model=name, target=t, p50_ms=p) for t, p in [("a100", 1.0), ("t4", 3.0)]]
    mathtext = [
        make_run(model="cost $5 $", target="t4"),
        make_run(model="cost $5 $", target="t4", precision="bf16", p50_ms=0.5, accuracy=FAR),
    ]
    return build_report([*runs, *sweep, *mathtext])


@pytest.fixture(scope="module")
def html_pages(hostile: Report) -> tuple[str, str]:
    """The same report rendered twice."""
    return to_html(hostile), to_html(hostile)


def test_html_escapes_names_and_inlines_every_plot(html_pages: tuple[str, str]) -> None:
    text = html_pages[0]
    assert "<script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    sources = re.findall(r'(?:src|href)="([^"]*)"', text)
    assert len(sources) == 4  # latency boxes, targets, batch-size curves, speed-accuracy
    for source in sources:
        prefix, _, data = source.partition(",")
        assert prefix == "data:image/png;base64"
        assert base64.b64decode(data, validate=True).startswith(b"\x89PNG")
    assert "url(" not in text and "http" not in text


def test_the_page_draws_a_bounded_number_of_figures_and_says_what_it_left_out(
    make_run: MakeRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    """10,000 variants drew about 700 figures, past 5 minutes: each kind now stops at
    FIGURES_PER_KIND (1 here), and says so; the tables still list every variant."""
    monkeypatch.setattr(html, "FIGURES_PER_KIND", 1)
    monkeypatch.setattr(html, "BARS_PER_PLOT", 5)
    report = build_report(sized_sweep(make_run, 8))
    page = to_html(report)
    # latency boxes, by target, batch-size lines, speed-accuracy: one figure each
    assert len(re.findall(r'src="data:image/png', page)) == 4
    assert "Drawn: the first 40 of 96 variants, as the tables list them" in page
    assert "Drawn: the first 6 of 12 comparisons by target" in page
    assert "Drawn: the first 6 of 32 lines" in page
    assert "Drawn: the first 6 of 16 sweeps" in page
    assert page.count("<tr>") > 96 * 2
    figure = Figure()
    axes = figure.add_subplot()
    html._bars(axes, report.by_target[0])
    assert len(axes.patches) == 5
    assert axes.get_title().endswith("(the fastest 5 of 8)")


def test_html_pages_are_byte_identical_for_the_same_report(html_pages: tuple[str, str]) -> None:
    assert html_pages[0] == html_pages[1]


def measured(make_run: MakeRun, durations_ms: list[float], **settings: Any) -> StoredRun:
    """A run whose result carries `durations_ms` as its samples, summarised from them."""
    durations = sorted(durations_ms)
    quartile = len(durations) // 4
    return make_run(
        p50_ms=statistics.median(durations),
        iqr_ms=durations[-quartile - 1] - durations[quartile],
        count=len(durations),
        samples=encode([round(ms * 1e6) for ms in durations_ms]),
        **settings,
    )


def skewed(seed: int, median_ms: float, count: int = 400) -> list[float]:
    """Right-skewed iteration times, as a shared CPU gives them."""
    rng = random.Random(seed)
    return [median_ms * rng.lognormvariate(0, 0.05) + rng.expovariate(20) for _ in range(count)]


@pytest.mark.parametrize(
    "flag", ["noisy", "contended", "cpu_throttled", "gpu_throttled", "stopped_early"]
)
def test_a_flagged_run_never_decides_a_comparison(make_run: MakeRun, flag: str) -> None:
    reason = f"{flag} because the test says so"
    runs = [
        make_run(precision="fp16", p50_ms=1.0),
        make_run(precision="fp32", p50_ms=2.0, flags={flag: True, "reasons": [reason]}),
    ]
    report = build_report(runs, baseline=[make_run(precision="fp32", p50_ms=1.0)])
    (best,) = report.best_configurations
    assert not best.is_significant
    (axis,) = report.axes
    (entry,) = axis.entries
    assert entry.ratio.excludes_one and entry.direction == "inconclusive"
    assert report.baseline is not None
    (change,) = report.baseline.changes
    assert change.verdict == "inconclusive"
    text = to_text(report)
    assert "slower than" not in text and "faster than" not in text
    # The reason is said once, in the Flagged table, not in every verdict it empties.
    assert "Flagged (1): why these runs decide nothing" in text
    assert text.count(reason) == 1


def test_samples_give_the_interval_and_identical_setups_show_no_difference(
    make_run: MakeRun,
) -> None:
    # Two runs of the same setup: a report must not call them apart (one showed "3.19x").
    runs = [
        measured(make_run, skewed(1, 2.0), precision="fp32"),
        measured(make_run, skewed(2, 2.0), precision="bf16"),
    ]
    report = build_report(runs)
    assert {row.estimate.method for row in report.variants} == {"order statistics"}
    (axis,) = report.axes
    (entry,) = axis.entries
    assert entry.direction == "no difference"
    assert entry.ratio.low < 1 < entry.ratio.high
    assert "no difference from fp32 beyond noise" in to_text(report)


def test_each_axis_compares_against_its_reference_with_the_others_fixed(
    make_run: MakeRun,
) -> None:
    runs = [
        measured(make_run, skewed(seed, median), precision=precision, batch_size=batch)
        for seed, (precision, batch, median) in enumerate(
            [("fp32", 1, 2.0), ("bf16", 1, 1.25), ("fp32", 8, 8.0), ("bf16", 8, 4.0)]
        )
    ]
    report = build_report(runs)
    precision, batch = report.axes
    assert precision.axis == "precision"
    assert [(e.row.key.batch_size, e.reference.key.precision) for e in precision.entries] == [
        (1, "fp32"),
        (8, "fp32"),
    ]
    assert [round(e.ratio.value, 1) for e in precision.entries] == [0.6, 0.5]
    assert all(e.ratio.low < e.ratio.value < e.ratio.high < 1 for e in precision.entries)
    # Per sample: batch 8 of fp32 takes 8 ms for 8 samples, 1 ms each, against 2 ms at batch 1.
    assert [(e.row.key.precision, round(e.ratio.value, 1)) for e in batch.entries] == [
        ("bf16", 0.4),
        ("fp32", 0.5),
    ]
    text = to_text(report)
    assert "Precision: each against fp32, other settings held fixed" in text
    assert re.search(r"1\.[56]\dx faster than fp32", text)
    assert "Batch: each against batch 1, other settings held fixed" in text
    assert re.search(r"2\.[0-2]\dx faster than batch 1", text)


def test_compiled_variants_are_compared_against_eager_and_get_their_own_batch_curve(
    make_run: MakeRun,
) -> None:
    runs = [
        measured(make_run, skewed(seed, median), runtime=runtime, batch_size=batch)
        for seed, (runtime, batch, median) in enumerate(
            [("eager", 1, 2.0), ("inductor", 1, 1.0), ("eager", 8, 8.0), ("inductor", 8, 4.0)]
        )
    ]
    report = build_report(runs)
    compiled = next(axis for axis in report.axes if axis.axis == "runtime")
    assert [(e.row.key.batch_size, e.reference.key.runtime) for e in compiled.entries] == [
        (1, "eager"),
        (8, "eager"),
    ]
    assert [round(e.ratio.value, 1) for e in compiled.entries] == [0.5, 0.5]
    curves = _curves(report.variants)
    assert [[row.key.runtime for row in points] for points in curves.values()] == [
        ["eager", "eager"],
        ["inductor", "inductor"],
    ]


def test_throughput_is_the_medians_and_an_interval_is_never_clipped(make_run: MakeRun) -> None:
    run = make_run(batch_size=8, p50_ms=4.0, iqr_ms=40.0, count=4)
    (row,) = build_report([run]).variants
    assert row.samples_per_s == 2000
    assert 0 < row.ci_low_ms < 4.0 < row.ci_high_ms
    assert row.estimate.method == "IQR approximation"
    assert "≈" in to_text(build_report([run]))


def test_a_quantized_row_says_how_much_of_the_model_the_quantization_reached(
    make_run: MakeRun,
) -> None:
    run = make_run(quantization="int8-dynamic")
    result = run.variant.result
    assert isinstance(result, OkResult)
    applied = Applied(
        compute_dtype="float32",
        parameter_dtypes={"torch.float32": 8, "torch.int8": 1},
        input_dtypes=["torch.float32"],
        output_dtype="torch.float32",
        quantization="int8-dynamic",
        linear_layers=1,
        quantized_layers=1,
        unquantized_weighted_layers={"conv2d": 3},
        weight_bytes=1024,
    )
    variant = run.variant.model_copy(
        update={"result": result.model_copy(update={"applied": applied})}
    )
    report = build_report([StoredRun(run.job, variant, run.collected_at)])
    assert "1 of 1 Linear; conv2d x3 not" in to_text(report)
    (row,) = csv.DictReader(io.StringIO(to_csv(report)))
    assert row["quantized"] == "1 of 1 Linear; conv2d x3 not"


def repeats(make_run: MakeRun, p50s: list[float], **settings: Any) -> list[StoredRun]:
    """One variant run once per repeat (`benchmark.repeats`), each in its own Job."""
    runs = []
    for repeat, p50_ms in enumerate(p50s):
        run = make_run(p50_ms=p50_ms, **settings)
        job = run.job.model_copy(update={"job": f"{run.job.job}-r{repeat}", "repeat": repeat})
        runs.append(StoredRun(job=job, variant=run.variant, collected_at=run.collected_at))
    return runs


def test_a_variants_repeats_are_one_row_with_their_median_and_spread(make_run: MakeRun) -> None:
    report = build_report(repeats(make_run, [1.0, 1.1, 1.04]))
    (row,) = report.variants
    assert row.latency.p50_ms == pytest.approx(1.04)
    assert row.repeats is not None
    assert row.repeats.p50s_ms == pytest.approx((1.0, 1.1, 1.04))
    assert row.repeats.spread == pytest.approx(0.1)
    assert row.job == f"{TODAY_JOB}-r2"
    assert report.superseded == 0
    assert [job.reported for job in report.jobs] == [True] * 3
    assert "3 runs, spread ±10.0%" in to_text(report)
    (csv_row,) = csv.DictReader(io.StringIO(to_csv(report)))
    assert csv_row["runs"] == "3"
    assert float(csv_row["between_run_spread"]) == pytest.approx(0.1)


def test_an_even_number_of_repeats_reports_the_middle_of_the_two_middle_runs(
    make_run: MakeRun,
) -> None:
    (row,) = build_report(repeats(make_run, [1.0, 1.2, 1.1, 1.3])).variants
    assert row.latency.p50_ms == pytest.approx(1.15)
    assert row.estimate.median == pytest.approx(1.15)
    assert row.ci_low_ms < 1.15 < row.ci_high_ms


def test_a_report_without_repeats_has_no_runs_column(gpu_comparison: list[StoredRun]) -> None:
    layout = lay_out(analyse(build_report(gpu_comparison)))
    (variants,) = [table for table in layout.tables if table.title.startswith("Variants")]
    assert "runs" not in [column.heading for column in variants.columns]


@pytest.mark.parametrize(
    ("baseline_p50s", "verdict"),
    [([1.0, 1.2, 1.05], "inconclusive"), ([1.0, 1.01, 1.05], "regression")],
)
def test_a_change_within_the_between_run_noise_is_inconclusive(
    make_run: MakeRun, baseline_p50s: list[float], verdict: str
) -> None:
    today = repeats(make_run, [1.2, 1.21, 1.22])
    last_week = repeats(make_run, baseline_p50s, finished_at=LAST_WEEK)
    report = build_report(today, baseline=last_week)
    assert report.baseline is not None
    (change,) = report.baseline.changes
    assert change.ratio.value == pytest.approx(1.21 / statistics.median(baseline_p50s))
    assert change.ratio.excludes_one
    assert change.verdict == verdict
    noted = "within between-run noise ±20.0%" in to_text(report)
    assert noted is (verdict == "inconclusive")


def test_an_axis_difference_within_the_between_run_noise_has_no_direction(
    make_run: MakeRun,
) -> None:
    runs = [
        *repeats(make_run, [1.0, 1.3, 1.1], precision="fp32"),
        *repeats(make_run, [0.95, 1.0, 1.05], precision="fp16"),
    ]
    report = build_report(runs)
    (axis,) = report.axes
    (entry,) = axis.entries
    assert entry.ratio.excludes_one and entry.direction == "inconclusive"
    assert entry.doubts == ("within between-run noise ±30.0%",)
    (best,) = report.best_configurations
    assert not best.is_significant


def test_a_repeat_left_from_a_revision_that_measured_something_else_is_left_out(
    make_run: MakeRun,
) -> None:
    current = repeats(make_run, [1.0, 1.02])
    (old,) = repeats(make_run, [2.0, 2.0, 2.0], finished_at=LAST_WEEK)[2:]
    assert old.variant.result is not None and isinstance(old.variant.result, OkResult)
    other = old.variant.result.variant
    assert other is not None
    result = old.variant.result.model_copy(
        update={"variant": other.model_copy(update={"id": "measured-otherwise"})}
    )
    stale = StoredRun(
        job=old.job,
        variant=old.variant.model_copy(update={"result": result}),
        collected_at=old.collected_at,
    )
    report = build_report([*current, stale])
    (row,) = report.variants
    assert row.repeats is not None and row.repeats.p50s_ms == pytest.approx((1.0, 1.02))
    assert report.superseded == 1


def with_pairing(
    run: StoredRun, against: StoredRun, ratio: float, low: float, high: float
) -> StoredRun:
    """`run` as a pod measuring it in rounds against `against` reports it."""
    mine, theirs = run.variant.result, against.variant.result
    assert isinstance(mine, OkResult) and isinstance(theirs, OkResult) and theirs.variant
    pairing = Paired(against=theirs.variant.id, rounds=16, ratio=ratio, low=low, high=high)
    result = mine.model_copy(update={"paired": pairing})
    return StoredRun(run.job, run.variant.model_copy(update={"result": result}), run.collected_at)


def test_a_pairing_in_one_pod_decides_where_the_unpaired_intervals_overlap(
    make_run: MakeRun,
) -> None:
    fp32 = make_run(precision="fp32", p50_ms=1.0, iqr_ms=0.09, count=10, index=0)
    bf16 = make_run(precision="bf16", p50_ms=0.95, iqr_ms=0.09, count=10, index=1)
    (unpaired,) = build_report([fp32, bf16]).axes[0].entries
    assert not unpaired.ratio.excludes_one and not unpaired.ratio.paired
    report = build_report([fp32, with_pairing(bf16, fp32, 0.95, 0.93, 0.97)])
    (axis,) = report.axes
    (entry,) = axis.entries
    assert (entry.row.key.precision, entry.reference.key.precision) == ("bf16", "fp32")
    assert entry.ratio == Ratio(0.95, 0.93, 0.97, paired=True)
    assert entry.direction == "faster"
    assert "0.93x-0.97x paired" in to_text(report)


def test_a_pairing_reads_both_ways_and_per_sample(make_run: MakeRun) -> None:
    """The reference measured against the other (it is the pod's first variant of the model
    only by order): the ratio inverts; batches differ: latency becomes per sample."""
    batch_1 = make_run(batch_size=1, p50_ms=1.0, index=0)
    batch_8 = make_run(batch_size=8, p50_ms=4.0, index=1)
    report = build_report([with_pairing(batch_1, batch_8, 0.25, 0.2, 0.3), batch_8])
    (entry,) = report.axes[0].entries
    assert entry.row.key.batch_size == 8
    # batch 8 per sample over batch 1: (4.0 / 8) / 1.0 = 0.5, from the pairing 1 / 0.25 / 8.
    assert entry.ratio.paired
    assert (entry.ratio.value, entry.ratio.low, entry.ratio.high) == pytest.approx(
        (0.5, 1 / 0.3 / 8, 1 / 0.2 / 8)
    )


def test_a_pairing_counts_only_within_its_own_job(make_run: MakeRun) -> None:
    """Another target's run of the same settings has the same variant id in these runs, but
    ran in another Job's pod: a pairing names only a variant of its own pod."""
    a100 = make_run(target="a100", p50_ms=1.0)
    h100 = with_pairing(make_run(target="h100", p50_ms=0.95), a100, 0.95, 0.93, 0.97)
    (comparison,) = build_report([a100, h100]).by_target
    assert [entry.ratio.paired for entry in comparison.entries] == [False, False]


def with_rounds(run: StoredRun, name: str, medians_ms: list[float]) -> StoredRun:
    """`run` as a runner with round medians reports it: measured in the rounds `name`."""
    result = run.variant.result
    assert isinstance(result, OkResult)
    rounds = Rounds(id=name, medians_ns=[ms * 1e6 for ms in medians_ms])
    result = result.model_copy(update={"rounds": rounds})
    return StoredRun(run.job, run.variant.model_copy(update={"result": result}), run.collected_at)


def rounds_of(p50_ms: float, rounds: int = 16, *, seed: int) -> list[float]:
    """Round medians about `p50_ms` that drift together with every other list of the same
    seed: the node's drift a pairing cancels (+-20 %), with 0.5 % of its own noise."""
    drift = random.Random(seed)
    own = random.Random(seed * 1000 + round(p50_ms * 1000))
    return [
        p50_ms * (1 + 0.2 * drift.uniform(-1, 1)) * (1 + 0.005 * own.uniform(-1, 1))
        for _ in range(rounds)
    ]


def test_any_two_variants_of_the_same_rounds_compare_paired(make_run: MakeRun) -> None:
    """fp32, bf16 and fp16 in one pod's rounds: bf16 against fp16 is paired as well as each
    against fp32 (the pod's first, the only one `paired` names); an older `paired` alone
    would leave bf16 against fp16 to the unpaired intervals, which overlap."""
    fp32 = make_run(precision="fp32", p50_ms=1.0, index=0, iqr_ms=0.05, count=10)
    bf16 = make_run(precision="bf16", p50_ms=0.62, index=1, iqr_ms=0.05, count=10)
    fp16 = make_run(precision="fp16", p50_ms=0.6, index=2, iqr_ms=0.05, count=10)
    medians = {run: rounds_of(p50, seed=7) for run, p50 in ((0, 1.0), (1, 0.62), (2, 0.6))}
    older = [fp32, with_pairing(bf16, fp32, 0.62, 0.61, 0.63),
             with_pairing(fp16, fp32, 0.6, 0.59, 0.61)]  # fmt: skip
    (best,) = build_report(older).best_configurations
    fastest, second, _ = best.comparison.entries
    assert (fastest.row.key.precision, second.row.key.precision) == ("fp16", "bf16")
    assert not second.ratio.paired and not second.ratio.excludes_one
    now = [with_rounds(run, "0123456789ab", medians[i]) for i, run in enumerate(older)]
    report = build_report(now)
    (best,) = report.best_configurations
    _, second, third = best.comparison.entries
    expected = paired_ratio(medians[1], medians[2])
    assert (second.ratio.value, second.ratio.low, second.ratio.high) == pytest.approx(expected)
    assert second.ratio.paired
    assert second.ratio.excludes_one and second.is_significant
    assert third.ratio.paired, "fp32 against fp16: from the rounds as well"
    (axis,) = report.axes
    for entry in axis.entries:
        assert entry.ratio.paired and entry.direction == "faster"
    assert "1.03x slower than fp16 [1.03x-1.04x paired]" in to_text(report)
    assert "1.03x-1.04x paired" in to_markdown(report)


def test_rounds_of_another_pod_do_not_pair(make_run: MakeRun) -> None:
    """The same Job kept fp32 from one attempt and bf16 from its retry: bf16's `paired` names
    fp32, but their rounds differ, so the comparison is unpaired."""
    fp32 = with_rounds(make_run(precision="fp32", p50_ms=1.0), "attempt-1", rounds_of(1.0, seed=1))
    bf16 = with_pairing(make_run(precision="bf16", p50_ms=0.95, index=1), fp32, 0.95, 0.93, 0.97)
    bf16 = with_rounds(bf16, "attempt-2", rounds_of(0.95, seed=2))
    (entry,) = build_report([fp32, bf16]).axes[0].entries
    assert not entry.ratio.paired


def paired_repeats(
    make_run: MakeRun, ratios: list[float], p50s: list[float], *, older: bool = False
) -> list[StoredRun]:
    """fp32 and bf16 in one pod's rounds per repeat (its own Job and node speed, `p50s`),
    bf16 at `ratios` of fp32 in them; `older`: as a runner before `rounds` wrote them."""
    runs = []
    for repeat, (ratio, p50) in enumerate(zip(ratios, p50s, strict=True)):
        fp32_medians = rounds_of(p50, seed=repeat)
        bf16_medians = [median * ratio for median in fp32_medians]
        fp32 = make_run(precision="fp32", p50_ms=p50, index=0)
        bf16 = make_run(precision="bf16", p50_ms=p50 * ratio, index=1)
        if older:
            bf16 = with_pairing(bf16, fp32, ratio, ratio * 0.99, ratio * 1.01)
        else:
            fp32 = with_rounds(fp32, f"r{repeat}", fp32_medians)
            bf16 = with_rounds(bf16, f"r{repeat}", bf16_medians)
        for run in (fp32, bf16):
            job = run.job.model_copy(update={"job": f"{run.job.job}-r{repeat}", "repeat": repeat})
            runs.append(StoredRun(job=job, variant=run.variant, collected_at=run.collected_at))
    return runs


def unpair(run: StoredRun) -> StoredRun:
    """`run` as a runner without `interleave` reports it."""
    assert isinstance(run.variant.result, OkResult)
    result = run.variant.result.model_copy(update={"rounds": None, "paired": None})
    return StoredRun(run.job, run.variant.model_copy(update={"result": result}), run.collected_at)


@pytest.mark.parametrize("older", [False, True], ids=["rounds", "older-paired"])
def test_repeats_keep_their_pairing_median_of_runs_within_all_their_intervals(
    make_run: MakeRun, older: bool
) -> None:
    """Three repeats on nodes 40 % apart in speed: the unpaired ratio is lost in the runs'
    spread, the paired one is the median of each run's ratio, its interval spanning every
    run's interval, and the nodes' speed is no doubt of it."""
    runs = paired_repeats(make_run, [0.8, 0.82, 0.79], [1.0, 1.4, 1.2], older=older)
    unpaired = [unpair(run) for run in runs]
    (entry,) = build_report(unpaired).axes[0].entries
    assert not entry.ratio.paired and entry.direction == "inconclusive"
    assert entry.reference.repeats is not None
    assert entry.reference.repeats.spread == pytest.approx(0.4)
    (entry,) = build_report(runs).axes[0].entries
    assert entry.ratio.paired
    assert entry.ratio.value == pytest.approx(0.8)
    assert entry.ratio.low <= 0.79 and entry.ratio.high >= 0.82
    assert entry.ratio.high < 0.83
    assert entry.doubts == () and entry.direction == "faster"


def test_repeats_whose_runs_disagree_claim_no_direction(make_run: MakeRun) -> None:
    """One repeat's node ran bf16 slower: the interval spans it, so no run is outvoted."""
    runs = paired_repeats(make_run, [0.9, 0.92, 1.05], [1.0, 1.0, 1.0])
    (entry,) = build_report(runs).axes[0].entries
    assert entry.ratio.paired and entry.ratio.value == pytest.approx(0.92)
    assert entry.ratio.low < 1 < entry.ratio.high
    assert entry.direction == "no difference"


def test_a_repeat_without_its_pairing_leaves_the_between_run_noise_in_doubt(
    make_run: MakeRun,
) -> None:
    """bf16's third run kept no rounds (its pod's rounds lost with its log): the pairing
    covers two of three runs, so the runs' spread still weighs as it does unpaired."""
    runs = paired_repeats(make_run, [0.8, 0.82, 0.79], [1.0, 1.4, 1.2])
    last = runs[-1]
    assert isinstance(last.variant.result, OkResult)
    result = last.variant.result.model_copy(update={"rounds": None})
    runs[-1] = StoredRun(last.job, last.variant.model_copy(update={"result": result}), TODAY)
    (entry,) = build_report(runs).axes[0].entries
    assert entry.ratio.paired
    assert entry.doubts == ("within between-run noise ±43.5%",)


def test_rounds_travel_in_the_json_report(make_run: MakeRun) -> None:
    fp32 = with_rounds(make_run(precision="fp32"), "0123456789ab", [1.0, 1.1])
    document = json.loads(to_json(build_report([fp32])))
    (row,) = document["variants"]
    (run,) = row["rounds"]
    assert run["rounds"] == {"id": "0123456789ab", "medians_ns": [1e6, 1.1e6]}


def test_damaged_rounds_leave_the_comparison_unpaired(make_run: MakeRun) -> None:
    fp32 = with_rounds(make_run(precision="fp32", p50_ms=1.0), "same", rounds_of(1.0, seed=1))
    bf16 = make_run(precision="bf16", p50_ms=0.95, index=1)
    bf16 = with_rounds(bf16, "same", rounds_of(0.95, 15, seed=1))
    (entry,) = build_report([fp32, bf16]).axes[0].entries
    assert not entry.ratio.paired


AHEAD = "2027-06-01T00:00:00Z"
"""A finish time an older revision's node reported, its clock a half year ahead."""
SPEC = "specs/workflows/gpu-comparison.yaml"


def _revision(run: StoredRun, spec: str, job: str, collected_at: str) -> StoredRun:
    """`run` as a Job made from spec bytes `spec` (one character, repeated as a sha256)."""
    identity = run.job.model_copy(update={"job": job, "spec_sha256": spec * 64})
    return StoredRun(identity, run.variant, collected_at)


def test_a_node_clock_ahead_does_not_make_an_older_revision_current(make_run: MakeRun) -> None:
    """The defect: the newest Job was chosen by its last finish time; an older revision whose
    node's clock ran ahead was shown as current, and the current Job was hidden."""
    old = _revision(make_run(p50_ms=2.0, finished_at=AHEAD), "1", "old-job", LAST_WEEK)
    new = _revision(make_run(p50_ms=1.0), "2", "new-job", TODAY)
    notes = Notes(
        spec_revisions={
            (SPEC, "1" * 64): SpecRevision("c1", 1),
            (SPEC, "2" * 64): SpecRevision(None, CURRENT),
        }
    )
    report = build_report([old, new], notes=notes)
    assert [(row.job, row.latency.p50_ms) for row in report.variants] == [("new-job", 1.0)]
    assert [(job.job, job.reported, job.finished_ahead) for job in report.jobs] == [
        ("new-job", True, False),
        ("old-job", False, True),
    ]
    text = to_text(report)
    assert "1 Job (old-job) report finish times in the future" in text
    assert "2027-06-01 00:00Z (ahead)" in text


def test_a_local_run_stored_within_the_second_it_finished_is_not_ahead(
    make_run: MakeRun, tmp_path: Path
) -> None:
    """Issue #31: `make demo` marked its own Job "(ahead)" on the machine that stored it: a
    local run's finish has milliseconds, its time of storage whole seconds, so a run stored
    within the second it finished read as finishing after it was stored."""
    run = make_run(finished_at="2026-12-03T06:00:00.900+00:00")
    with open_store(tmp_path / "results.sqlite") as store:
        store.add(run.job, [run.variant], datetime(2026, 12, 3, 6, 0, 0, 950000, tzinfo=UTC))
        stored = store.runs(run.job.workflow)
    (job,) = build_report(stored).jobs
    assert not job.finished_ahead
    assert "(ahead)" not in to_text(build_report(stored))


def test_a_finish_gather_held_to_its_clock_is_ahead(make_run: MakeRun) -> None:
    run = make_run()
    noted = run.variant.model_copy(update={"clock_note": "its node's clock runs ahead"})
    (job,) = build_report([StoredRun(run.job, noted, TODAY)]).jobs
    assert job.finished_ahead


@pytest.mark.parametrize(
    "notes",
    [
        Notes(in_dist=frozenset({("us-east", "new-job")})),
        Notes(
            spec_revisions={
                (SPEC, "1" * 64): SpecRevision("c1", 3),
                (SPEC, "2" * 64): SpecRevision("c2", 0),
            }
        ),
        Notes(record_ages={("us-east", "old-job"): 0, ("us-east", "new-job"): CURRENT}),
    ],
    ids=["dist-holds-it", "newer-spec-in-git", "recorded-later"],
)
def test_what_dist_and_git_say_decides_the_current_job_not_any_time(
    make_run: MakeRun, notes: Notes
) -> None:
    """Even stored after the current Job (a gather of an older Job left in the cluster), an
    older revision is not current."""
    old = _revision(make_run(p50_ms=2.0, finished_at=AHEAD), "1", "old-job", AHEAD)
    new = _revision(make_run(p50_ms=1.0), "2", "new-job", TODAY)
    report = build_report([old, new], notes=notes)
    assert [row.job for row in report.variants] == ["new-job"]


def test_what_an_edited_record_says_cannot_forge_a_line_of_the_report(
    make_run: MakeRun, revisions: tuple[list[StoredRun], list[StoredRun]]
) -> None:
    """A record in results/ comes with a pull request: its description, owner and the
    explanation of a failure print on the lines they belong to."""
    today, _ = revisions
    forged = "latency\n::error file=specs/clusters.yaml,line=1::forged"
    notes = Notes(about={TODAY_JOB: (forged, "ml\r::warning::x")})
    failed = make_run(batch_size=4, index=3, failure="oom\u2028::error::forged\r::notice::x")
    report = build_report([*today, failed], notes=notes)
    for text in (to_text(report), to_markdown(report)):
        assert not [line for line in text.splitlines() if line.startswith("::")]
        assert [line for line in text.splitlines() if "latency" in line and "::error" in line]


def _precisions(make_run: MakeRun, *rows: tuple[str, float, Accuracy | None]) -> list[StoredRun]:
    return [
        make_run(precision=precision, p50_ms=p50, accuracy=accuracy)
        for precision, p50, accuracy in rows
    ]


def test_a_faster_variant_outside_its_gate_is_never_the_best_and_says_accuracy_failed(
    make_run: MakeRun,
) -> None:
    runs = _precisions(make_run, ("fp32", 2.0, EXACT), ("fp16", 1.2, CLOSE), ("bf16", 0.6, FAR))
    report = build_report(runs)
    (best,) = report.best_configurations
    assert [e.row.key.precision for e in best.comparison.entries] == ["fp16", "fp32", "bf16"]
    assert [e.row.key.precision for e in best.faster_but_failed] == ["bf16"]
    assert best.is_significant, "the runner-up within the gate is fp32, slower beyond noise"
    text = to_text(report)
    assert "faster, accuracy_failed" in text
    assert (
        "accuracy_failed: cosine 0.95 < min_cosine 0.999; max_rel_error 0.3 > max_rel_error" in text
    )
    assert "1 configuration faster than the best (bf16) misses its accuracy gate" in text
    (bf16,) = [row for row in report.variants if row.key.precision == "bf16"]
    assert bf16.accuracy.state == "accuracy_failed"


def test_the_gate_its_job_said_decides_not_the_default(make_run: MakeRun) -> None:
    loose = AccuracyGate(min_cosine=0.9, max_rel_error=0.5)
    runs = [
        make_run(precision="fp32", p50_ms=2.0),
        make_run(precision="bf16", p50_ms=0.6, accuracy=FAR, gate=loose),
    ]
    (best,) = build_report(runs).best_configurations
    assert best.comparison.entries[0].row.key.precision == "bf16"
    assert best.comparison.entries[0].row.accuracy.state == "passed"


def test_an_unmeasured_accuracy_is_never_taken_for_passing(make_run: MakeRun) -> None:
    runs = _precisions(make_run, ("fp32", 2.0, EXACT), ("fp16", 1.0, None))
    report = build_report(runs)
    (best,) = report.best_configurations
    assert [e.row.key.precision for e in best.comparison.entries] == ["fp32", "fp16"]
    assert not best.is_significant
    assert "not measured (a runner before accuracy)" in to_text(report)


def test_results_from_before_accuracy_rank_by_speed_and_say_they_were_not_measured(
    make_run: MakeRun,
) -> None:
    runs = _precisions(make_run, ("fp32", 2.0, None), ("fp16", 1.2, None))
    report = build_report(runs)
    (best,) = report.best_configurations
    assert best.comparison.entries[0].row.key.precision == "fp16"
    assert {row.accuracy.state for row in report.variants} == {"not measured"}
    assert "accuracy not measured; it is best by speed among those not known to fail" in (
        to_text(report)
    )


def test_with_every_variant_outside_its_gate_the_report_says_so(make_run: MakeRun) -> None:
    runs = _precisions(make_run, ("fp16", 1.2, FAR), ("bf16", 0.6, FAR))
    report = build_report(runs)
    (best,) = report.best_configurations
    assert best.comparison.entries[0].row.key.precision == "bf16"
    assert "No configuration is within its accuracy gate" in to_text(report)


def test_repeats_take_the_worst_accuracy_of_their_runs(make_run: MakeRun) -> None:
    first = make_run(precision="bf16", p50_ms=1.0, accuracy=CLOSE)
    second = make_run(precision="bf16", p50_ms=1.1, accuracy=FAR)
    second = dataclasses.replace(
        second, job=second.job.model_copy(update={"job": "gpu-comparison-a100-r1", "repeat": 1})
    )
    (row,) = build_report([first, second]).variants
    assert row.repeats is not None
    assert row.accuracy.state == "accuracy_failed"


def test_csv_and_json_carry_each_variants_accuracy(make_run: MakeRun) -> None:
    runs = _precisions(make_run, ("fp32", 2.0, EXACT), ("bf16", 0.6, FAR), ("fp16", 1.0, None))
    report = build_report(runs)
    rows = {row["precision"]: row for row in csv.DictReader(io.StringIO(to_csv(report)))}
    assert (rows["fp32"]["accuracy"], rows["fp32"]["cosine"]) == ("passed", "1.0")
    assert rows["bf16"]["accuracy"] == "accuracy_failed"
    assert rows["bf16"]["accuracy_failures"].startswith("cosine 0.95 < min_cosine 0.999")
    assert (rows["fp16"]["accuracy"], rows["fp16"]["cosine"]) == ("not measured", "")
    document = json.loads(to_json(report))
    states = {v["key"]["precision"]: v["accuracy"]["state"] for v in document["variants"]}
    assert states == {"fp32": "passed", "bf16": "accuracy_failed", "fp16": "not measured"}


def _shared_node_sweep(make_run: MakeRun, flagged: int) -> list[StoredRun]:
    """A precision x batch sweep of one model, its first `flagged` variants contended (and
    every other one of those noisy too), as on a node other pods share."""
    runs = []
    for index, (precision, batch) in enumerate(
        (precision, batch) for precision in ("fp32", "bf16", "fp16") for batch in (1, 8, 64)
    ):
        flags: dict[str, object] = {}
        if index < flagged:
            flags = {"contended": True, "reasons": ["other processes used 40% of the node"]}
            flags |= {"noisy": True} if index % 2 == 0 else {}
        runs.append(
            make_run(
                precision=precision,
                batch_size=batch,
                p50_ms=batch * (1.0 if precision == "fp32" else 0.6),
                index=index,
                flags=flags,
            )
        )
    return runs


def test_a_run_that_decides_nothing_says_so_before_any_table(make_run: MakeRun) -> None:
    """The defect: on a shared node nearly every variant was flagged and every verdict
    inconclusive, but the report opened with tables as if they answered."""
    runs = [
        *_shared_node_sweep(make_run, flagged=8),
        make_run(index=9, failure="oom", batch_size=256),
    ]
    report = build_report(runs)
    verdict = run_verdict(report)
    assert (verdict.measured, verdict.usable, verdict.failed) == (9, 1, 1)
    assert verdict.flagged == {"noisy": 4, "contended": 8}
    assert verdict.decides_nothing
    assert verdict.comparisons > 0 == verdict.decided
    text = to_text(report).splitlines()
    assert text[2] == (
        "This run decides nothing: 1 of 10 variants usable; 8 flagged (4 noisy, 8 contended); "
        f"1 failed; 0 of {verdict.comparisons} comparisons decided."
    )
    advice = [line for line in text if line.startswith("To decide more: ")]
    assert [line.split(":")[1].strip() for line in advice] == [
        "other work shared the node",
        "each run's spread was wide",
        "1 variant failed",
    ]
    assert "`resources: guaranteed`" in advice[0] and "node_labels" in advice[0]
    first_table = next(i for i, line in enumerate(text) if set(line) == {"-"})
    assert first_table > text.index(advice[-1])


def test_every_format_carries_the_verdict_on_the_run(make_run: MakeRun) -> None:
    report = build_report(_shared_node_sweep(make_run, flagged=3))
    verdict = run_verdict(report)
    assert (verdict.usable, verdict.decides_nothing) == (6, False)
    opening = verdict_lines(verdict)[0]
    assert opening.startswith("Verdict: 6 of 9 variants usable; 3 flagged (2 noisy, 3 contended)")
    assert to_markdown(report).find(opening) < to_markdown(report).find("|")
    assert opening in to_html(report)
    document = json.loads(to_json(report))
    assert document["verdict"]["usable"] == 6
    assert document["verdict"]["flagged"] == {"noisy": 2, "contended": 3}
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert sum(row["usable"] == "True" for row in rows) == 6


def test_a_clean_run_gives_no_advice(make_run: MakeRun) -> None:
    verdict = run_verdict(build_report(_shared_node_sweep(make_run, flagged=0)))
    assert (verdict.usable, verdict.flagged, verdict.advice) == (9, {}, ())
    assert not verdict.decides_nothing
    assert verdict_lines(verdict) == (
        f"Verdict: 9 of 9 variants usable; {verdict.decided} of "
        f"{verdict.comparisons} comparisons decided.",
    )


def test_every_flag_the_report_counts_has_its_advice() -> None:
    """In the order a user should try them (the node first), one for each flag."""
    assert set(ADVICE) == set(FLAGS)


def test_the_verdict_counts_variants_outside_their_gate_and_those_never_measured(
    make_run: MakeRun,
) -> None:
    failed_reference = Accuracy(seed=0, error="the fp32 reference ran out of memory")
    runs = _precisions(
        make_run,
        ("fp32", 2.0, EXACT),
        ("bf16", 0.6, FAR),
        ("fp16", 1.0, None),
        ("tf32", 1.5, failed_reference),
    )
    report = build_report(runs)
    verdict = run_verdict(report)
    assert (verdict.accuracy_failed, verdict.accuracy_not_measured) == (1, 2)
    assert verdict.accuracy_before == 1
    opening, failed, unknown = verdict_lines(verdict)[:3]
    assert opening.startswith(
        "Verdict: 4 of 4 variants usable; 1 outside its accuracy gate; "
        "accuracy not measured for 2; "
    )
    assert failed.startswith(
        "1 variant outside its accuracy gate: it computes something else, so never the best "
        "configuration, however fast; the tables' accuracy columns show by how much"
    )
    assert unknown == (
        "Accuracy not measured for 2 variants (1 from a runner before accuracy: run again to "
        "judge them; 1 whose comparison failed: the Variants table says why): never taken for "
        "passing, ranked after every variant known to be within its gate."
    )
    assert "not measured (the fp32 reference ran out of memory)" in to_text(report)
    document = json.loads(to_json(report))
    assert (document["verdict"]["accuracy_failed"], document["verdict"]["accuracy_before"]) == (
        1,
        1,
    )


CONSTANT_REFERENCE = Accuracy(
    seed=0,
    cosine=1.0,
    max_abs_error=0.0,
    max_rel_error=0.0,
    top1_agreement=1.0,
    error=f"{NOT_MEANINGFUL}the fp32 reference's outputs are constant (output 0 [1, 1000] all 0)",
)
"""What the runner records of a ViT whose head torchvision initialised to zeros: numbers that
would pass any gate, and why they mean nothing."""


def test_a_comparison_with_a_constant_reference_is_not_meaningful_and_never_passing(
    make_run: MakeRun,
) -> None:
    """Every ViT variant, int8 included, passed with cosine 1 and error 0, and nothing warned."""
    runs = _precisions(
        make_run, ("fp32", 2.0, CONSTANT_REFERENCE), ("bf16", 0.6, CONSTANT_REFERENCE)
    )
    report = build_report(runs)
    assert [row.accuracy.state for row in report.variants] == ["not measured"] * 2
    verdict = run_verdict(report)
    assert (verdict.accuracy_not_measured, verdict.accuracy_not_meaningful) == (2, 2)
    assert verdict_lines(verdict)[1] == (
        "Accuracy not measured for 2 variants (2 not meaningful: the reference's outputs are "
        "constant, so any variant returning the same agrees with it; the Variants table says "
        "which): never taken for passing, ranked after every variant known to be within its "
        "gate."
    )
    text = to_text(report)
    assert (
        "not meaningful (the fp32 reference's outputs are constant (output 0 [1, 1000] all 0))"
    ) in text
    assert "passed (" not in text
    assert "bf16: accuracy not meaningful; it is best by speed among those not known" in text
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert [(row["accuracy"], row["cosine"]) for row in rows] == [("not measured", "")] * 2
    document = json.loads(to_json(report))
    assert document["verdict"]["accuracy_not_meaningful"] == 2


def test_an_axis_shows_each_ratio_beside_what_it_costs_in_accuracy(make_run: MakeRun) -> None:
    runs = _precisions(make_run, ("fp32", 2.0, EXACT), ("fp16", 1.2, CLOSE), ("bf16", 0.6, FAR))
    (axis,) = lay_out(analyse(build_report(runs))).tables[:1]
    headings = [column.heading for column in axis.columns]
    rows = {
        row[headings.index("precision")]: dict(zip(headings, row, strict=True)) for row in axis.rows
    }
    assert rows["fp16"]["max rel error"] == "0.004 (fp32: 1e-07)"
    assert rows["fp16"]["1 - cosine"] == "1e-05 (fp32: 0)"
    assert (rows["fp16"]["accuracy"], rows["fp16"]["verdict"]) == (
        "passed",
        "1.67x faster than fp32",
    )
    assert rows["bf16"]["max rel error"] == "0.3 (fp32: 1e-07)"
    assert rows["bf16"]["accuracy"] == "accuracy_failed"
    assert rows["bf16"]["verdict"] == "3.33x faster than fp32; accuracy_failed: outside its gate"


def test_no_table_calls_a_variant_outside_its_gate_faster_without_saying_so(
    make_run: MakeRun,
) -> None:
    """bf16 of tiny-cnn is faster than everything it is compared with, and outside its gate:
    every axis, by-target, best, ranking and baseline row that says "faster" or "fastest" of
    it says accuracy_failed too."""
    runs = [
        make_run(precision="fp32", p50_ms=2.0),
        make_run(precision="bf16", p50_ms=1.0, accuracy=FAR),
        make_run(target="t4", precision="fp32", p50_ms=3.0),
        make_run(target="t4", precision="bf16", p50_ms=1.5, accuracy=FAR),
        make_run(model="other", precision="fp32", p50_ms=4.0),
        make_run(model="other", precision="bf16", p50_ms=5.0, accuracy=CLOSE),
    ]
    last_week = [make_run(precision="bf16", p50_ms=2.0, accuracy=CLOSE, finished_at=LAST_WEEK)]
    report = build_report(runs, baseline=last_week)
    assert report.axes and report.by_target and report.rankings and report.best_configurations
    said = 0
    for table in lay_out(analyse(report)).tables:
        for row in table.rows:
            cells = " ".join(row)
            if re.search(r"\bfaster\b|\bfastest\b", cells) and "bf16" in f"{table.title} {cells}":
                assert "accuracy_failed" in cells, (table.title, row)
                said += 1
    assert said >= 6
    text = to_text(report)
    assert "fastest; accuracy_failed: outside its gate" in text
    assert "accuracy_failed: cosine 0.95 < min_cosine 0.999" in text.split("Improvements")[1]
    assert "; baseline: passed" in text
    assert "1 changed variant outside its accuracy gate now (1 within it in the baseline)" in text


def _sweep_with_accuracy(
    make_run: MakeRun, *rows: tuple[str, str, int, float, Accuracy | None], **settings: Any
) -> list[StoredRun]:
    """tiny-transformer on an A100: (precision, quantization, batch, p50 ms, accuracy)."""
    return [
        make_run(
            model="tiny-transformer",
            precision=precision,
            quantization=quantization,
            batch_size=batch,
            p50_ms=p50,
            accuracy=accuracy,
            index=index,
            **settings,
        )
        for index, (precision, quantization, batch, p50, accuracy) in enumerate(rows)
    ]


INT8 = Accuracy(seed=0, cosine=0.9999, max_rel_error=0.02, top1_agreement=1.0)


def test_the_answer_says_which_is_fastest_within_the_gate_by_how_much_and_how_sure(
    make_run: MakeRun,
) -> None:
    runs = _sweep_with_accuracy(
        make_run,
        ("fp32", "none", 1, 2.0, EXACT),
        ("fp32", "none", 8, 8.0, EXACT),
        ("fp16", "none", 8, 4.0, CLOSE),
        ("fp32", "int8-dynamic", 8, 5.0, INT8),
        ("bf16", "none", 8, 3.0, FAR),
        ("fp32", "int8-dynamic", 1, 1.5, None),
    )
    report = build_report(runs)
    text = to_text(report).splitlines()
    answer = (
        "tiny-transformer on a100 (us-east): fastest within its accuracy gate is fp16 none "
        "batch 8, 0.5000 ms/sample (95% CI 0.4998-0.5002); 1.25x faster than the runner-up, "
        "fp32 int8-dynamic batch 8 (95% CI 1.25x-1.25x), beyond noise; 2.00x faster than the "
        "untouched fp32 none batch 8 (95% CI 2.00x-2.00x), beyond noise. Faster, but outside "
        "their accuracy gate: bf16 none batch 8 (1.33x faster). Accuracy not measured for 1 "
        "other configuration, ranked after."
    )
    verdict = verdict_lines(run_verdict(report))
    assert text[2 : 2 + len(verdict)] == list(verdict)
    assert text[2 + len(verdict)] == answer, "first after the verdict"
    assert answer in to_markdown(report).replace("\\_", "_")
    assert answer in to_html(report)
    (document,) = json.loads(to_json(report))["answers"]
    assert document["sentence"] == answer
    assert (document["best_variant_id"], document["accuracy"]) == (
        "tiny-transformer-fp16-none-b8",
        "passed",
    )
    assert document["runner_up"]["sure"] is True
    assert document["runner_up"]["ratio"]["value"] == pytest.approx(1.25)
    assert document["untouched"]["variant_id"] == "tiny-transformer-fp32-none-b8"
    assert [a["variant_id"] for a in document["faster_outside_gate"]] == [
        "tiny-transformer-bf16-none-b8"
    ]


@pytest.mark.parametrize(
    ("iqr_ms", "count", "flags", "says"),
    [
        (0.01, 100, {}, "1.10x faster than the runner-up, the untouched fp32 (95% CI 1.1"),
        (0.09, 4, {}, "not told apart from the runner-up, the untouched fp32 beyond noise (1.10x"),
        (
            0.01,
            100,
            {"noisy": True},
            "not told apart from the runner-up, the untouched fp32 (1.10x, 95% CI 1.10x-1.10x): "
            "a100 tiny-cnn fp32 none batch 1 eager is noisy",
        ),
    ],
    ids=["sure", "within-noise", "flagged"],
)
def test_the_answer_claims_no_more_than_the_interval_and_the_flags_allow(
    make_run: MakeRun, iqr_ms: float, count: int, flags: dict[str, object], says: str
) -> None:
    runs = [
        make_run(precision="fp16", p50_ms=1.0, iqr_ms=iqr_ms, count=count, accuracy=CLOSE),
        make_run(precision="fp32", p50_ms=1.1, iqr_ms=iqr_ms, count=count, flags=flags),
    ]
    text = to_text(build_report(runs))
    assert "tiny-cnn on a100 (us-east): fastest within its accuracy gate is fp16, " in text
    assert says in text


def test_with_no_configuration_within_its_gate_the_answer_names_none_best(
    make_run: MakeRun,
) -> None:
    runs = _precisions(make_run, ("fp16", 1.2, FAR), ("bf16", 0.6, FAR))
    report = build_report(runs)
    assert (
        "tiny-cnn on a100 (us-east): none of its 2 configurations is within its accuracy gate, "
        "so none is the best; the fastest by speed alone is bf16, 0.6000 ms/sample"
    ) in to_text(report)
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert [row["best"] for row in rows] == ["False", "False"]


def test_the_answer_says_where_the_best_is_the_only_configuration_within_its_gate(
    make_run: MakeRun,
) -> None:
    runs = _precisions(make_run, ("fp32", 2.0, EXACT), ("bf16", 0.6, FAR), ("fp16", 1.0, None))
    assert (
        "fastest within its accuracy gate is fp32, 2.000 ms/sample (95% CI 1.998-2.002); the "
        "only one of its 3 configurations within it. Faster, but outside their accuracy gate: "
        "bf16 (3.33x faster). Accuracy not measured for 1 other configuration, ranked after."
    ) in to_text(build_report(runs))


def test_the_answer_of_results_before_accuracy_says_they_were_not_measured(
    make_run: MakeRun,
) -> None:
    runs = _precisions(make_run, ("fp32", 2.0, None), ("fp16", 1.0, None))
    assert (
        "fastest of those not known to fail their accuracy gate (not measured) is fp16, "
    ) in to_text(build_report(runs))


def test_csv_marks_each_sweeps_best_within_the_gate_and_every_rows_ratio_to_it(
    make_run: MakeRun,
) -> None:
    runs = _precisions(make_run, ("fp32", 2.0, EXACT), ("fp16", 1.0, CLOSE), ("bf16", 0.5, FAR))
    runs.append(make_run(model="alone", p50_ms=1.0))
    rows = {
        (row["model"], row["precision"]): row
        for row in csv.DictReader(io.StringIO(to_csv(build_report(runs))))
    }
    assert rows["tiny-cnn", "fp16"]["best"] == "True"
    assert [rows["tiny-cnn", p]["best"] for p in ("fp32", "bf16")] == ["False", "False"]
    assert float(rows["tiny-cnn", "fp32"]["ratio_to_best"]) == pytest.approx(2.0)
    assert float(rows["tiny-cnn", "bf16"]["ratio_to_best"]) == pytest.approx(0.5)
    low, high = (float(rows["tiny-cnn", "fp32"][f"ratio_to_best_{end}"]) for end in ("low", "high"))
    assert low < 2.0 < high
    assert rows["alone", "fp32"]["best"] == rows["alone", "fp32"]["ratio_to_best"] == ""


def test_the_speed_accuracy_front_holds_only_configurations_within_their_gate(
    make_run: MakeRun,
) -> None:
    runs = _sweep_with_accuracy(
        make_run,
        ("fp32", "none", 1, 2.0, Accuracy(seed=0, cosine=1.0, max_rel_error=0.0)),
        ("fp16", "none", 1, 1.2, CLOSE),
        ("fp16", "none", 2, 2.6, CLOSE),  # slower per sample than batch 1 at the same error
        ("fp32", "int8-dynamic", 1, 0.9, INT8),
        ("fp32", "int8-weight-only", 1, 1.0, Accuracy(seed=0, cosine=0.9995, max_rel_error=0.05)),
        ("bf16", "none", 1, 0.5, FAR),
        ("fp32", "int8-dynamic", 2, 1.0, None),
    )
    (best,) = build_report(runs).best_configurations
    points, undrawn = tradeoff_points(best.comparison)
    assert undrawn == 1
    assert [(point.label, point.state, point.on_front) for point in points] == [
        ("bf16 none batch 1", "accuracy_failed", False),
        ("fp32 int8-dynamic batch 1", "passed", True),
        ("fp32 int8-weight-only batch 1", "passed", False),
        ("fp16 none batch 1", "passed", True),
        ("fp16 none batch 2", "passed", False),
        ("fp32 none batch 1", "passed", True),
    ]
    assert points[-1].error == 0


@pytest.mark.parametrize(
    ("ratio", "shown"),
    [(0.0031, "0.0031x"), (0.0999, "0.0999x"), (0.62, "0.62x"), (3.1, "3.10x"), (42.0, "42.0x")],
)
def test_a_ratio_keeps_its_digits_however_small(ratio: float, shown: str) -> None:
    """A model axis compared tiny-mlp with tiny-cnn as 0.00x."""
    assert format_ratio(ratio) == shown


def test_models_with_different_inputs_are_not_compared_on_the_model_axis(
    make_run: MakeRun,
) -> None:
    image = [DrawnInput(dtype="float32")]
    text = [
        DrawnInput(dtype="int64", low=0, high=30522, bounded_by="embeddings.word.weight"),
        DrawnInput(dtype="int64", low=0, high=2),
    ]
    runs = [
        make_run(model=model, p50_ms=p50, accuracy=EXACT.model_copy(update={"inputs": inputs}))
        for model, p50, inputs in (
            ("resnet50", 5.0, image),
            ("vit", 9.0, image),
            ("bert", 2.0, text),
            ("unsaid", 3.0, None),
        )
    ]
    report = build_report(runs)
    (axis,) = report.axes
    # The image models are compared with each other, never with the text encoder, nor with a
    # model whose result does not say what it was fed.
    assert [(e.row.key.model, e.reference.key.model) for e in axis.entries] == [("vit", "resnet50")]
    note = (
        "models with different inputs are not compared: bert (int64 in [0, 30522), int64 "
        "in [0, 2)) vs resnet50/vit (float32)"
    )
    assert axis.not_compared == (note,)
    assert note in to_text(report)
    assert json.loads(to_json(report))["axes"][0]["not_compared"] == [note]
    # Nor ranked together: each ranking holds models fed alike.
    ranked = [sorted(e.row.key.model for e in ranking.entries) for ranking in report.rankings]
    assert ranked == [["resnet50", "vit"]]


def test_models_alike_in_their_inputs_are_compared_whatever_their_embedding_is_called(
    make_run: MakeRun,
) -> None:
    runs = [
        make_run(
            model=model,
            p50_ms=p50,
            accuracy=EXACT.model_copy(
                update={"inputs": [DrawnInput(dtype="int64", low=0, high=9, bounded_by=table)]}
            ),
        )
        for model, p50, table in (("bert", 2.0, "bert.emb"), ("distilbert", 1.0, "distil.emb"))
    ]
    (axis,) = build_report(runs).axes
    assert [(e.row.key.model, e.reference.key.model) for e in axis.entries] == [
        ("distilbert", "bert")
    ]
    assert axis.not_compared == ()
