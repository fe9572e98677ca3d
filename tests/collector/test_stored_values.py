"""What a runner reports enters the collector held to finite numbers of the right sign
(contract/result.py): a bad required measurement fails its variant where it is named, a bad
optional one is dropped with a note, and nothing stored can fail a reader afterwards (#31)."""

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

from contract.records import read_record
from contract.result import OkResult, compact
from standin import objects
from standin.api import FakeApiServer
from tests.collector.gathering import Collect, Obj, record_of


def _message(job: Obj, index: int, change: dict[str, Any]) -> str:
    """The termination message of `index`'s result with the fields of `change` (dotted paths)
    set as JSON text writes them (Infinity and NaN as Python's json writes them)."""
    data = json.loads(compact(objects.ok_result(job, index)))
    for path, value in change.items():
        *parents, last = path.split(".")
        place = data
        for parent in parents:
            place = place[parent]
        place[last] = value
    return json.dumps(data)


def _finish_with(api: FakeApiServer, job: Obj, changed: dict[int, dict[str, Any]]) -> None:
    for index in range(6):
        pod = objects.succeeded_pod(job, index)
        if index in changed:
            pod = objects.with_termination_message(pod, _message(job, index, changed[index]))
        api.add("pods", pod)
    api.add("jobs", objects.complete(job))


def test_a_bad_required_measurement_fails_its_variant_and_the_rest_reads(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    _finish_with(
        api,
        job,
        {1: {"latency.p50_ms": math.inf}, 2: {"latency.p50_ms": -0.5}},
    )
    run = collector("gather")
    assert run.exit_code == 1, run.output
    assert "Traceback" not in run.output
    record = read_record(record_of(repo, job))
    by_index = {variant.index: variant for variant in record.variants}
    assert [by_index[i].state for i in range(6)] == ["succeeded"] + ["failed"] * 2 + [
        "succeeded"
    ] * 3
    for index, words in ((1, "= inf: should be a finite"), (2, "= -0.5: should be greater")):
        assert by_index[index].reason == "unusable_result"
        assert f"measured nothing usable: latency.p50_ms {words}" in by_index[index].explanation
    for command in ("report", "status"):
        shown = collector(command)
        assert shown.exit_code in (0, 1), shown.output
        assert "Traceback" not in shown.output


ACCURACY = {"seed": 0, "max_abs_error": 1e-6, "max_rel_error": 1e-7, "cosine": math.nan}
"""An accuracy whose cosine the runner could not compute (NaN, as a 0/0 gives)."""


def test_a_bad_optional_field_is_dropped_with_a_note_and_the_measurement_kept(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    _finish_with(
        api,
        job,
        {
            1: {"accuracy": ACCURACY},
            2: {"energy": {"joules": -3.0, "joules_per_inference": -0.01, "average_w": 80.0}},
            3: {"timings.load_s": -math.inf},
        },
    )
    run = collector("gather")
    assert run.exit_code == 0, run.output
    variants = read_record(record_of(repo, job)).variants
    assert all(variant.state == "succeeded" for variant in variants)
    measured = [variant.result for variant in variants if isinstance(variant.result, OkResult)]
    assert len(measured) == len(variants)
    accuracy, energy, timings = measured[1].accuracy, measured[2].energy, measured[3].timings
    assert accuracy is not None and accuracy.cosine is None
    assert accuracy.max_abs_error == 1e-6, "the rest of the accuracy is kept"
    assert "left out of its result as unusable: accuracy.cosine = nan" in variants[1].explanation
    assert energy is not None and energy.joules is None and energy.average_w is None
    assert energy.unavailable == "the runner reported joules = -3.0: no amount of energy"
    assert timings is None
    assert "timings.load_s = -inf" in variants[3].explanation


def test_a_row_an_earlier_collector_stored_with_an_infinite_p50_fails_no_reader(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """As issue #31 found it: an infinite p50, which pydantic wrote as null, stored as
    succeeded; gather then crashed writing the record, and every report, trend and metrics
    run of the workflow failed until the row was deleted by hand."""
    _finish_with(api, job, {})
    assert collector("gather", "--keep").exit_code == 0
    with sqlite3.connect(repo / ".benchfleet" / "results.sqlite") as db:
        db.execute(
            "UPDATE variant_runs SET result_json = "
            "json_set(result_json, '$.latency.p50_ms', json('null')) WHERE job_index = 1"
        )
    textfile = repo / "metrics" / "benchfleet.prom"
    runs = {
        "gather": collector("gather", "--metrics-textfile", str(textfile)),
        "report": collector("report"),
        "trend": collector("report", "--trend"),
    }
    for name, run in runs.items():
        assert "Traceback" not in run.output, name
        assert run.exception is None or isinstance(run.exception, SystemExit), name
    assert runs["report"].exit_code == 0 and runs["trend"].exit_code == 0
    (failed,) = [v for v in read_record(record_of(repo, job)).variants if v.state == "failed"]
    assert (failed.index, failed.reason) == (1, "unusable_result")
    assert "latency.p50_ms = null" in failed.explanation
    assert 'reason="unusable_result"' in textfile.read_text()
