"""Reports: comparisons, significance from CI overlap, baselines, and renderers that escape
user text and give the same bytes for the same runs."""

import csv
import io
import json
import math
import random
from pathlib import Path
from typing import Protocol

import pytest

from collector.report import REPORT_SCHEMA_VERSION, Report, build_report, median_interval
from collector.report_html import write_html
from collector.report_render import CSV_COLUMNS, to_csv, to_json, to_markdown, to_text
from collector.store import StoredRun
from contract.records import JobIdentity, StoredVariant
from contract.result import (
    BenchResult,
    Environment,
    ErrorInfo,
    ErrorResult,
    LatencyStats,
    OkResult,
    Validity,
)
from contract.variant import VariantRef
from runner.stats import reliable_percentiles

DEVICES = {"a100": "NVIDIA A100-SXM4-80GB", "v100": "Tesla V100-SXM2-16GB", "t4": "Tesla T4"}
LAST_WEEK = "2026-11-26T06:00:00Z"
TODAY = "2026-12-03T06:00:00Z"


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
        p50_ms: float = 1.0,
        iqr_ms: float = 0.01,
        count: int = 100,
        finished_at: str = TODAY,
        failure: str | None = None,
        index: int = 0,
    ) -> StoredRun: ...


def _latency(p50_ms: float, iqr_ms: float, count: int) -> LatencyStats:
    std = iqr_ms / 1.35
    return LatencyStats(
        count=count,
        mean_ms=p50_ms,
        std_ms=std,
        cv=std / p50_ms,
        min_ms=p50_ms - iqr_ms,
        p25_ms=p50_ms - iqr_ms / 2,
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
    """A stored run of one variant: measured, or failed when `failure` explains why."""

    def make(
        *,
        model: str = "tiny-cnn",
        target: str = "a100",
        cluster: str = "us-east",
        precision: str = "fp32",
        quantization: str = "none",
        batch_size: int = 1,
        p50_ms: float = 1.0,
        iqr_ms: float = 0.01,
        count: int = 100,
        finished_at: str = TODAY,
        failure: str | None = None,
        index: int = 0,
    ) -> StoredRun:
        ref = VariantRef(
            index=index,
            id=f"{model}-{precision}-{quantization}-b{batch_size}",
            model=model,
            precision=precision,
            quantization=quantization,
            batch_size=batch_size,
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
                ),
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
        return StoredRun(job=job, variant=variant, collected_at=finished_at)

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


def test_median_interval_is_the_box_plot_notch(make_run: MakeRun) -> None:
    latency = _latency(p50_ms=2.0, iqr_ms=0.4, count=400)
    half_width = 1.57 * 0.4 / math.sqrt(400)
    assert median_interval(latency) == pytest.approx((2.0 - half_width, 2.0 + half_width))


def test_the_median_interval_stops_at_zero() -> None:
    assert median_interval(_latency(p50_ms=0.1, iqr_ms=1.0, count=4))[0] == 0.0


def test_targets_are_compared_by_their_ratio_to_the_fastest(
    gpu_comparison: list[StoredRun],
) -> None:
    (comparison,) = build_report(gpu_comparison).by_target
    assert comparison.varies == ("target",)
    assert [(e.row.key.target, e.ratio) for e in comparison.entries] == [
        ("a100", 1.0),
        ("v100", pytest.approx(1.9)),
        ("t4", pytest.approx(3.1)),
    ]
    assert [e.is_significant for e in comparison.entries] == [False, True, True]


def test_text_says_how_many_times_slower_each_target_is(gpu_comparison: list[StoredRun]) -> None:
    text = to_text(build_report(gpu_comparison))
    assert "3.10x a100" in text
    assert "1.90x a100" in text
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
    assert best.highest_throughput is first.row
    assert best.comparison.varies == ("precision", "batch_size")


@pytest.mark.parametrize(
    ("iqr_ms", "is_significant", "says"),
    [
        (0.01, True, "is significantly faster"),
        (20.0, False, "is not significantly faster"),
    ],
)
def test_the_best_is_significant_only_when_its_ci_and_the_runner_ups_are_disjoint(
    make_run: MakeRun, iqr_ms: float, is_significant: bool, says: str
) -> None:
    runs = [
        make_run(precision=precision, p50_ms=p50, iqr_ms=iqr_ms)
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
    assert change.ratio == pytest.approx(p50_ms)
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
def test_the_latest_finished_run_of_a_variant_wins(make_run: MakeRun, reverse: bool) -> None:
    runs = [make_run(p50_ms=1.0, finished_at=LAST_WEEK), make_run(p50_ms=2.0)]
    report = build_report(runs[::-1] if reverse else runs)
    assert [row.latency.p50_ms for row in report.variants] == [2.0]
    assert report.superseded == 1
    assert "the latest finished run of a variant wins" in to_text(report)


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
    assert document["by_target"][0]["entries"][2]["row"]["key"]["target"] == "t4"
    assert document["variants"][0]["latency"]["p50_ms"] == 1.0


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
    """A GPU comparison of a model whose name is HTML, next to a sweep with mathtext in it."""
    name = "<script>alert(1)</script>"
    runs = [make_run(model=name, target=t, p50_ms=p) for t, p in [("a100", 1.0), ("t4", 3.0)]]
    return build_report([*runs, *sweep, make_run(model="cost $5 $", target="t4")])


@pytest.fixture(scope="module")
def html_pages(hostile: Report, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same report written twice, into two folders."""
    return (
        write_html(hostile, tmp_path_factory.mktemp("first")),
        write_html(hostile, tmp_path_factory.mktemp("second")),
    )


def test_html_escapes_names_and_shows_pngs_that_exist(html_pages: tuple[Path, Path]) -> None:
    page = html_pages[0]
    text = page.read_text(encoding="utf-8")
    assert "<script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    images = [part.split('"', 1)[0] for part in text.split('<img src="')[1:]]
    assert images == ["latency-01.png", "targets-01.png"]
    for image in images:
        assert (page.parent / image).read_bytes().startswith(b"\x89PNG")


def test_html_pages_and_pngs_are_byte_identical_for_the_same_report(
    html_pages: tuple[Path, Path],
) -> None:
    first, second = (sorted(page.parent.iterdir()) for page in html_pages)
    assert [path.name for path in first] == [path.name for path in second]
    for one, other in zip(first, second, strict=True):
        assert one.read_bytes() == other.read_bytes(), one.name
