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
  told from a runner that adds to it;
- the contention rule (runner/validity.py) on runs of 500 queries, one thread pinned to CPU
  0, quiet and beside a CPU hog (`python -c 'while 1: pass'` on that CPU, both scheduled as
  pods run), interleaved pair by pair: the run-queue wait over the whole loop (the closed
  loop's rule) and inside the busy spans (the fixed-rate rule), the issue clock, and whether
  the run is flagged contended, with the 1-minute load average;
- held / not held as the report judges them (report.control.judge) on the full run and on
  60 queries with a 50 us deadline, shorter than tiny-mlp's own call.

`--realtime` runs the quiet runs, the baseline and the runner's under SCHED_FIFO (root or
CAP_SYS_NICE): the other tasks of a shared machine (all SCHED_OTHER) cannot take their CPU,
the quietest CPU such a machine gives; the hog runs stay as pods run. The runner's loop
sleeps most of each period, so this costs the other tasks little.

`--smoke` asks p90 (100 queries, 1 s) instead of p99.9, for the test-suite (tests/bench/).
"""

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Final

import numpy as np
import torch

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
from report.control import judge
from report.model import FLAGS
from runner import contention
from runner.fixed_rate import open_loop, run_fixed_rate, summarize
from runner.stats import summarize as summarize_stats
from runner.validity import run_queue_wait, validity

ROOT: Final = Path(__file__).resolve().parent.parent
EXAMPLES: Final = ROOT / "models" / "examples"
MODEL: Final = "tiny-mlp"
RATE_HZ: Final = 100.0
TARGET_SHARE: Final = 0.01
"""The issue clock's p99 error the issue asks for on an idle CPU: 1 % of the period."""
REALTIME_PRIORITY: Final = 10
MISSED_QUERIES: Final = 60
MISSED_DEADLINE_S: Final = 0.00005
"""50 us: shorter than tiny-mlp's call, so every query misses and the run is not held."""


def _config(
    tail: Tail | None,
    max_time_s: float,
    *,
    queries: int = 0,
    deadline_s: float = 1 / RATE_HZ,
) -> RunConfig:
    model = EXAMPLES / f"{MODEL}.pt2"
    return RunConfig(
        workflow="bench-fixed-rate",
        target="cpu",
        device_type="cpu",
        gpus=0,
        warmup=PhaseConfig(min_iterations=50, min_time_s=0.5, max_iterations=10_000, max_time_s=5),
        measure=PhaseConfig(
            min_iterations=queries,
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
        scenario=ScenarioConfig(rate_hz=RATE_HZ, deadline_s=deadline_s),
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


def _answer_line(name: str, result: OkResult) -> str:
    """The report's control answer (report.control.judge) on one run, as stored."""
    scenario, validity_flags = result.scenario, result.validity
    assert scenario is not None and validity_flags is not None
    flags = [flag for flag in FLAGS if getattr(validity_flags, flag)]
    held, why = judge(scenario, result.reliable_p99_9_ms, flags)
    tail = result.reliable_p99_9_ms
    return (
        f"{name}: {held} ({why}); missed {scenario.misses} of {scenario.queries} "
        f"[95% CI {scenario.miss_rate_low:.2%}-{scenario.miss_rate_high:.2%}], p99.9 "
        f"{'?' if tail is None else f'{tail:.3f} ms'} against {scenario.deadline_ms:g} ms; "
        f"flags: {', '.join(flags) or 'none'}"
    )


def _quiet(priority: int) -> None:
    """SCHED_FIFO for the calling thread (and the processes it starts): the other tasks of
    a shared machine, all SCHED_OTHER, can no longer take its CPU."""
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))


def _as_pods_run() -> None:
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))


def _hog() -> "subprocess.Popen[bytes]":
    """`python -c 'while 1: pass'`, started from this thread: on its CPUs, with its
    scheduling (as pods run, never real-time: the caller sees to both)."""
    return subprocess.Popen([sys.executable, "-c", "while 1: pass"])


def _contention_run(queries: int) -> str:
    """tiny-mlp at RATE_HZ in this thread, measured and judged as the runner does (its
    wait reader, counters and validity rule), with both rules' shares in numbers."""
    program = torch.export.load(EXAMPLES / f"{MODEL}.pt2").module()
    feed = torch.randn(1, 64)

    def step() -> int:
        began = time.perf_counter_ns()
        program(feed)
        return time.perf_counter_ns() - began

    rule = PhaseConfig(
        min_iterations=queries, min_time_s=0.0, max_iterations=queries, max_time_s=600.0
    )
    load = os.getloadavg()[0]
    with torch.inference_mode():
        for _ in range(200):
            step()
        before = contention.read_counters()
        with contention.ThreadWaits() as waits:
            scenario = ScenarioConfig(rate_hz=RATE_HZ, deadline_s=1 / RATE_HZ)
            outcome = run_fixed_rate(step, rule, scenario, waits=waits.read)
        after = contention.read_counters()
    used = contention.contention(before, after, torch.get_num_threads(), 1.0)
    summary = summarize(outcome)
    judged = open_loop(summary)
    flags = validity(
        summarize_stats(outcome.latencies_ns),
        True,
        [("measurement", outcome.as_phase(), rule)],
        used,
        None,
        open_loop=judged,
    )
    whole = used.run_queue_wait_s or 0.0
    busy_wait = judged.busy_wait_s or 0.0
    closed = run_queue_wait(used.run_queue_wait_s, used.wall_s, "the loop")
    return (
        f"load {load:.2f}: waits over the whole loop {whole * 1e3:.1f} ms of "
        f"{used.wall_s:.2f} s = {whole / used.wall_s:.1%} (the closed loop's rule "
        f"{'would flag' if closed else 'would not flag'}); inside the busy spans "
        f"{busy_wait * 1e3:.2f} ms of {judged.busy_s * 1e3:.1f} ms = "
        f"{busy_wait / judged.busy_s:.1%}; issue clock p99 "
        f"{summary.issue_error_p99_ms * 1e3:.0f} us; {summary.misses} of {summary.queries} "
        f"missed; contended: {flags.contended}"
        + (f" ({'; '.join(flags.reasons)})" if flags.contended else "")
    )


def _contention_lines(pairs: int, queries: int, realtime: bool) -> list[str]:
    """Quiet and beside a hog, interleaved pair by pair, one thread pinned to CPU 0: quiet
    is SCHED_FIFO with --realtime (else this machine as it is), the hog run as pods run."""
    threads, cpus = torch.get_num_threads(), os.sched_getaffinity(0)
    torch.set_num_threads(1)
    os.sched_setaffinity(0, {0})
    lines = []
    try:
        for pair in range(pairs):
            if realtime:
                _quiet(REALTIME_PRIORITY)
            try:
                quiet = _contention_run(queries)
            finally:
                _as_pods_run()
            hog = _hog()
            try:
                hogged = _contention_run(queries)
            finally:
                hog.kill()
                hog.wait()
            lines += [
                f"pair {pair + 1}, {'SCHED_FIFO' if realtime else 'as it is'}: {quiet}",
                f"pair {pair + 1}, beside a CPU hog: {hogged}",
            ]
    finally:
        os.sched_setaffinity(0, cpus)
        torch.set_num_threads(threads)
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="p90, 100 queries")
    parser.add_argument(
        "--realtime",
        action="store_true",
        help="run the quiet runs under SCHED_FIFO (root or CAP_SYS_NICE): the quietest CPU a "
        "shared machine gives",
    )
    args = parser.parse_args()
    tail: Tail = "p90" if args.smoke else "p99.9"
    pairs = _contention_lines(1 if args.smoke else 2, 100 if args.smoke else 500, args.realtime)
    if args.realtime:
        _quiet(REALTIME_PRIORITY)
    bare = _bare_clock_lines(100 if args.smoke else 2000)
    with tempfile.TemporaryDirectory() as folder:
        full = run_runner(_config(tail, max_time_s=300.0), Path(folder))
        short = run_runner(_config("p99.9", max_time_s=1.0), Path(folder))
        missed = run_runner(
            _config(None, max_time_s=60.0, queries=MISSED_QUERIES, deadline_s=MISSED_DEADLINE_S),
            Path(folder),
        )
    lines = (
        *pairs,
        *bare,
        *_clock_lines(full),
        *_tail_lines(full, tail),
        *_short_lines(short),
        _answer_line(f"the run of {full.latency.count} queries, deadline one period", full),
        _answer_line(
            f"{MISSED_QUERIES} queries, deadline {MISSED_DEADLINE_S * 1e3:g} ms "
            "(under tiny-mlp's own time)",
            missed,
        ),
    )
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
