"""The control question on the example policy, end to end: does the pipeline of
models/policy/ (preprocess, policy, postprocess) hold a rate on this machine's CPU, and does
the report say so?

    python -m bench.policy_control

Runs dist/'s policy-pipeline through localrun twice, each in a repository of its own with a
fixed-rate scenario written into its config.json:
- at 50 Hz, deadline one period, `measure.tail: p99.9`: the derived length, 10,000 queries
  (200 s), the least that can say "held" (docs/policies.md, "Proving held");
- at 50 Hz with a 0.1 ms deadline, shorter than the chain's own time, for 60 queries: every
  query misses, "not held".
Reports each run's answer as the report words it (held / not held / undecided, the miss
rate's interval, p99.9, jitter, why), its stage split and the runner's seconds. On an idle
machine the first says held, the second not held; on a loaded one either may say undecided
with the machine's reason (contended), never the wrong answer.

`--smoke` runs the first for 250 queries (5 s): "undecided: too few queries", for the
test-suite (tests/bench/).
"""

import argparse
import tempfile
import time
from pathlib import Path

from contract.config import tail_iterations
from tests.localrun.policy import (
    MISSED_QUERIES,
    RATE_HZ,
    SHORT_DEADLINE_S,
    policy_root,
    try_policy,
)


def _lines(name: str, root: Path) -> list[str]:
    started = time.perf_counter()
    _, answer, variant = try_policy(root)
    took_s = time.perf_counter() - started
    stages = ", ".join(
        f"{stage} {latency['p50_ms']:.3g} ms ({latency['share']:.0%})"
        for stage, latency in (variant["stages"] or {}).items()
    )
    return [
        f"{name}: {answer['held']} ({answer['why']})",
        f"  {answer['sentence']}",
        f"  stage split (p50 per query, share of the chain): {stages}",
        f"  flags: {', '.join(variant['flags']) or 'none'}; localrun took {took_s:.1f} s",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="250 queries at the held rate")
    args = parser.parse_args()
    queries = 250 if args.smoke else tail_iterations("p99.9")
    with tempfile.TemporaryDirectory() as held, tempfile.TemporaryDirectory() as missed:
        lines = [
            *_lines(
                f"{RATE_HZ:g} Hz, deadline one period, {queries} queries",
                policy_root(
                    Path(held), queries=queries, deadline_s=1 / RATE_HZ, tail=not args.smoke
                ),
            ),
            *_lines(
                f"{RATE_HZ:g} Hz, deadline {SHORT_DEADLINE_S * 1e3:g} ms, {MISSED_QUERIES} queries",
                policy_root(Path(missed), queries=MISSED_QUERIES, deadline_s=SHORT_DEADLINE_S),
            ),
        ]
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
