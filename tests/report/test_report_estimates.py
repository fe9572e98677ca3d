"""After a run, the report says how far `make plan`'s estimate was from what the pods took,
shows compile as a start-up phase, and names the instructions a target's CPU lacks for the
variants it ran; on the real-size sweep's two recorded runs (tests/data/estimates/)."""

import json
from datetime import timedelta
from typing import Final

import pytest

from contract.records import JobRecord, StoredVariant, read_record
from contract.result import OkResult
from report.json import to_json
from report.model import build_report
from report.text import to_text
from store.database import StoredRun
from store.history import runs_of
from tests.conftest import TEST_DATA

FIRST: Final = "real-sweep-cpu-dd8d86e0f3"
SECOND: Final = "real-sweep-cpu-5b053f8f66"
HASWELL_FLAGS: Final = ("avx", "avx2", "f16c", "fma", "sse", "sse2", "sse4_1", "sse4_2", "ssse3")
"""Issue 32's CPU: AVX2, no AVX-512, VNNI or bf16."""


def _later(stored: StoredVariant, by: timedelta) -> StoredVariant:
    start = stored.pod_start
    assert start is not None and start.created_at and start.scheduled_at and start.started_at
    assert stored.finished_at is not None
    return stored.model_copy(
        update={
            "finished_at": stored.finished_at + by,
            "pod_start": start.model_copy(
                update={
                    "created_at": start.created_at + by,
                    "scheduled_at": start.scheduled_at + by,
                    "started_at": start.started_at + by,
                }
            ),
        }
    )


def _record(name: str) -> JobRecord:
    return read_record(TEST_DATA / "estimates" / f"{name}.json")


def _second_an_hour_later() -> list[StoredRun]:
    """The two runs overlapped on the host; here the second starts an hour after the first
    ended, so the plan for it had the first's record."""
    second = _record(SECOND)
    moved = tuple(_later(stored, timedelta(hours=1)) for stored in second.variants)
    return runs_of([_record(FIRST), second.model_copy(update={"variants": moved})])


def test_the_report_says_how_far_the_plans_estimate_was_from_what_the_pods_took() -> None:
    report = build_report(_second_an_hour_later(), jobs=[SECOND])
    (check,) = report.plan_checks
    assert (check.job, check.earlier_jobs, check.took_by) == (SECOND, 1, "pods")
    assert check.estimate is not None and check.estimate.from_history == 30
    assert check.ratio is not None and 0.5 <= check.ratio <= 2
    text = to_text(report)
    assert "make plan's estimate against what the pods took" in text
    assert "30 by earlier runs (1 earlier Job)" in text
    assert "at most pod-min" in text
    document = json.loads(to_json(report))
    estimate = document["plan_checks"][0]["estimate"]
    assert estimate["from_history"] == 30
    # Every variant by an earlier run: no range, the least and the most are the likely.
    assert estimate["low_s"] == estimate["seconds"] == estimate["high_s"]


def test_a_run_with_no_earlier_job_and_no_recorded_bounds_says_it_cannot_be_recomputed() -> None:
    """The runs overlapped: nothing had finished when the second's first pod was created,
    and results before schema 6 do not say the bounds the plan counted instead."""
    report = build_report(runs_of([_record(FIRST), _record(SECOND)]), jobs=[SECOND])
    (check,) = report.plan_checks
    assert (check.earlier_jobs, check.estimate, check.ratio) == (0, None, None)
    assert "cannot be recomputed" in to_text(report)


def test_compile_is_a_start_up_phase_with_its_share_of_the_pods_time() -> None:
    report = build_report(runs_of([_record(SECOND)]))
    (startup,) = report.startup
    phases = {phase.phase: phase for phase in startup.phases}
    assert phases["compile"].count == 10, "the ten compiled variants"
    assert startup.compiled_share is not None and 0.4 < startup.compiled_share < 0.7
    text = to_text(report)
    assert "compile" in text and f"compile {startup.compiled_share:.0%}" in text


def _on(flags: tuple[str, ...] | None, stored: StoredVariant) -> StoredVariant:
    result = stored.result
    assert isinstance(result, OkResult) and result.environment is not None
    environment = result.environment.model_copy(update={"cpu_flags": flags})
    return stored.model_copy(
        update={"result": result.model_copy(update={"environment": environment})}
    )


@pytest.mark.parametrize(
    ("flags", "lacking"),
    [
        (HASWELL_FLAGS, {"bf16": 10, "int8-dynamic": 15, "AVX-512": 30}),
        (
            (*HASWELL_FLAGS, "avx512f", "avx512_vnni", "avx512_bf16"),
            {},
        ),
        (None, {}),
    ],
)
def test_the_report_names_what_the_targets_cpu_lacks_for_the_variants_it_ran(
    flags: tuple[str, ...] | None, lacking: dict[str, int]
) -> None:
    record = _record(SECOND)
    record = record.model_copy(
        update={"variants": tuple(_on(flags, stored) for stored in record.variants)}
    )
    report = build_report(runs_of([record]))
    assert {found.lack.need.name: found.lack.variants for found in report.lacks} == lacking
    text = to_text(report)
    assert ("Instruction sets" in text) == bool(lacking)
    if lacking:
        assert "amx_bf16 or avx512_bf16" in text and "Intel(R) Xeon(R) Processor" in text
