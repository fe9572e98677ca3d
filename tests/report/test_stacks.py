"""Like with like (docs/report.md, "Stacks"): numbers measured on different stacks (driver,
CUDA or library build, MIG profile, power limit, CPU) are compared only within their stack
unless `--across-stacks` asks, the report naming the field that differs; a trend over a
driver update marks it rather than calling it a regression. Results before the fingerprint
are of an unknown stack and compare as they always did."""

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchfleet.collector import cli
from contract.fingerprint import Fingerprint
from contract.options import DEFAULT_DATABASE
from contract.records import JobIdentity, StoredVariant
from contract.result import OkResult
from report.model import Notes, build_report
from report.text import to_text
from report.trend import Rule, build_trend
from store.database import StoredRun, open_store
from tests.collector.stored import JOB, NOW, succeeded
from tests.report.test_trend import QUIET, scheduled, trend_of

OLD_DRIVER = Fingerprint(
    driver_version="550.54.15",
    cuda_runtime="12.4",
    gpu_name="NVIDIA H100 80GB HBM3",
    power_limit_w=700.0,
    cpu_model="Intel Xeon",
    libraries={"torch": "2.7.0"},
)
NEW_DRIVER = OLD_DRIVER.model_copy(update={"driver_version": "560.35.03"})
DRIVER_CHANGE = "driver_version 550.54.15 vs 560.35.03"


def _variant(index: int, p50_ms: float, stack: Fingerprint | None) -> StoredVariant:
    stored = succeeded(index, p50_ms)
    assert isinstance(stored.result, OkResult)
    return stored.model_copy(
        update={"result": stored.result.model_copy(update={"fingerprint": stack})}
    )


def _job(name: str) -> JobIdentity:
    return JOB.model_copy(update={"job": name})


def _stored(tmp_path: Path, before: Fingerprint | None, after: Fingerprint | None) -> Path:
    """Two Jobs of one variant, the later 30 % slower, on the stacks given."""
    with open_store(tmp_path / DEFAULT_DATABASE) as store:
        store.add(_job("cpu-smoke-before"), [_variant(0, 1.0, before)], NOW)
        store.add(_job("cpu-smoke-after"), [_variant(0, 1.3, after)], NOW)
    return tmp_path


def _baseline(root: Path, *arguments: str) -> dict[str, Any]:
    command = ["--root", str(root), "report", "--workflow", "cpu-smoke", "--format", "json"]
    done = CliRunner().invoke(
        cli,
        [*command, "--job", "cpu-smoke-after", "--baseline-job", "cpu-smoke-before", *arguments],
    )
    assert done.exit_code == 0, done.output
    baseline: dict[str, Any] = json.loads(done.output)["baseline"]
    return baseline


def test_runs_differing_only_in_the_driver_are_not_compared_by_default(tmp_path: Path) -> None:
    baseline = _baseline(_stored(tmp_path, OLD_DRIVER, NEW_DRIVER))
    assert baseline["changes"] == []
    (other,) = baseline["other_stack"]
    assert other["differences"] == [DRIVER_CHANGE]


def test_across_stacks_compares_them_naming_the_field(tmp_path: Path) -> None:
    baseline = _baseline(_stored(tmp_path, OLD_DRIVER, NEW_DRIVER), "--across-stacks")
    assert baseline["other_stack"] == []
    (change,) = baseline["changes"]
    assert change["ratio"]["value"] == pytest.approx(1.3)
    assert change["stack"] == [DRIVER_CHANGE]


@pytest.mark.parametrize(
    ("before", "after", "stack"),
    [
        (None, None, []),
        (None, NEW_DRIVER, ["stack unknown in the baseline (a runner before the fingerprint): "
                            "compared as is"]),
        (OLD_DRIVER, OLD_DRIVER.model_copy(update={"gpu_uuid": "GPU-other"}), []),
    ],
    ids=["both before the fingerprint", "one before it", "another GPU of the same stack"],
)  # fmt: skip
def test_unknown_or_equal_stacks_are_compared_as_before(
    tmp_path: Path, before: Fingerprint | None, after: Fingerprint | None, stack: list[str]
) -> None:
    baseline = _baseline(_stored(tmp_path, before, after))
    (change,) = baseline["changes"]
    assert change["ratio"]["value"] == pytest.approx(1.3)
    assert (change["stack"], baseline["other_stack"]) == (stack, [])


def _two_precisions(power_limit_w: float) -> list[StoredRun]:
    """fp32 and bf16 of one Job, bf16 on a GPU capped at `power_limit_w`."""
    fp32 = _variant(0, 1.0, OLD_DRIVER)
    bf16 = _variant(1, 0.6, OLD_DRIVER.model_copy(update={"power_limit_w": power_limit_w}))
    assert isinstance(bf16.result, OkResult) and bf16.result.variant is not None
    ref = bf16.result.variant.model_copy(update={"precision": "bf16", "id": "v1-bf16"})
    bf16 = bf16.model_copy(
        update={"variant": ref, "result": bf16.result.model_copy(update={"variant": ref})}
    )
    return [StoredRun(JOB, variant, "2026-12-03T06:00:00+00:00") for variant in (fp32, bf16)]


def test_variants_of_one_report_on_different_stacks_are_kept_apart() -> None:
    same = build_report(_two_precisions(700.0))
    assert [axis.axis for axis in same.axes] == ["precision"]
    assert same.stacks_apart == ()
    apart = build_report(_two_precisions(350.0))
    assert apart.axes == ()
    (note,) = apart.stacks_apart
    assert "power_limit_w 350.0 vs 700.0" in note and note.endswith("not compared with it")
    assert "Kept apart: measured on different stacks (1)" in to_text(apart)
    across = build_report(_two_precisions(350.0), across_stacks=True)
    assert [axis.axis for axis in across.axes] == ["precision"]
    (note,) = across.stacks_apart
    assert note.endswith("compared, as --across-stacks asks")


def test_the_provenance_shows_each_jobs_stack() -> None:
    text = to_text(build_report(_two_precisions(700.0)))
    assert "Stacks" in text and "550.54.15" in text and "torch 2.7.0" in text
    before = build_report([StoredRun(JOB, succeeded(0), "2026-12-03T06:00:00+00:00")])
    assert "Stacks" not in to_text(before)


def _on(stack: Fingerprint, run: StoredRun) -> StoredRun:
    result = run.variant.result
    assert isinstance(result, OkResult)
    variant = run.variant.model_copy(
        update={"result": result.model_copy(update={"fingerprint": stack})}
    )
    return StoredRun(run.job, variant, run.collected_at)


def test_a_trend_over_a_driver_update_marks_it_instead_of_a_regression() -> None:
    history = [_on(OLD_DRIVER, scheduled(run, p50)) for run, p50 in enumerate(QUIET, start=1)]
    slower = [_on(NEW_DRIVER, scheduled(run, 12.0)) for run in (7, 8)]
    (variant,) = trend_of([*history, *slower]).variants
    assert variant.change is None
    assert variant.verdict == "not enough history"
    first_new = variant.points[6]
    assert (first_new.verdict, first_new.stack, first_new.reference) == (
        "not enough history",
        (DRIVER_CHANGE,),
        None,
    )
    assert variant.points[7].stack == ()
    # Asked to look across stacks, the same runs are a regression that names the driver.
    runs = [*history, *slower]
    (across,) = build_trend("cpu-smoke", runs, Notes(), Rule(), across_stacks=True).variants
    assert across.change is not None
    assert across.change.verdict == "regression"
    assert DRIVER_CHANGE in across.change.differences
