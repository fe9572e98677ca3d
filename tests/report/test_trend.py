"""History and regressions (`collector report --trend`): each variant's p50 over the runs, the
history's own noise as its reference, a change called only beyond it, with the run where it
began and what changed there (docs/report.md, "Trends")."""

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from benchfleet.collector import cli
from contract.options import DEFAULT_DATABASE
from contract.proportions import wilson_interval
from contract.records import JobIdentity, JobRecord, StoredVariant, write_record
from contract.result import Environment, OkResult, Scenario, Validity
from report.model import Notes
from report.trend import Rule, Trend, build_trend
from report.trend_html import trend_html
from report.trend_render import trend_json, trend_markdown, trend_text
from store.database import StoredRun, open_store
from tests.collector.stored import JOB, latency, succeeded

QUIET = [10.0, 10.1, 9.9, 10.0, 10.05, 9.95]
"""Six runs within 2 %: below the floor of 5 %, which rules."""
NOISY = [10.0, 11.0, 9.0, 10.5, 9.5, 10.0]
"""Six runs spreading 22 % (11 / 9): the threshold is the spread."""


def _environment(torch: str) -> Environment:
    return Environment(
        python="3.11.9",
        torch=torch,
        device="cpu",
        device_name="Intel Xeon",
        cpu_model="Intel Xeon",
        threads=4,
        hostname="node-a",
    )


def _validity(noisy: bool) -> Validity:
    return Validity(noisy=noisy, noise=0.2 if noisy else 0.01, reliable_percentiles=[],
                    output_finite=True)  # fmt: skip


def scheduled(
    run: int,
    p50_ms: float,
    *,
    repeat: int | None = None,
    image: str | None = None,
    torch: str = "2.13.0",
    spec: str = "a",
    noisy: bool = False,
) -> StoredRun:
    """Scheduled run `run` of cpu-smoke's tiny-mlp at `p50_ms`, each run a Job of its own."""
    job = JobIdentity(
        **{
            **JOB.model_dump(),
            "job": f"cpu-smoke-cpu-{run:04d}{repeat or 0}",
            "scheduled_run": run,
            "scheduled_at": f"2026-12-{run:02d}T00:00:00Z",
            "repeat": repeat,
            "spec_sha256": spec * 64,
            "image": image or JOB.image,
        }
    )
    base = succeeded(0)
    assert isinstance(base.result, OkResult)
    result = base.result.model_copy(
        update={
            "latency": latency(p50_ms),
            "environment": _environment(torch),
            "validity": _validity(noisy),
            "variant": base.result.variant.model_copy(update={"id": f"v{run}"}),  # type: ignore[union-attr]
        }
    )
    variant = StoredVariant(**{**base.model_dump(), "result": result.model_dump()})
    return StoredRun(job, variant, f"2026-12-{run:02d}T03:00:00+00:00")


def series(p50s: list[float], **changes: object) -> list[StoredRun]:
    return [scheduled(run, p50, **changes) for run, p50 in enumerate(p50s, start=1)]  # type: ignore[arg-type]


def trend_of(runs: list[StoredRun], rule: Rule | None = None) -> Trend:
    return build_trend("cpu-smoke", runs, Notes(), rule)


def test_each_scheduled_run_is_a_point_in_run_order_with_the_band_of_the_runs_before() -> None:
    trend = trend_of(list(reversed(series(QUIET[:3]))))
    assert [run.label for run in trend.runs] == [
        "run 1 (2026-12-01)",
        "run 2 (2026-12-02)",
        "run 3 (2026-12-03)",
    ]
    (variant,) = trend.variants
    assert [point.run.p50_ms for point in variant.points] == QUIET[:3]
    first, second, third = variant.points
    assert first.reference is None and second.reference is None, "no spread from one run"
    assert third.reference is not None
    assert (third.reference.low_ms, third.reference.high_ms) == (10.0, 10.1)
    assert [point.verdict for point in variant.points] == ["not enough history"] * 3


@pytest.mark.parametrize(
    ("history", "latest", "verdict"),
    [
        (QUIET, 10.49, "within noise"),
        (QUIET, 10.6, "regression"),
        (QUIET, 9.4, "improvement"),
        (NOISY, 12.0, "within noise"),
        (NOISY, 12.3, "regression"),
        (NOISY, 8.3, "within noise"),
        (NOISY, 8.0, "improvement"),
    ],
    ids=[
        "quiet, 4.9% slower: within the floor",
        "quiet, 6% slower: beyond the floor",
        "quiet, 6% faster",
        "noisy, 20% slower: within its 22% spread",
        "noisy, 23% slower: beyond its spread",
        "noisy, 17% faster: within",
        "noisy, 25% faster: beyond",
    ],
)
def test_a_change_is_called_only_beyond_the_noise_the_history_shows(
    history: list[float], latest: float, verdict: str
) -> None:
    (variant,) = trend_of(series([*history, latest])).variants
    assert variant.verdict == verdict
    assert (variant.change is not None) == (verdict in ("regression", "improvement"))


def test_a_regression_names_the_run_it_began_at_and_what_changed_there() -> None:
    """Runs 7 and 8 are slow since a new image and torch: the change began at run 7, and
    lasting does not absorb it into its own reference."""
    runs = [
        *series(QUIET),
        scheduled(7, 12.0, image="runner@sha256:new", torch="2.14.0"),
        scheduled(8, 12.1, image="runner@sha256:new", torch="2.14.0"),
    ]
    (variant,) = trend_of(runs).variants
    assert variant.verdict == "regression"
    change = variant.change
    assert change is not None
    assert (change.first.run.label, change.before.run.label) == (
        "run 7 (2026-12-07)",
        "run 6 (2026-12-06)",
    )
    assert change.ratio == pytest.approx(12.05 / 10.0)
    assert change.differences == (
        f"image {JOB.image} -> runner@sha256:new",
        "torch 2.13.0 -> 2.14.0",
    )


def test_a_change_older_than_the_window_is_the_new_normal() -> None:
    slow = [12.0, 12.1, 11.9, 12.0]
    (variant,) = trend_of(series([*QUIET, *slow]), Rule(window=4, min_history=4)).variants
    assert variant.change is not None and variant.change.first.run.scheduled_run == 7
    (variant,) = trend_of(series([*QUIET, *slow, 12.05]), Rule(window=4, min_history=4)).variants
    assert (variant.verdict, variant.change) == ("within noise", None)


def test_an_improvement_that_stands_is_named_too() -> None:
    (variant,) = trend_of(series([*QUIET, 8.0, 8.1])).variants
    assert variant.verdict == "improvement"
    assert variant.change is not None and variant.change.ratio == pytest.approx(0.805)


def test_a_spec_change_is_named_by_its_sha256() -> None:
    runs = [*series(QUIET), scheduled(7, 12.0, spec="c")]
    change = trend_of(runs).variants[0].change
    assert change is not None
    assert change.differences == (f"spec sha256 {'a' * 12} -> sha256 {'c' * 12}",)


def test_a_single_slow_run_that_recovered_is_no_standing_change() -> None:
    (variant,) = trend_of(series([*QUIET, 13.0, 10.0])).variants
    assert [point.verdict for point in variant.points][-2:] == ["regression", "within noise"]
    assert variant.verdict == "within noise"
    assert variant.change is None


def test_a_flagged_run_decides_nothing_and_joins_no_reference() -> None:
    runs = [*series(QUIET), scheduled(7, 30.0, noisy=True), scheduled(8, 10.0)]
    (variant,) = trend_of(runs).variants
    flagged, latest = variant.points[-2:]
    assert flagged.verdict == "flagged"
    assert latest.verdict == "within noise"
    assert latest.reference is not None and latest.reference.high_ms == 10.1


def test_repeats_of_a_run_are_one_point_their_median() -> None:
    runs = [scheduled(1, p50, repeat=repeat) for repeat, p50 in enumerate([10.0, 12.0, 11.0])]
    (variant,) = trend_of(runs).variants
    (point,) = variant.points
    assert point.run.p50_ms == 11.0
    assert point.run.repeats == (10.0, 12.0, 11.0)


def test_fewer_runs_than_the_history_asks_for_decide_nothing() -> None:
    (variant,) = trend_of(series([10.0, 10.0, 30.0]), Rule(min_history=3)).variants
    assert variant.verdict == "not enough history"
    (variant,) = trend_of(series([10.0, 10.0, 10.0, 30.0]), Rule(min_history=3)).variants
    assert variant.verdict == "regression"


def test_every_format_names_the_regression_and_its_first_run() -> None:
    runs = [*series(QUIET), scheduled(7, 12.0, torch="2.14.0"), scheduled(8, 12.1, torch="2.14.0")]
    trend = trend_of(runs)
    text = trend_text(trend)
    assert "!! 1 VARIANT REGRESSED BEYOND THE NOISE OF THE RUNS BEFORE" in text
    assert "run 7 (2026-12-07)" in text and "torch 2.13.0 -> 2.14.0" in text
    assert "+20.5%" in text
    markdown = trend_markdown(trend)
    assert "### 🔴 Regressions beyond the history's noise" in markdown
    document = json.loads(trend_json(trend))
    (variant,) = document["variants"]
    assert variant["verdict"] == "regression"
    assert variant["change"]["first_scheduled_run"] == 7
    assert [point["p50_ms"] for point in variant["points"]] == [*QUIET, 12.0, 12.1]
    assert document["counts"]["regression"] == 1
    page = trend_html(trend)
    assert page.count("data:image/png;base64,") == 1
    assert "run 7 (2026-12-07)" in page


def test_the_same_trend_gives_the_same_page() -> None:
    runs = series([*QUIET, 12.0])
    assert trend_html(trend_of(runs)) == trend_html(trend_of(list(reversed(runs))))


def test_unscheduled_revisions_come_before_scheduled_runs() -> None:
    earlier = StoredRun(JOB, succeeded(0, 9.0), "2026-11-30T00:00:00+00:00")
    trend = trend_of([*series(QUIET[:2]), earlier])
    assert [run.label for run in trend.runs] == [
        "revision aaaaaaaa",
        "run 1 (2026-12-01)",
        "run 2 (2026-12-02)",
    ]


def _recorded(root: Path, runs: list[StoredRun]) -> None:
    """Each run as the record gather writes of its Job."""
    for run in runs:
        identity = run.job.model_dump(include=set(JobIdentity.model_fields))
        write_record(root, JobRecord(**identity, outcome="complete", variants=(run.variant,)))


def _report(root: Path, *arguments: str) -> Result:
    command = ["--root", str(root), "report", "--workflow", "cpu-smoke", "--trend", *arguments]
    return CliRunner().invoke(cli, command)


def test_report_trend_reads_the_records_and_the_store_alike(tmp_path: Path) -> None:
    """The history in git (records) and the runs gathered since (the database) are one."""
    runs = [*series(QUIET), scheduled(7, 12.0, torch="2.14.0")]
    _recorded(tmp_path, runs[:-1])
    with open_store(tmp_path / DEFAULT_DATABASE) as store:
        store.add(runs[-1].job, [runs[-1].variant])
    shown = _report(tmp_path)
    assert shown.exit_code == 0, shown.output
    assert "7 runs (run 1 (2026-12-01) to run 7 (2026-12-07)), 1 variant: regression 1" in (
        shown.output
    )
    document = json.loads(_report(tmp_path, "--format", "json").output)
    assert [p["verdict"] for p in document["variants"][0]["points"]][-1] == "regression"
    page = tmp_path / "trend.html"
    assert _report(tmp_path, "--format", "html", "--output", str(page)).exit_code == 0
    assert "data:image/png;base64," in page.read_text()


@pytest.mark.parametrize(
    "arguments",
    [("--all-revisions",), ("--job", "x"), ("--baseline", "main"), ("--format", "csv")],
    ids=["all revisions", "a job", "a baseline", "csv"],
)
def test_report_trend_refuses_what_picks_runs_or_cannot_show_it(
    tmp_path: Path, arguments: tuple[str, ...]
) -> None:
    _recorded(tmp_path, series(QUIET[:2]))
    refused = _report(tmp_path, *arguments)
    assert refused.exit_code == 2
    assert "--trend shows every run" in refused.output


def _fixed_rate(run: StoredRun, misses: int) -> StoredRun:
    """`run` as a 100 Hz fixed-rate run of 10,000 queries with `misses` late ones."""
    result = run.variant.result
    assert isinstance(result, OkResult)
    low, high = wilson_interval(misses, 10_000)
    scenario = Scenario(
        kind="fixed_rate",
        rate_hz=100.0,
        deadline_ms=20.0,
        queries=10_000,
        misses=misses,
        miss_rate=misses / 10_000,
        miss_rate_low=low,
        miss_rate_high=high,
        longest_miss_run=min(misses, 1),
        jitter_ms=0.1,
        issue_error_p99_ms=0.01,
        issue_error_max_ms=0.02,
    )
    assert result.validity is not None
    tailed = result.model_copy(
        update={
            "scenario": scenario,
            "latency": result.latency.model_copy(update={"count": 10_000, "p99_9_ms": 15.0}),
            "validity": result.validity.model_copy(
                update={"reliable_percentiles": ["p50", "p90", "p95", "p99", "p99.9"]}
            ),
        }
    )
    return dataclasses.replace(run, variant=run.variant.model_copy(update={"result": tailed}))


@pytest.mark.parametrize(
    ("misses", "since"),
    [
        # Held five nights, then 2 % late twice, at the same p50: it started missing.
        ([0, 0, 0, 1, 0, 200, 200], "run 6"),
        # Still holding: nothing to say.
        ([0, 0, 0, 0, 0, 0, 0], None),
        # Never held: it did not start missing, it never met its deadline.
        ([200, 200, 200, 200], None),
        # Missed once, then held again: over.
        ([0, 0, 200, 0], None),
    ],
)
def test_a_fixed_rate_variant_that_stops_holding_started_missing_its_deadline(
    misses: list[int], since: str | None
) -> None:
    p50s = [10.0] * len(misses)
    runs = [_fixed_rate(run, late) for run, late in zip(series(p50s), misses, strict=True)]
    trend = trend_of(runs)
    (variant,) = trend.variants
    assert variant.verdict != "regression", "the p50 never moved"
    if since is None:
        assert variant.deadline is None and trend.missing_deadlines == ()
        assert "deadline" not in trend_text(trend)
        return
    assert variant.deadline is not None
    assert variant.deadline.first.run.label.startswith(since)
    assert variant.deadline.before.run.label.startswith("run 5")
    text = trend_text(trend)
    assert "!! 1 VARIANT STARTED MISSING ITS DEADLINE" in text
    assert "!! Started missing its deadline" in text
    document = json.loads(trend_json(trend))
    (entry,) = document["variants"]
    assert entry["deadline_change"]["first_run"].startswith(since)
    assert [point["held"] for point in entry["points"]][-2:] == ["not held", "not held"]
