"""What compiling buys on a CPU: each model, precision and quantization measured eager and
compiled with inductor (`compile: inductor`) in the same pod, in the runner's interleaved
rounds, as pods run them (localrun's process executor, one CPU per pod).

    python -m bench.compiled [--measure-s 2.0] [--batch 8] [--smoke]

The models are the examples (tiny-mlp, tiny-cnn, tiny-transformer) and transformer-d256-l4
(2.1 M parameters, exported here as bench/runner_accuracy.py does), at fp32 and bf16, without
quantization and with int8-dynamic and int8-weight-only (torchao's; int8-dynamic is made for
torch.compile, which fuses its per-call quantization). Each pod runs one combination eager
and compiled, interleaved (benchmark.interleave): the compiled variant's `paired` ratio is
compiled / eager over 16 rounds, with the sign test's 95 % interval, so the host's drift falls
on both alike. Beside it: each side's p50, the compile's time (`timings.compile_s`: the first
compile in a process pays inductor's imports), and each side's error against the untouched
program's fp32 outputs (1 - cosine, max relative error). `--smoke` runs tiny-mlp at fp32
for 0.05 s, for the test-suite (tests/bench/).
"""

import argparse
import os
import tempfile
from pathlib import Path
from typing import Final

from bench.grouping import EXAMPLES, INPUTS, Cells, run_sweep, sweep
from bench.runner_accuracy import LARGE
from contract.result import OkResult
from models.make_models import export_bytes

FULL: Final = Cells(
    models=(*INPUTS, LARGE.name),
    precisions=("fp32", "bf16"),
    batches=(8,),
    quantizations=("none", "int8-dynamic", "int8-weight-only"),
    runtimes=("eager", "inductor"),
)
SMOKE: Final = Cells(
    models=("tiny-mlp",), precisions=("fp32",), batches=(2,), runtimes=("eager", "inductor")
)
SHAPES: Final = {**INPUTS, LARGE.name: LARGE.sample_shape}


def _models(folder: Path, cells: Cells) -> Path:
    """The example models, and transformer-d256-l4 where `cells` has it, in one folder, as a
    pod's /models."""
    folder.mkdir()
    for example in EXAMPLES.glob("*.pt2"):
        os.symlink(example, folder / example.name)
    if LARGE.name in cells.models:
        (folder / f"{LARGE.name}.pt2").write_bytes(export_bytes(LARGE))
    return folder


def _error(result: OkResult) -> str:
    accuracy = result.accuracy
    if accuracy is None or accuracy.cosine is None or accuracy.max_rel_error is None:
        return "not measured"
    return f"{1 - accuracy.cosine:8.1e} {accuracy.max_rel_error:8.1e}"


def row(eager: OkResult, compiled: OkResult) -> str:
    """One combination's line: both p50s, the paired ratio, the compile, both errors."""
    variant, paired, timings = compiled.variant, compiled.paired, compiled.timings
    if variant is None or paired is None or timings is None or timings.compile_s is None:
        raise RuntimeError(f"{compiled.variant}: no pairing or compile time in its result")
    ratio = f"{paired.ratio:.2f} [{paired.low:.2f}-{paired.high:.2f}]"
    return (
        f"{variant.model:<20} {variant.precision:<5} {variant.quantization:<17} "
        f"{eager.latency.p50_ms:9.3f} {compiled.latency.p50_ms:9.3f} {ratio:>19} "
        f"{timings.compile_s:7.1f}  {_error(eager)}  {_error(compiled)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.compiled", description=__doc__)
    parser.add_argument("--measure-s", type=float, default=2.0)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--smoke", action="store_true", help="tiny-mlp fp32, 0.05 s")
    args = parser.parse_args()
    cells = Cells(**{**FULL.__dict__, "batches": (args.batch,)})
    if args.smoke:
        cells, args.measure_s = SMOKE, 0.05
    print(
        f"inductor / eager, paired over 16 interleaved rounds ({args.measure_s:g} s "
        f"measurement, batch {cells.batches[0]}, one CPU per pod)\n"
        f"{'model':<20} {'prec':<5} {'quantization':<17} {'eager ms':>9} {'ind. ms':>9} "
        f"{'inductor / eager':>19} {'compile':>7}  {'eager 1-cos, rel':>17}  "
        f"{'inductor 1-cos, rel':>17}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="bench-compiled-") as scratch:
        models = _models(Path(scratch) / "models", cells)
        config = sweep(args.measure_s, 2, cells, models=models, shapes=SHAPES, interleave=True)
        results = run_sweep(config, Path(scratch), models).results
    for eager, compiled in zip(results[::2], results[1::2], strict=True):
        print(row(eager, compiled))


if __name__ == "__main__":
    main()
