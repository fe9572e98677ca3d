"""The fixed-rate scenario's own numbers: how well its issue clock keeps 100 Hz on the cpu
target, and whether the p99.9 of a run of the derived length is the one numpy computes on
the samples the result stores.

    python -m bench.fixed_rate

Runs the runner as a pod does (`python -m runner`, config.json and the index in its env) on
tiny-mlp at 100 Hz, deadline one period, `measure.tail: p99.9`: the derived length is
10,000 queries (contract.config.tail_iterations), 100 s. Reports:
- the issue clock's error (actual issue less scheduled arrival, over the queries that found
  the model idle): its p99 and max against the period; the target is a p99 under 1 % of it
  (0.1 ms) on an idle CPU. A loaded machine shows more, and the run is then flagged
  contended above 5 % (runner.fixed_rate.CONTENDED_ISSUE_SHARE): the bench says which;
- `latency.p99_9_ms` against numpy.percentile(samples, 99.9) of the result's own samples,
  read back as the collector stores it (the result JSON, whole), and that p99.9 is listed
  reliable;
- a run stopped short of the tail's count (`measure.max_time` 1 s): flagged stopped early,
  p99.9 not listed reliable, so no report reads it;
- the baseline, measured in the same run: the clock alone, the same loop in this process
  with a step that does nothing (2,000 queries), so a machine that cannot keep 100 Hz is
  told from a runner that adds to it.

`--smoke` asks p90 (100 queries, 1 s) instead of p99.9, for the test-suite (tests/bench/).
"""

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

import numpy as np

from contract.config import (
    InputConfig,
    ModelConfig,
    PhaseConfig,
    RunConfig,
    ScenarioConfig,
    Tail,
    VariantConfig,
    tail_iterations,
)
from contract.result import OkResult, parse_result, parse_result_line, result_line
from runner.fixed_rate import run_fixed_rate, summarize

ROOT: Final = Path(__file__).resolve().parent.parent
EXAMPLES: Final = ROOT / "models" / "examples"
MODEL: Final = "tiny-mlp"
RATE_HZ: Final = 100.0
TARGET_SHARE: Final = 0.01
"""The issue clock's p99 error the issue asks for on an idle CPU: 1 % of the period."""


def _config(tail: Tail, max_time_s: float) -> RunConfig:
    model = EXAMPLES / f"{MODEL}.pt2"
    return RunConfig(
        workflow="bench-fixed-rate",
        target="cpu",
        device_type="cpu",
        gpus=0,
        warmup=PhaseConfig(min_iterations=50, min_time_s=0.5, max_iterations=10_000, max_time_s=5),
        measure=PhaseConfig(
            min_iterations=0,
            min_time_s=0.0,
            max_iterations=1_000_000,
            max_time_s=max_time_s,
            tail=tail,
        ),
        models={
            MODEL: ModelConfig(
                source="file",
                location=model.name,
                sha256=hashlib.sha256(model.read_bytes()).hexdigest(),
            )
        },
        variants=(
            VariantConfig(
                index=0,
                id="v000000000000",
                model=MODEL,
                precision="fp32",
                quantization="none",
                batch_size=1,
                inputs=(InputConfig(shape=(64,), dtype="float32"),),
            ),
        ),
        scenario=ScenarioConfig(rate_hz=RATE_HZ, deadline_s=1 / RATE_HZ),
    )


def run_runner(config: RunConfig, folder: Path) -> OkResult:
    """`python -m runner` as a pod runs it; its result as the collector stores it."""
    path = folder / "config.json"
    path.write_text(config.model_dump_json(), encoding="utf-8")
    env = {
        **os.environ,
        "CONFIG_PATH": str(path),
        "MODEL_PATH": str(EXAMPLES),
        "JOB_COMPLETION_INDEX": "0",
        "TERMINATION_LOG": str(folder / "termination-log"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "runner"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=config.measure.max_time_s + 120,
    )
    result = parse_result_line(done.stdout)
    assert isinstance(result, OkResult), done.stderr[-2000:]
    # Through its JSON again, the result as stored whole: its samples are the stored ones.
    stored = parse_result(result_line(result).split(" ", 1)[1])
    assert isinstance(stored, OkResult)
    return stored


def _clock_lines(result: OkResult) -> list[str]:
    scenario = result.scenario
    assert scenario is not None and result.validity is not None
    period_ms = 1e3 / scenario.rate_hz
    share = scenario.issue_error_p99_ms / period_ms
    verdict = "under" if share < TARGET_SHARE else "OVER"
    return [
        f"issue clock at {scenario.rate_hz:g} Hz on the cpu target: p99 "
        f"{scenario.issue_error_p99_ms * 1e3:.1f} us = {share:.2%} of the {period_ms:g} ms "
        f"period ({verdict} the {TARGET_SHARE:.0%} target), max "
        f"{scenario.issue_error_max_ms * 1e3:.1f} us over the "
        f"{scenario.issue_error_queries} queries that found the model idle; jitter "
        f"{scenario.jitter_ms:.3f} ms; "
        f"{scenario.misses} of {scenario.queries} queries missed the {scenario.deadline_ms:g} "
        f"ms deadline",
        f"run flagged contended: {bool(result.validity.contended)}"
        + (f" ({'; '.join(result.validity.reasons)})" if result.validity.reasons else ""),
    ]


def _tail_lines(result: OkResult, tail: Tail) -> list[str]:
    assert result.samples is not None and result.validity is not None
    stored_ms = np.asarray(result.samples.durations_ns(), dtype=np.float64) / 1e6
    reference = float(np.percentile(stored_ms, 99.9))
    measured = result.latency.p99_9_ms
    assert measured is not None
    agrees = abs(measured - reference) <= 1e-9 * max(1.0, reference)
    return [
        f"derived length for {tail}: {tail_iterations(tail)} queries; ran "
        f"{result.latency.count}, {tail} listed reliable: "
        f"{tail in result.validity.reliable_percentiles}",
        f"p99.9: result {measured:.6f} ms, numpy.percentile on the {stored_ms.size} stored "
        f"samples {reference:.6f} ms: {'agree' if agrees else 'DIFFER'}",
    ]


def _short_lines(result: OkResult) -> list[str]:
    validity = result.validity
    assert validity is not None
    return [
        f"a run stopped at max_time 1 s short of p99.9's {tail_iterations('p99.9')} queries: "
        f"{result.latency.count} ran, stopped early: {validity.stopped_early}, p99.9 listed "
        f"reliable: {'p99.9' in validity.reliable_percentiles} (reads as None: "
        f"{result.reliable_p99_9_ms is None})"
    ]


def _bare_clock_lines(queries: int) -> list[str]:
    """The issue loop with a step that does nothing: the machine's clock alone."""
    rule = PhaseConfig(
        min_iterations=queries, min_time_s=0.0, max_iterations=queries, max_time_s=600.0
    )
    outcome = run_fixed_rate(lambda: 0, rule, ScenarioConfig(rate_hz=RATE_HZ, deadline_s=0.01))
    scenario = summarize(outcome)
    period_ms = 1e3 / RATE_HZ
    return [
        f"baseline, the bare issue loop (no model) at {RATE_HZ:g} Hz in this process: p99 "
        f"{scenario.issue_error_p99_ms * 1e3:.1f} us = "
        f"{scenario.issue_error_p99_ms / period_ms:.2%} of the period, max "
        f"{scenario.issue_error_max_ms * 1e3:.1f} us over {scenario.issue_error_queries} queries"
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="p90, 100 queries")
    args = parser.parse_args()
    tail: Tail = "p90" if args.smoke else "p99.9"
    bare = _bare_clock_lines(100 if args.smoke else 2000)
    with tempfile.TemporaryDirectory() as folder:
        full = run_runner(_config(tail, max_time_s=300.0), Path(folder))
        short = run_runner(_config("p99.9", max_time_s=1.0), Path(folder))
    lines = (*bare, *_clock_lines(full), *_tail_lines(full, tail), *_short_lines(short))
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
