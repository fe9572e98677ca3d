"""A pipeline's stage split in the report: a table of each stage's median and share of the
chain, and the stages under each variant in the JSON; nothing for a model run alone."""

import dataclasses
import json

from contract.pricing import Pricing
from contract.result import OkResult, StageLatency
from report.analysis import analyse
from report.cheapest_table import cheapest_table
from report.control_table import control_table
from report.json import to_json
from report.model import build_report
from report.text import to_text
from store.database import StoredRun
from tests.report.test_cheapest import CPU, PRICES, T4, on
from tests.report.test_control import fixed_rate
from tests.report.test_report import MakeRun, make_run

__all__ = ["make_run"]  # the fixture, used by name

SPLIT = {
    "preprocess": StageLatency(
        p50_ms=0.5, p90_ms=0.6, p99_ms=0.9, mean_ms=0.5, max_ms=1, share=0.25
    ),
    "model": StageLatency(p50_ms=1.25, p90_ms=1.4, p99_ms=2, mean_ms=1.3, max_ms=3, share=0.65),
    "postprocess": StageLatency(
        p50_ms=0.2, p90_ms=0.3, p99_ms=0.4, mean_ms=0.2, max_ms=1, share=0.1
    ),
}


def _with_stages(run: StoredRun) -> StoredRun:
    result = run.variant.result
    assert isinstance(result, OkResult)
    staged = result.model_copy(update={"stages": SPLIT})
    return dataclasses.replace(run, variant=run.variant.model_copy(update={"result": staged}))


def test_the_stage_split_is_a_table_and_in_the_json(make_run: MakeRun) -> None:
    report = build_report([_with_stages(make_run(model="tiny-policy", p50_ms=2.0))])
    text = to_text(report)
    stages = text.split("Stages\n------\n")[1].split("\n\n")[0].splitlines()
    assert " ".join(stages[0].split()).endswith(
        "preprocess p50 ms preprocess share model p50 ms model share postprocess p50 ms "
        "postprocess share chain p50 ms"
    )
    row = stages[1].split()
    assert row[-7:] == ["0.500", "25%", "1.25", "65%", "0.200", "10%", "2.000"]
    (variant,) = json.loads(to_json(report))["variants"]
    assert variant["stages"]["model"]["p50_ms"] == 1.25
    assert variant["stages"]["preprocess"]["share"] == 0.25


def test_a_model_alone_has_no_stage_table(make_run: MakeRun) -> None:
    report = build_report([make_run()])
    assert "Stages\n" not in to_text(report)
    (variant,) = json.loads(to_json(report))["variants"]
    assert variant["stages"] is None


def test_the_control_tables_carry_the_stage_split_beside_the_answer(make_run: MakeRun) -> None:
    """A policy's answer says where its time goes, in the control table and the cheapest
    table alike; a variant run without stages shows "-", and a report of models run alone
    has no stage columns there."""
    piped = on(_with_stages(fixed_rate(make_run, misses=0)), CPU)
    alone = on(fixed_rate(make_run, misses=0, target="t4"), T4)
    analysis = analyse(build_report([piped, alone], prices=Pricing(PRICES)))
    control = control_table(analysis.control)
    cheapest = cheapest_table(analysis.cheapest)
    assert control is not None and cheapest is not None
    headings = ["preprocess p50 ms", "model p50 ms", "postprocess p50 ms"]
    for table in (control, cheapest):
        named = [column.heading for column in table.columns]
        assert named[-4:] == [*headings, "why"]
        cells = {row[-4:-1] for row in table.rows}
        assert cells == {("0.500", "1.25", "0.200"), ("-", "-", "-")}
        assert any(note.startswith("<stage> p50 ms") for note in table.notes)
    bare = analyse(build_report([alone], prices=Pricing(PRICES)))
    for maybe in (control_table(bare.control), cheapest_table(bare.cheapest)):
        assert maybe is not None
        assert not any("p50 ms" in column.heading for column in maybe.columns)
