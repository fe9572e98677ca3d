"""What each CPU quantization buys and costs: its speed against the same program unquantized,
and its error against the fp32 program, per model.

    python -m bench.quantization [--rounds N] [--against REV] [--smoke]

For each model (the examples tiny-mlp and tiny-transformer, and transformer-d256-l4, 2.1 M
parameters, exported here as bench/runner_accuracy.py does) and each quantization the catalogue
offers on a CPU, the program is prepared as the runner prepares it (cast, then
`runner.quantize`), at fp32 and bf16. Error: cosine similarity and max abs error (over the
reference's largest magnitude) of the outputs against the unquantized fp32 program's, on the
same seeded batch of 8. Speed, on one thread: ROUNDS interleaved rounds of ~40 ms a side
against the unquantized program at the same precision, which side goes first alternating,
each side's median call, and the median of the per-round ratios (quantized / unquantized)
with its sign-test 95 % interval (shared/notes/measurement.md: only paired, interleaved
ratios hold on this machine). One thread, because on a shared host a second thread's wait
for a descheduled sibling lands in every call of a small model.

`--against REV` compares, instead, torchao's int8 quantizations with the rewrite the runner
had at git revision REV (its runner/quantize.py, loaded from git): how the numbers changed
when the runner adopted torchao (docs/runner.md). It is a report, not a test: it exits 0
whatever the ratios are. `--smoke` measures tiny-mlp at fp32 in 2 rounds, for the test-suite.
"""

import argparse
import importlib.util
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

import torch

from bench.runner_accuracy import LARGE
from contract.order_stats import median_interval
from contract.variant import Precision, Quantization
from models.make_models import export_bytes
from runner import precision, quantize
from synth.catalogue import DEVICE_TYPES

ROOT: Final = Path(__file__).resolve().parent.parent
EXAMPLES: Final = ROOT / "models" / "examples"
SHAPES: Final = {"tiny-mlp": (64,), "tiny-transformer": (32, 16), LARGE.name: LARGE.sample_shape}
BATCH: Final = 8
SIDE_S: Final = 0.04
"""How long each side of a round times, so that both halves of a pair see the same host."""
CPU: Final = torch.device("cpu")

Prepare = Callable[[torch.fx.GraphModule], None]


def _program(name: str, folder: Path) -> Path:
    if (EXAMPLES / f"{name}.pt2").exists():
        return EXAMPLES / f"{name}.pt2"
    path = folder / f"{name}.pt2"
    path.write_bytes(export_bytes(LARGE))
    return path


def _prepared(path: Path, dtype: torch.dtype, prepare: Prepare) -> torch.fx.GraphModule:
    module: torch.fx.GraphModule = torch.export.load(path).module().to(dtype=dtype)
    prepare(module)
    return module


def _errors(output: torch.Tensor, reference: torch.Tensor) -> tuple[float, float]:
    out, ref = output.float().flatten(), reference.float().flatten()
    cosine = float(torch.nn.functional.cosine_similarity(out, ref, dim=0))
    return cosine, float((out - ref).abs().max() / ref.abs().max())


def _side(module: torch.fx.GraphModule, x: torch.Tensor, calls: int) -> float:
    """The median seconds of `calls` calls, each timed alone: a call that another process
    delayed moves it little, where it would move a block's mean."""
    durations = []
    for _ in range(calls):
        began = time.perf_counter_ns()
        module(x)
        durations.append(time.perf_counter_ns() - began)
    return statistics.median(durations) / 1e9


def _ratios(
    candidate: torch.fx.GraphModule, baseline: torch.fx.GraphModule, x: torch.Tensor, rounds: int
) -> list[float]:
    """Per-round ratios of candidate over baseline median seconds per call, interleaved."""
    per_call = max(_side(candidate, x, 3), _side(baseline, x, 3))
    calls = max(3, int(SIDE_S / per_call))
    ratios = []
    for round_ in range(rounds):
        if round_ % 2 == 0:
            first = _side(candidate, x, calls)
            ratios.append(first / _side(baseline, x, calls))
        else:
            second = _side(baseline, x, calls)
            ratios.append(_side(candidate, x, calls) / second)
    return ratios


def _cell(ratios: list[float]) -> str:
    low, high = median_interval(ratios)
    return f"{statistics.median(ratios):.2f} [{low:.2f}-{high:.2f}]"


def _unquantized(_: torch.fx.GraphModule) -> None:
    """The baseline of the default report: the program as it is."""


def _old_rewrite(revision: str, scheme: Quantization) -> Prepare:
    """`scheme` as runner/quantize.py at `revision` applied it (its `quantize(module, scheme)`)."""
    source = subprocess.run(
        ["git", "show", f"{revision}:runner/quantize.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as file:
        file.write(source)
    spec = importlib.util.spec_from_file_location("old_quantize", file.name)
    assert spec is not None and spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    return lambda module: old.quantize(module, scheme) and None


def _cases(against: str | None, smoke: bool) -> list[tuple[Quantization, Prepare]]:
    """Each quantization measured, with what its runner preparation is compared with."""
    offered = sorted(DEVICE_TYPES["cpu"].quantizations - {Quantization.NONE})
    cases: list[tuple[Quantization, Prepare]]
    if against is None:
        cases = [(q, _unquantized) for q in offered]
    else:
        cases = [(q, _old_rewrite(against, q)) for q in offered if q.startswith("int8")]
    return cases[:1] if smoke else cases


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.quantization", description=__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--against", metavar="REV", help="compare torchao's int8 with REV's")
    parser.add_argument("--smoke", action="store_true", help="tiny-mlp at fp32, 2 rounds")
    arguments = parser.parse_args()
    smoke, rounds = arguments.smoke, 2 if arguments.smoke else arguments.rounds
    torch.set_num_threads(1)
    models = ["tiny-mlp"] if smoke else list(SHAPES)
    dtypes = [Precision.FP32] if smoke else [Precision.FP32, Precision.BF16]
    sides = ("torchao", f"rewrite@{arguments.against}") if arguments.against else ("q", "none")
    print(f"CPU quantization, 1 thread, batch {BATCH}, {rounds} rounds")
    print(f"{'model':<21}{'prec':<6}{'quantization':<18}{'layers':>7}{'share':>7}"
          f"{'cos ' + sides[0]:>14}{'err':>8}{'cos ' + sides[1]:>22}{'err':>8}"
          f"  {sides[0]} / {sides[1]} time [95 %]")  # fmt: skip
    with tempfile.TemporaryDirectory() as folder, torch.inference_mode():
        for model in models:
            path = _program(model, Path(folder))
            generator = torch.Generator().manual_seed(1)
            x = torch.randn(BATCH, *SHAPES[model], generator=generator)
            reference = torch.export.load(path).module()(x)
            for name in dtypes:
                dtype = precision.compute_dtype(name)
                for scheme, baseline_prep in _cases(arguments.against, smoke):
                    module: torch.fx.GraphModule = torch.export.load(path).module()
                    candidate = module.to(dtype=dtype)
                    report = quantize.quantize(candidate, scheme, CPU)
                    baseline = _prepared(path, dtype, baseline_prep)
                    xs = x.to(dtype)
                    cos_c, err_c = _errors(candidate(xs), reference)
                    cos_b, err_b = _errors(baseline(xs), reference)
                    share = report.quantized_weight_share or 0.0
                    print(f"{model:<21}{name:<6}{scheme:<18}"
                          f"{report.quantized_layers:>3}/{report.linear_layers:<3}{share:>7.2f}"
                          f"{cos_c:>14.6f}{err_c:>8.4f}{cos_b:>22.6f}{err_b:>8.4f}  "
                          f"{_cell(_ratios(candidate, baseline, xs, rounds))}",
                          flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
