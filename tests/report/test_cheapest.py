"""The cheapest target and configuration that holds the rate within its accuracy gate, at
the fleet's prices: a two-target sweep, answered both ways, in every format."""

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchfleet.collector import cli
from contract.allocation import Allocation
from contract.options import DEFAULT_DATABASE
from contract.pricing import PriceList, Pricing
from contract.samples import encode
from report.analysis import analyse
from report.cheapest import CheapestHolder
from report.control import worst_run
from report.html import to_html
from report.json import to_json
from report.markdown import to_markdown
from report.model import Report, build_report
from report.text import to_text
from store.database import StoredRun, open_store
from tests.collector.stored import JOB, NOW
from tests.report.test_control import fixed_rate
from tests.report.test_cost import FLEET_PRICES, allocation, fleet_with
from tests.report.test_report import FAR, MakeRun, make_run  # noqa: F401 - fixtures

PRICES = PriceList(
    currency="USD",
    per_hour={"us-east": {"cpu": {"on-demand": 0.04}, "nvidia-t4": {"on-demand": 0.36}}},
)
CPU = allocation(600, devices=4, device_type="cpu")
"""4 CPUs at 0.04 an hour: 0.16 an hour."""
T4 = allocation(600, device_type="nvidia-t4")
"""1 T4 at 0.36 an hour."""


def on(run: StoredRun, held: Allocation | None) -> StoredRun:
    return dataclasses.replace(run, variant=run.variant.model_copy(update={"allocation": held}))


def holder_of(
    runs: list[StoredRun], prices: PriceList | None = PRICES
) -> tuple[Report, CheapestHolder]:
    report = build_report(runs, prices=Pricing(prices))
    (holder,) = analyse(report).cheapest
    return report, holder


def test_the_cheaper_target_wins_where_it_holds_the_rate(
    make_run: MakeRun,  # noqa: F811 - the fixture
) -> None:
    report, holder = holder_of(
        [
            on(fixed_rate(make_run, misses=0), CPU),
            on(fixed_rate(make_run, misses=0, target="t4"), T4),
        ]
    )
    assert holder.cheapest is not None and holder.cheapest.configuration == "us-east/cpu"
    assert holder.cheapest.cost_per_hour == pytest.approx(0.16)
    assert holder.runner_up is not None and holder.runner_up.configuration == "us-east/t4"
    assert holder.times_cheaper == pytest.approx(0.36 / 0.16)
    assert holder.saving_per_hour == pytest.approx(0.20)
    assert holder.left_out == ()
    line = next(line for line in to_text(report).splitlines() if "cheapest that holds" in line)
    assert "policy at 100 Hz (deadline 10 ms)" in line
    assert "is us-east/cpu, 0.16 USD an hour, 2.25x cheaper than the next, us-east/t4" in line


def test_the_pricier_target_wins_where_the_cheaper_does_not_hold(
    make_run: MakeRun,  # noqa: F811 - the fixture
) -> None:
    report, holder = holder_of(
        [
            on(fixed_rate(make_run, misses=400, p99_9_ms=31.0), CPU),
            on(fixed_rate(make_run, misses=0, target="t4"), T4),
        ]
    )
    assert holder.cheapest is not None and holder.cheapest.configuration == "us-east/t4"
    assert holder.runner_up is None
    (cpu,) = holder.left_out
    assert cpu.configuration == "us-east/cpu" and cpu.why.startswith("not held: missed")
    text = to_text(report)
    assert "is us-east/t4, 0.36 USD an hour, the only one within its gate that held." in text
    assert "Could not win: us-east/cpu (not held: missed" in text
    assert "Control loops: the cheapest that holds the rate" in to_markdown(report)
    document = json.loads(to_json(report))
    (answer,) = document["cheapest_holders"]
    assert document["variants"][answer["cheapest"]["row"]]["key"]["target"] == "t4"
    assert answer["left_out"][0]["held"] == "not held"
    assert answer["cheapest"]["cost_per_hour"] == pytest.approx(0.36)
    assert "Control loops: the cheapest that holds the rate" in to_html(report)


@pytest.mark.parametrize(
    ("cpu_run", "why"),
    [
        # Held, but computes something else: outside the gate, never the cheapest.
        ({"precision": "bf16", "accuracy": FAR}, "held, but outside its accuracy gate"),
        # The machine disturbed it: undecided, not judged.
        ({"flags": {"contended": True}}, "undecided: contended"),
    ],
)
def test_a_cheaper_variant_that_cannot_win_is_named_and_left_out(
    make_run: MakeRun,  # noqa: F811 - the fixture
    cpu_run: dict[str, object],
    why: str,
) -> None:
    _, holder = holder_of(
        [
            on(fixed_rate(make_run, misses=0, **cpu_run), CPU),  # type: ignore[arg-type]
            on(fixed_rate(make_run, misses=0, target="t4"), T4),
        ]
    )
    assert holder.cheapest is not None and holder.cheapest.row.key.target == "t4"
    (cpu,) = holder.left_out
    assert cpu.row.key.target == "cpu" and cpu.why.startswith(why)


def test_a_cheaper_holder_whose_accuracy_is_not_measured_ranks_after_and_is_named(
    make_run: MakeRun,  # noqa: F811 - the fixture
) -> None:
    report, holder = holder_of(
        [
            on(fixed_rate(make_run, misses=0, accuracy=None), CPU),
            on(fixed_rate(make_run, misses=0, target="t4"), T4),
        ]
    )
    assert holder.cheapest is not None and holder.cheapest.row.key.target == "t4"
    assert holder.accuracy == "passed" and holder.runner_up is None
    assert [c.row.key.target for c in holder.ranked] == ["t4", "cpu"]
    assert "Cheaper, but accuracy not measured (ranked after): us-east/cpu." in to_text(report)
    # Where none held within its gate, the cheapest not known to fail it wins, and says so.
    _, alone = holder_of([on(fixed_rate(make_run, misses=0, accuracy=None), CPU)])
    assert alone.cheapest is not None and alone.accuracy == "not measured"


def test_a_holder_without_a_price_is_not_judged_and_no_prices_give_no_answer(
    make_run: MakeRun,  # noqa: F811 - the fixture
) -> None:
    runs = [
        on(fixed_rate(make_run, misses=0), None),
        on(fixed_rate(make_run, misses=0, target="t4"), T4),
    ]
    _, holder = holder_of(runs)
    assert holder.cheapest is not None and holder.cheapest.row.key.target == "t4"
    assert holder.left_out[0].why.startswith("held, but not priced: not recorded")
    assert analyse(build_report(runs)).cheapest == ()


def test_the_page_draws_the_worst_run_over_time_and_p99_9_against_cost(
    make_run: MakeRun,  # noqa: F811 - the fixture
) -> None:
    # 10,000 queries at 4 ms; the cpu run's 400 late ones in a burst at the end.
    calm = encode([4_000_000] * 10_000)
    late = encode([4_000_000] * 9_600 + [31_000_000] * 400)
    report, holder = holder_of(
        [
            on(fixed_rate(make_run, misses=400, p99_9_ms=31.0, samples=late), CPU),
            on(fixed_rate(make_run, misses=0, target="t4", samples=calm), T4),
        ]
    )
    assert holder.cheapest is not None and holder.cheapest.row.key.target == "t4"
    worst = worst_run(analyse(report).control)
    assert worst is not None and worst.row.key.target == "cpu"
    assert worst.row.timeline is not None and worst.row.timeline.count == 10_000
    page = to_html(report)
    assert "<figcaption>Latency over time, the worst fixed-rate run" in page
    assert "<figcaption>Tail against cost, per model and rate:" in page
    # A closed-loop run has no strip, and without prices no cost plot.
    closed = build_report([make_run(samples=calm)], prices=Pricing(PRICES))
    assert worst_run(analyse(closed).control) is None
    assert "Latency over time" not in to_html(closed)
    unpriced = to_html(build_report([fixed_rate(make_run, misses=0, samples=calm)]))
    assert "Latency over time" in unpriced and "Tail against cost" not in unpriced


def test_the_report_command_answers_from_the_store_at_the_fleet_files_prices(
    make_run: MakeRun,  # noqa: F811 - the fixture
    tmp_path: Path,
) -> None:
    # Cluster alpha: 4 CPUs at 0.04 EUR an hour, an A100 at 3.5: the cpu target misses.
    fleet_with(tmp_path, FLEET_PRICES)
    held = {"cpu": CPU, "a100": allocation(600, device_type="nvidia-a100")}
    missed = {"cpu": 400, "a100": 0}
    with open_store(tmp_path / DEFAULT_DATABASE) as store:
        for target, allocated in held.items():
            run = fixed_rate(make_run, misses=missed[target], p99_9_ms=9.0, target=target)
            job = JOB.model_copy(
                update={"cluster": "alpha", "target": target, "job": f"control-{target}"}
            )
            store.add(job, [run.variant.model_copy(update={"allocation": allocated})], NOW)
    done = CliRunner().invoke(
        cli, ["--root", str(tmp_path), "report", "--workflow", JOB.workflow, "--format", "json"]
    )
    assert done.exit_code == 0, done.stderr
    document = json.loads(done.stdout)
    (answer,) = document["cheapest_holders"]
    assert answer["currency"] == "EUR" and answer["cheapest"]["configuration"] == "alpha/a100"
    assert answer["cheapest"]["cost_per_hour"] == pytest.approx(3.5)
    assert [c["configuration"] for c in answer["left_out"]] == ["alpha/cpu"]
    assert answer["sentence"].startswith(
        "policy at 100 Hz (deadline 10 ms): cheapest that holds it within its accuracy gate "
        "is alpha/a100, 3.5 EUR an hour"
    )
