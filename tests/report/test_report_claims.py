"""Issue 32's report defects on a 2-core CPU sweep: every cell says only what was measured and
what the spec asked (one-iteration intervals, advice, the speed-accuracy plot, memory within a
pod, unrelated models, placeholder images)."""

import csv
import io
import json

from contract.samples import encode
from report.csv import to_csv
from report.html import to_html
from report.json import to_json
from report.markdown import to_markdown
from report.model import build_report
from report.text import to_text
from store.database import StoredRun
from tests.report.test_report import MakeRun, make_run  # noqa: F401  (the fixture)


def _once(make_run: MakeRun, precision: str, ms: float) -> StoredRun:  # noqa: F811
    """A variant timed for one iteration: its median has no interval at all."""
    return make_run(model="bert", precision=precision, p50_ms=ms, samples=encode([round(ms * 1e6)]))


def test_a_one_iteration_ratio_prints_no_interval_in_every_format(
    make_run: MakeRun,  # noqa: F811
) -> None:
    report = build_report([_once(make_run, "fp32", 2.0), _once(make_run, "fp16", 1.0)])
    entry = report.axes[0].entries[0]
    assert not entry.ratio.bounded and entry.direction == "inconclusive"
    for text in (to_text(report), to_markdown(report), to_html(report)):
        assert "infx" not in text and "0.00x" not in text
        assert "no interval" in text
    text = to_json(report)
    assert "Infinity" not in text
    document = json.loads(text)
    ratio = document["axes"][0]["entries"][0]["ratio"]
    assert ratio["low"] is None and ratio["high"] is None and ratio["value"] == 0.5
    rows = list(csv.DictReader(io.StringIO(to_csv(report))))
    assert {row["ratio_to_best_low"] for row in rows} == {""}
    assert {row["ratio_to_best_high"] for row in rows} == {""}
