"""Which runtime is fastest on a CPU, and what converting to it costs: each example model and
precision measured eager, inductor, aotinductor and onnxruntime in one pod, in the runner's
interleaved rounds, as pods run them (localrun's process executor, one CPU per pod).

    python -m bench.runtimes [--measure-s 2.0] [--batch 8] [--smoke]

The models are the examples (tiny-mlp, tiny-cnn, tiny-transformer) at fp32 and fp16 (the
precisions ONNX Runtime's CPU provider takes), unquantized. Each pod runs one combination in
all four runtimes, interleaved (benchmark.interleave): every pair of runtimes is compared
round by round over the same 16 rounds (`rounds.medians_ns`), the median of the round ratios
with the sign test's 95 % interval, so the host's drift falls on both alike. Beside them:
each runtime's conversion (`timings.conversion_s`: inductor's compile, aotinductor's export,
build and load, onnxruntime's export and session; the first in a process pays the imports)
and what ran (`applied.runtime_proof`), and the share of the timed loops the pod waited in
the run queue (`contention.run_queue_wait_s`). `--smoke` runs tiny-mlp at fp32, eager against
onnxruntime, for 0.05 s, for the test-suite (tests/bench/).
"""

import argparse
import tempfile
from itertools import combinations
from pathlib import Path
from typing import Final

from bench.grouping import EXAMPLES, INPUTS, Cells, run_sweep, sweep
from contract.order_stats import paired_ratio
from contract.result import OkResult

RUNTIMES: Final = ("eager", "inductor", "aotinductor", "onnxruntime")
FULL: Final = Cells(
    models=tuple(INPUTS), precisions=("fp32", "fp16"), batches=(8,), runtimes=RUNTIMES
)
SMOKE: Final = Cells(
    models=("tiny-mlp",), precisions=("fp32",), batches=(2,), runtimes=("eager", "onnxruntime")
)


def _ratio(a: OkResult, b: OkResult) -> str:
    """a / b over the rounds both ran in."""
    if a.rounds is None or b.rounds is None or a.rounds.id != b.rounds.id:
        raise RuntimeError(f"{a.variant} and {b.variant} were not measured in the same rounds")
    ratio, low, high = paired_ratio(a.rounds.medians_ns, b.rounds.medians_ns)
    return f"{ratio:.2f} [{low:.2f}-{high:.2f}]"


def _runtime(result: OkResult) -> str:
    if result.variant is None:
        raise RuntimeError("a result without its variant")
    return str(result.variant.runtime)


def _waited(result: OkResult) -> str:
    """The share of the pod's timed loops its process spent runnable but off the CPU: the
    host's load lengthens a long call more than a short one (a 9 ms call spans scheduler
    slices a 1.4 ms one fits in), so a ratio between runtimes holds only where this is near
    zero (docs/decisions/runtime.md: the 19x on tiny-cnn was 6.8x on a quiet host)."""
    used = result.contention
    if used is None or used.run_queue_wait_s is None or used.wall_s == 0:
        return "run queue not read"
    return f"run queue {used.run_queue_wait_s / used.wall_s:.0%} of the timed loops"


def rows(group: list[OkResult]) -> list[str]:
    """One combination's lines: each runtime's p50, conversion (of it, the load of what was
    built) and proof, then every pair's ratio."""
    first = group[0].variant
    assert first is not None
    lines = [f"{first.model} {first.precision} batch {first.batch_size}  ({_waited(group[0])})"]
    for result in group:
        timings, applied = result.timings, result.applied
        conversion = timings.converting_s if timings else None
        load = timings.runtime_load_s if timings else None
        converted = f"{conversion:7.1f}" if conversion is not None else "      -"
        loaded = f"{load:6.3f}" if load is not None else "     -"
        proof = ", ".join((applied.runtime_proof or []) if applied else [])[:70]
        lines.append(
            f"  {_runtime(result):<12} {result.latency.p50_ms:9.3f} ms  conversion {converted} s"
            f" (load {loaded} s)  {proof}"
        )
    for a, b in combinations(group, 2):
        lines.append(f"  {_runtime(b):>12} / {_runtime(a):<12} {_ratio(b, a):>19}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.runtimes", description=__doc__)
    parser.add_argument("--measure-s", type=float, default=2.0)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--smoke", action="store_true", help="tiny-mlp fp32, 0.05 s")
    args = parser.parse_args()
    cells = Cells(**{**FULL.__dict__, "batches": (args.batch,)})
    if args.smoke:
        cells, args.measure_s = SMOKE, 0.05
    per_pod = len(cells.runtimes)
    print(
        f"runtime vs runtime, paired over 16 interleaved rounds ({args.measure_s:g} s "
        f"measurement, one CPU per pod, {per_pod} runtimes per pod)",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="bench-runtimes-") as scratch:
        config = sweep(args.measure_s, per_pod, cells, models=EXAMPLES, interleave=True)
        results = run_sweep(config, Path(scratch), EXAMPLES).results
    for start in range(0, len(results), per_pod):
        print("\n".join(rows(results[start : start + per_pod])), flush=True)


if __name__ == "__main__":
    main()
