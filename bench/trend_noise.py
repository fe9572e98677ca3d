"""The trend rule's false-alarm rate on this machine's own between-run noise, and the step it
catches (report/trend.py, docs/report.md "Trends").

    python -m bench.trend_noise [--runs 15] [--histories 2000]

First it records: the real runner runs cpu-smoke's first variant (tiny-mlp, 1 s of
measurement) as a pod runs it, once per process, `--runs` times; each run's p50 is one
scheduled run's number, and their ratios to the median of the unflagged ones are the noise
between runs. A run the runner flagged (contended, noisy, throttled) stays in the histories
flagged, deciding nothing, as in the report. This machine is shared by several test suites,
so the noise is a loaded cluster's, worse than a quiet node's.

Then it simulates: `--histories` histories of 30 runs, each run's p50 drawn with replacement
from the recorded ratios (nothing changed in any of them), judged run by run as
`collector report --trend` judges them. It counts
- per judged run, how often a run is called a regression or an improvement (a false alarm);
- per history, how often a change stands at its newest run (what the report would name);
for the rule (threshold max(5 %, the spread of the 10 runs before), 5 runs of history), for a
flat 5 % (TorchBench's 7 %-style fixed threshold, the reference's spread ignored), and for the
rule with only 2 runs of history; and the same histories with every run from the 21st on
20 % slower: how often the rule names that step, and whether at the run it began. Where most
recorded runs are flagged (a contended machine), once more with their flags ignored. Then the
same for log-normal noise of 1, 3 and 10 %, to read the rule beside a quieter node's noise.

`--smoke` records 3 runs of 0.2 s and simulates 50 histories, for the test-suite.
"""

import argparse
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Final

from bench.real_results import measured
from report.model import DEFAULT_REGRESSION_THRESHOLD, FLAGS
from report.trend import MIN_HISTORY, WINDOW, Rule, RunId, RunPoint

LENGTH: Final = 30
"""Runs per simulated history: a month of nightly runs."""
STEP_AT: Final = 20
"""Where the simulated regression begins (0-based run index)."""
STEP: Final = 1.20
SIGMAS: Final = (0.01, 0.03, 0.10)
"""Between-run noise beside the recorded one: 1 % (a quiet dedicated node), 3 %, 10 % (a
shared or spot node), as the standard deviation of log p50."""


Recorded = tuple[float, tuple[str, ...]]
"""A run's p50 (ms, or its ratio to the usable runs' median) and the validity flags that put
it in doubt (report.model.FLAGS)."""


def recorded_runs(runs: int, min_time_s: float) -> list[Recorded]:
    """`runs` real runs of cpu-smoke's variant 0, one process each."""
    recorded = []
    for _ in range(runs):
        result = measured(min_time_s)
        validity = result.validity
        flags = tuple(flag for flag in FLAGS if validity and getattr(validity, flag))
        recorded.append((result.latency.p50_ms, flags))
    return recorded


def _point(index: int, p50_ms: float, flags: tuple[str, ...]) -> RunPoint:
    run = RunId((1, index + 1, (False, 0, 0, "", "", "")), f"run {index + 1}", index + 1, None)
    return RunPoint(run, p50_ms, (p50_ms,), flags, (), None, None, None, None, None)


Noise = Callable[[random.Random], Recorded]
"""Draws one run's p50 ratio to the usual, with its flags."""


def histories(noise: Noise, count: int, step: float = 1.0) -> list[list[RunPoint]]:
    """`count` histories of LENGTH runs drawn from `noise`, `step` times slower from STEP_AT
    (the same draws whatever the step, so that a step's histories are the quiet ones')."""
    draw = random.Random(1)
    simulated = []
    for _ in range(count):
        runs = [noise(draw) for _ in range(LENGTH)]
        simulated.append(
            [
                _point(i, ratio * (step if i >= STEP_AT else 1.0), flags)
                for i, (ratio, flags) in enumerate(runs)
            ]
        )
    return simulated


@dataclass(frozen=True)
class Alarms:
    name: str
    per_run: float
    """Of the judged runs, the share called a regression or an improvement."""
    standing: float
    """Of the histories, the share with a change standing at the newest run."""


def alarms(name: str, rule: Rule, simulated: Sequence[Sequence[RunPoint]]) -> Alarms:
    judged = [
        rule.judge(history[:k], history[k]).verdict
        for history in simulated
        for k in range(len(history))
    ]
    decided = [verdict for verdict in judged if verdict != "not enough history"]
    called = sum(verdict in ("regression", "improvement") for verdict in decided)
    standing = sum(rule.change(history) is not None for history in simulated)
    return Alarms(name, called / max(len(decided), 1), standing / len(simulated))


def simulate(name: str, noise: Noise, count: int) -> None:
    """Print the false alarms of each rule on histories drawn from `noise`, and what the
    rule makes of a step."""
    quiet = histories(noise, count)
    rule = Rule()
    rows = [
        alarms(f"rule: max(5 %, spread of {WINDOW}), {MIN_HISTORY} runs of history", rule, quiet),
        alarms("rule with 2 runs of history", Rule(min_history=2), quiet),
        _flat_alarms(quiet, DEFAULT_REGRESSION_THRESHOLD),
    ]
    print(f"{name}: false alarms over {count} histories of {LENGTH} runs with nothing changed:")
    for row in rows:
        print(
            f"  {row.name}: {row.per_run:.2%} of judged runs called a change; "
            f"{row.standing:.1%} of histories end with a change standing"
        )
    changes = [rule.change(history) for history in histories(noise, count, STEP)]
    found = [change for change in changes if change and change.verdict == "regression"]
    at_step = sum(change.first.run.scheduled_run == STEP_AT + 1 for change in found)
    print(
        f"  a {STEP - 1:.0%} step from run {STEP_AT + 1}: the rule names it in "
        f"{len(found) / count:.1%} of histories, as beginning at run {STEP_AT + 1} in "
        f"{at_step / count:.1%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.trend_noise", description=__doc__)
    parser.add_argument("--runs", type=int, default=15, help="real runs to record")
    parser.add_argument("--histories", type=int, default=2000, help="histories to simulate")
    parser.add_argument("--smoke", action="store_true", help="3 runs of 0.2 s, 50 histories")
    args = parser.parse_args()
    runs, count, min_time_s = (3, 50, 0.2) if args.smoke else (args.runs, args.histories, 1.0)
    recorded = recorded_runs(runs, min_time_s)
    flagged = sum(bool(flags) for _, flags in recorded)
    usable = [p50 for p50, flags in recorded if not flags] or [p50 for p50, _ in recorded]
    median = statistics.median(usable)
    ratios = [(p50 / median, flags) for p50, flags in recorded]
    print(
        f"recorded {runs} runs of tiny-mlp, {flagged} flagged by the runner: p50 median "
        f"{median:.4f} ms{' (of the unflagged)' if flagged < runs else ''}, spread max/min - 1 "
        f"= {max(usable) / min(usable) - 1:.1%}, relative stdev "
        f"{statistics.pstdev(usable) / median:.1%}"
    )
    simulate("recorded noise, flagged runs deciding nothing", lambda d: d.choice(ratios), count)
    if 2 * flagged > runs:
        # Mostly contended here: what the rule would do on a cluster that flagged none of it.
        unflagged = [(ratio, ()) for ratio, _ in ratios]
        simulate("recorded noise, flags ignored", lambda d: d.choice(unflagged), count)
    for sigma in SIGMAS:
        simulate(f"log-normal noise, sigma {sigma:.0%}", partial(_log_normal, sigma), count)


def _log_normal(sigma: float, draw: random.Random) -> Recorded:
    return draw.lognormvariate(0, sigma), ()


def _flat_alarms(simulated: Sequence[Sequence[RunPoint]], floor: float) -> Alarms:
    """A fixed threshold against the median of the WINDOW runs before, the spread ignored:
    the rule if it trusted its floor alone. `standing` here: the newest run called a change."""
    called = decided = standing = 0
    for history in simulated:
        verdicts = []
        usable = [point for point in history if point.usable]
        for k in range(MIN_HISTORY, len(usable)):
            before = usable[max(0, k - WINDOW) : k]
            ratio = usable[k].p50_ms / statistics.median(p.p50_ms for p in before)
            verdicts.append(ratio > 1 + floor or ratio < 1 / (1 + floor))
        decided += len(verdicts)
        called += sum(verdicts)
        standing += bool(verdicts) and verdicts[-1]
    name = f"flat {floor:.0%} against the median of {WINDOW}, spread ignored"
    return Alarms(name, called / max(decided, 1), standing / len(simulated))


if __name__ == "__main__":
    main()
