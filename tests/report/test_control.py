"""The control question, answered first for fixed-rate runs: held, not held or undecided,
with the miss rate's interval, p99.9 and jitter, in every format."""

import csv
import dataclasses
import io
import json
from typing import Any

import pytest

from contract.proportions import wilson_interval
from contract.result import OkResult, Scenario
from contract.samples import encode
from report.analysis import analyse
from report.control import control_answers
from report.csv import to_csv
from report.json import to_json
from report.markdown import to_markdown
from report.model import REPORT_SCHEMA_VERSION, build_report
from report.text import to_text
from store.database import StoredRun
from tests.report.test_report import MakeRun, make_run  # noqa: F401 - fixtures


def fixed_rate(
    runs: MakeRun,
    *,
    misses: int,
    queries: int = 10_000,
    p99_9_ms: float = 9.0,
    flags: dict[str, object] | None = None,
    model: str = "policy",
    **settings: Any,
) -> StoredRun:
    """A 100 Hz run of `queries` with a 10 ms deadline and `misses` late queries; `settings`
    go to make_run (target: cpu unless they say)."""
    settings.setdefault("target", "cpu")
    run = runs(model=model, p50_ms=4.0, count=queries, flags=flags, **settings)
    result = run.variant.result
    assert isinstance(result, OkResult)
    low, high = wilson_interval(misses, queries)
    scenario = Scenario(
        kind="fixed_rate",
        rate_hz=100.0,
        deadline_ms=10.0,
        queries=queries,
        misses=misses,
        miss_rate=misses / queries,
        miss_rate_low=low,
        miss_rate_high=high,
        longest_miss_run=min(misses, 2),
        jitter_ms=0.25,
        issue_error_p99_ms=0.02,
        issue_error_max_ms=0.05,
    )
    latency = result.latency.model_copy(update={"p99_9_ms": p99_9_ms})
    tailed = result.model_copy(update={"scenario": scenario, "latency": latency})
    return dataclasses.replace(run, variant=run.variant.model_copy(update={"result": tailed}))


@pytest.mark.parametrize(
    ("misses", "queries", "p99_9_ms", "flags", "held", "why"),
    [
        (0, 10_000, 9.0, None, "held", "at most 0.04% missed"),
        (3, 10_000, 9.0, None, "held", "at most 0.09% missed"),
        (50, 10_000, 12.0, None, "not held", "over the 0.1% allowed"),
        (5, 10_000, 10.5, None, "not held", "p99.9 is past the deadline"),
        (8, 10_000, 9.9, None, "undecided", "interval reaches"),
        (0, 9_999, 9.0, None, "undecided", "too few queries"),
        (50, 10_000, 12.0, {"contended": True}, "undecided", "the machine, not the model"),
    ],
)
def test_a_fixed_rate_run_is_held_only_when_its_interval_and_p99_9_say_so(
    make_run: MakeRun,  # noqa: F811 - the fixture
    misses: int,
    queries: int,
    p99_9_ms: float,
    flags: dict[str, object] | None,
    held: str,
    why: str,
) -> None:
    run = fixed_rate(make_run, misses=misses, queries=queries, p99_9_ms=p99_9_ms, flags=flags)
    (answer,) = control_answers(build_report([run]))
    assert answer.held == held
    assert why in answer.why


def test_the_answer_comes_first_in_text_markdown_and_json(
    make_run: MakeRun,  # noqa: F811 - the fixture
) -> None:
    runs = [
        fixed_rate(make_run, misses=0, model="policy-small", p99_9_ms=6.5),
        fixed_rate(make_run, misses=400, model="policy-large", p99_9_ms=31.0),
    ]
    report = build_report(runs)
    text = to_text(report)
    lines = text.splitlines()
    assert "policy-large on cpu" in lines[2] and "NOT HELD 100 Hz" in lines[2]
    assert "policy-small on cpu" in lines[3] and ": HELD 100 Hz" in lines[3]
    assert "p99.9 6.500 ms, jitter 0.2500 ms" in lines[3]
    first_table = text.split("\n\n")[1]
    assert first_table.startswith("Control loops: does it hold the rate?")
    assert "Control loops: does it hold the rate?" in to_markdown(report)
    # The variants table shows p99.9 beside p99 for runs long enough for it.
    assert "p99.9 ms" in text.split("Variants (2)")[1].splitlines()[2]
    document = json.loads(to_json(report))
    assert document["schema_version"] == REPORT_SCHEMA_VERSION >= 7
    control = document["control"]
    assert [entry["held"] for entry in control] == ["not held", "held"]
    assert control[1]["miss_rate_interval"] == [0.0, pytest.approx(3.8415 / 10_003.8415, 1e-4)]
    row = document["variants"][control[1]["row"]]
    assert row["scenario"]["jitter_ms"] == 0.25 and row["latency"]["p99_9_ms"] == 6.5
    by_model = {line["model"]: line for line in csv.DictReader(io.StringIO(to_csv(report)))}
    assert by_model["policy-small"]["rate_held"] == "held"
    assert by_model["policy-large"]["rate_held"] == "not held"
    assert by_model["policy-large"]["p99_9_ms"] == "31.0"


def test_p99_9s_interval_comes_from_the_stored_per_query_latencies(
    make_run: MakeRun,  # noqa: F811 - the fixture
) -> None:
    # Query i took i microseconds: p99.9's interval is the 9,983rd to the 9,998th.
    timeline = encode([1_000 * i for i in range(1, 10_001)])
    report = build_report([fixed_rate(make_run, misses=0, p99_9_ms=9.99, samples=timeline)])
    (answer,) = control_answers(report)
    assert answer.p99_9_interval == (9.983, 9.998)
    assert "p99.9 9.990 ms [95% CI 9.983-9.998], jitter" in to_text(report)
    assert json.loads(to_json(report))["control"][0]["p99_9_interval"] == [9.983, 9.998]
    # Without stored latencies, or too few queries for p99.9, no interval is claimed.
    (bare,) = control_answers(build_report([fixed_rate(make_run, misses=0)]))
    assert bare.p99_9_interval is None


def test_a_report_without_fixed_rate_runs_has_no_control_answers(
    make_run: MakeRun,  # noqa: F811 - the fixture
) -> None:
    report = build_report([make_run()])
    assert analyse(report).control == ()
    assert "Control loops" not in to_text(report)
