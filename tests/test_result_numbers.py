"""contract.numbers through contract.result: every number of a result finite and in its
bounds where the result enters a reader; a bad one left out with a note where its field may
be, the result refused where it may not (issue #31)."""

import json
import math
from typing import Any

import pytest
from pydantic import ValidationError

from contract.result import (
    Energy,
    GpuTelemetry,
    OkResult,
    parse_group_message,
    parse_result,
    read_result,
    termination_message,
    unreadable_measurement,
)
from tests.conftest import TEST_DATA

REAL_RESULT = {
    **json.loads((TEST_DATA / "results" / "interleaved-ok.json").read_text()),
    "schema_version": 5,
    "energy": {"joules": 12.0, "joules_per_inference": 0.006, "average_w": 240.0, "share": 0.5},
    "accuracy": {"seed": 0, "max_abs_error": 1e-6, "max_rel_error": 1e-7, "cosine": 1.0},
}
"""A runner's result of an interleaved pod (16 rounds, paired), with energy and accuracy."""
INTERVAL = {"low_ms": 0.1, "high_ms": 0.2, "log_se": 0.01}


def _with(changes: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(REAL_RESULT))
    for path, value in changes.items():
        *parents, last = path.split(".")
        place: Any = data
        for parent in parents:
            place = place[int(parent)] if isinstance(place, list) else place[parent]
        if isinstance(place, list):
            place[int(last)] = value
        else:
            place[last] = value
    return data


def test_the_real_result_is_read_whole() -> None:
    result = parse_result(json.dumps(REAL_RESULT), strict=True)
    assert result.dropped == ()


@pytest.mark.parametrize(
    ("change", "note", "left"),
    [
        ({"throughput_samples_per_s": math.inf}, "throughput_samples_per_s = inf", "throughput"),
        ({"validity.noise": -0.1}, "validity.noise = -0.1", "validity"),
        ({"rounds.medians_ns.3": math.nan}, "rounds.medians_ns.3 = nan", "rounds"),
        (
            {"latency.p50_interval": {**INTERVAL, "low_ms": -1}},
            "latency.p50_interval.low_ms = -1",
            "interval",
        ),
        ({"contention.steal_fraction": 1.5}, "contention.steal_fraction = 1.5", "steal"),
    ],
)
def test_a_bad_number_is_left_out_at_the_nearest_field_that_may_be(
    change: dict[str, Any], note: str, left: str
) -> None:
    result = parse_result(json.dumps(_with(change)), strict=True)
    assert isinstance(result, OkResult)
    (said,) = result.dropped
    assert said.startswith(note)
    # The innermost field that may be left out goes, nothing around it.
    kept = {
        "throughput": result.throughput_samples_per_s is None and result.validity is not None,
        "validity": result.validity is None and result.contention is not None,
        "rounds": result.rounds is None and result.paired is not None,
        "interval": result.latency.p50_interval is None and result.validity is not None,
        "steal": result.contention is not None and result.contention.steal_fraction is None,
    }
    assert kept[left]


def test_a_field_with_a_default_that_is_a_value_is_not_left_out_for_it() -> None:
    """`share` defaults to 1: leaving a bad one out would claim the whole loop's energy."""
    result = parse_result(json.dumps(_with({"energy.share": math.nan})), strict=True)
    assert isinstance(result, OkResult) and result.energy is None
    assert result.dropped == ("energy.share = nan: should be a finite number",)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"latency.p50_ms": math.inf}, "latency.p50_ms = inf: should be a finite number"),
        ({"latency.p99_ms": 0}, "latency.p99_ms = 0: should be greater than 0"),
        ({"latency.count": 0}, "latency.count = 0: should be greater than or equal to 1"),
        # How pydantic wrote an infinite p50 before numbers were checked.
        ({"latency.p50_ms": None}, "latency.p50_ms = null: should be a finite number (pydantic"),
    ],
)
def test_a_bad_required_measurement_refuses_the_result_naming_it(
    change: dict[str, Any], words: str
) -> None:
    with pytest.raises(ValidationError) as refused:
        parse_result(json.dumps(_with(change)), strict=True)
    found = unreadable_measurement(refused.value)
    assert found is not None and found.startswith(words)


def test_anything_else_wrong_is_refused_as_it_was() -> None:
    with pytest.raises(ValidationError) as refused:
        parse_result(json.dumps(_with({"latency.count": "12", "validity.noise": -1})), strict=True)
    assert unreadable_measurement(refused.value) is None


def test_strict_reading_again_keeps_reading_the_enums_it_read() -> None:
    result = parse_result(json.dumps(_with({"validity.noise": math.inf})), strict=True)
    assert result.variant is not None and result.variant.precision.value == "bf16"


def test_python_data_reads_as_its_json_text_does() -> None:
    data = _with({"accuracy.cosine": -2.0})
    assert read_result(data) == parse_result(json.dumps(data))
    assert read_result(data).dropped == parse_result(json.dumps(data)).dropped


def test_a_group_message_reads_each_result_as_a_single_one() -> None:
    good = parse_result(json.dumps(REAL_RESULT))
    message = json.loads(termination_message([good, good]))
    message[1]["validity"]["noise"] = -1
    first, second = parse_group_message(json.dumps(message))
    assert isinstance(first, OkResult) and isinstance(second, OkResult)
    assert (first.dropped, second.dropped) == (
        (),
        ("validity.noise = -1: should be greater than or equal to 0",),
    )
    message[0]["latency"]["p50_ms"] = -1
    with pytest.raises(ValidationError) as refused:
        parse_group_message(json.dumps(message))
    assert "0.ok.latency.p50_ms" in str(refused.value)


@pytest.mark.parametrize(
    ("figures", "why"),
    [
        ({"joules": 0.0, "joules_per_inference": 0.0, "average_w": 0.0}, "did not move"),
        ({"joules": -3.0, "joules_per_inference": -0.1, "average_w": 40.0}, "no amount"),
        ({"joules": 3.0, "joules_per_inference": 0.1, "average_w": math.inf}, "no amount"),
    ],
)
def test_energy_that_is_no_amount_reads_as_unknown_saying_why(
    figures: dict[str, float], why: str
) -> None:
    energy = Energy.model_validate({**figures, "share": 0.5})
    assert (energy.joules, energy.joules_per_inference, energy.average_w) == (None, None, None)
    assert energy.share == 0.5
    assert energy.unavailable is not None and why in energy.unavailable
    telemetry = GpuTelemetry.model_validate(
        {"readings": 3, "interval_s": 0.1, "device_s": 1, "wall_s": 1, "energy_j": 0, "energy_s": 2}
    )
    assert (telemetry.energy_j, telemetry.energy_s) == (None, None)
    assert telemetry.energy_unavailable == (
        "the runner reported energy_j = 0: the energy counter did not move during the loop, so "
        "its energy is unknown"
    )
