"""The runner's progress lines: a line on stderr as each variant enters a phase and every few
seconds of a loop, never on stdout, where only the result lines are."""

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from contract.config import PhaseConfig
from contract.progress import ProgressRecord, parse_progress
from contract.result import RESULT_PREFIX
from runner import progress
from runner.__main__ import main
from runner.measure import run_phase, time_left
from tests.runner.conftest import EXAMPLES, group_config, group_variant
from tests.runner.test_measure import FakeClock, rule


def _records(text: str) -> list[ProgressRecord]:
    return [record for line in text.splitlines() if (record := parse_progress(line))]


def _phases(records: list[ProgressRecord], variant: int) -> list[str]:
    return [record.phase for record in records if variant in record.variants]


def _pod(tmp_path: Path, capsys: pytest.CaptureFixture[str], *, interleave: bool) -> str:
    """Run pod 0 of a group (tiny-mlp at bf16 and fp32, then tiny-transformer) in-process;
    its stderr."""
    variants = (
        group_variant(0, "tiny-mlp", "bf16"),
        group_variant(1, "tiny-mlp"),
        group_variant(2, "tiny-transformer"),
    )
    config = tmp_path / "config.json"
    written = group_config(variants, ((0, 1, 2),), interleave=interleave)
    config.write_text(written.model_dump_json(), encoding="utf-8")
    log = tmp_path / "termination-log"
    code = main(["--config", str(config), "--models", str(EXAMPLES), "--termination-log", str(log)])
    assert code == 0
    out, err = capsys.readouterr()
    assert all(line.startswith(RESULT_PREFIX) for line in out.splitlines()), "stdout: results"
    return err


def test_each_variant_tells_its_phases_in_order_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = _records(_pod(tmp_path, capsys, interleave=False))
    for variant in (0, 1, 2):
        phases = _phases(records, variant)
        assert phases[0] == "load" and phases[-1] == "measure", phases
        assert phases.index("prepare") < phases.index("warmup") < phases.index("measure")
    # bf16 is compared with tiny-mlp's fp32 reference, which the pod computes for it, once:
    # the fp32 variant after it is compared with the same.
    assert _phases(records, 0).count("accuracy") == 1
    assert "accuracy" not in _phases(records, 1)


def test_interleaved_variants_are_measured_in_one_phase_that_names_them_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = _records(_pod(tmp_path, capsys, interleave=True))
    measured = [record.variants for record in records if record.phase == "measure"]
    assert measured == [(0, 1), (2,)]


def test_the_stream_is_let_go_when_main_returns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _pod(tmp_path, capsys, interleave=False)
    progress.begin([group_variant(0, "tiny-mlp")], "load")
    assert capsys.readouterr().err == ""


@pytest.fixture
def stream() -> Iterator[io.StringIO]:
    written = io.StringIO()
    progress.report_to(written)
    yield written
    progress.report_to(None)


def test_a_loop_tells_its_count_and_time_left_every_few_seconds(stream: io.StringIO) -> None:
    clock = FakeClock(step_ns=10_000_000)  # 10 ms per iteration
    twelve_seconds = rule(0, 12.0, 1_000_000, 60.0)
    variant = group_variant(4, "tiny-mlp")
    tick = progress.loop([variant], "measure", twelve_seconds)
    outcome = run_phase(clock.step, twelve_seconds, clock=clock, tick=tick)
    assert len(outcome.durations_ns) == 1200
    lines = _records(stream.getvalue())
    assert [(r.variants, r.phase, r.done) for r in lines] == [
        ((4,), "measure", 500),
        ((4,), "measure", 1000),
    ], f"one line per {progress.INTERVAL_S} s of the loop"
    assert [round(r.left_s or 0, 6) for r in lines] == [7.0, 2.0]


@pytest.mark.parametrize(
    ("phase", "done", "elapsed_s", "left_s"),
    [
        (rule(0, 60.0, 10_000, 600.0), 100, 10.0, 50.0),  # the minimum time
        (rule(1000, 0.0, 10_000, 600.0), 100, 10.0, 90.0),  # the minimum count, at 0.1 s
        (rule(1000, 60.0, 10_000, 30.0), 100, 10.0, 20.0),  # the maximum time comes first
        (rule(1000, 60.0, 200, 600.0), 100, 10.0, 10.0),  # the maximum count comes first
        (rule(10, 1.0, 10_000, 600.0), 100, 10.0, 0.0),  # both minimums met
    ],
)
def test_time_left_is_until_both_minimums_unless_a_maximum_comes_first(
    phase: PhaseConfig, done: int, elapsed_s: float, left_s: float
) -> None:
    assert time_left(phase, done, elapsed_s) == pytest.approx(left_s)
