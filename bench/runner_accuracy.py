"""Does the runner measure what torch measures? The runner against
`torch.utils.benchmark.Timer.blocked_autorange`, on CPU, for the same model, inputs and threads.

    python -m bench.runner_accuracy

The claim: like with like, the runner agrees with the Timer within 3 % (the whole 95 %
interval of the median ratio inside 0.97-1.03) on at least three models of clearly different
sizes. The runner side is `run_variant` itself, on a config.json built in-process as synth
would write it, so the whole path is measured: the sha256 check and `torch.export.load`, its
thread count, `inference_mode`, its warmup and stopping rule, the per-iteration
`perf_counter_ns` of `timed_step`, and its samples. The Timer calls the same program file on
the same seeded inputs (`draw_inputs`), under `inference_mode`, with the thread count the
runner chose.

Two statistics, each with its interval. The Timer's median is a median of per-block means;
for a model of ~0.1 ms it runs blocks of ~100 calls, so it tends to the mean of per-call
times, which exceeds their median when they are skewed right (the `mean/p50` column shows by
how much). So the runner's p50 against the Timer compares two different statistics, and the
table shows it only to say how far apart they are. Like with like is the median of the
runner's own block means, over blocks as long as the Timer's in the same round, computed from
the samples the result carries. The runner's own overhead is not in question: an empty
`timed_step` measures ~70 ns.

Interleaved, in short sides and many rounds, because this shared 2-core machine's speed moves
in steps lasting about a second: the per-0.25 s median of one fixed model read 123-250 us
across 30 windows in a row. Each model is measured ROUNDS times by both, the runner first on
even rounds and the Timer first on odd ones, each side timing for only ~40 ms so that both halves
of a pair mostly see the same step. Intervals are distribution-free 95 % intervals of the
median per-round ratio (`median_interval`). It is a report, not a test: it exits 0 whatever
the ratios are. `--smoke` measures tiny-mlp alone in 2 rounds, for the test-suite
(tests/bench/).
"""

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Final

import torch
from torch.utils.benchmark import Timer

from bench.timing import Pairing, interleaved
from contract.config import InputConfig, ModelConfig, PhaseConfig, RunConfig, VariantConfig
from contract.order_stats import median_interval
from models.architectures import TinyTransformer
from models.make_models import ModelRecipe, export_bytes
from runner import precision
from runner.inputs import as_variant, draw_inputs, id_bounds
from runner.loading import load_program
from runner.run import RunPaths, run_variant
from runner.threads import cpu_quota, thread_count, usable_cpus
from synth.digests import file_sha256

ROOT = Path(__file__).resolve().parent.parent
ROUNDS: Final = 120
BATCH: Final = 4
TOLERANCE: Final = 0.03
ENOUGH_MODELS: Final = 3
# ~40 ms of timing a side; with the runner's load and the Timer's block-size probe a round
# takes ~0.4 s, so 4 models x 121 rounds run for about 3 minutes. The minimum counts matter
# only on a machine slower than this one.
WARMUP: Final = PhaseConfig(min_iterations=3, min_time_s=0.01, max_iterations=10_000, max_time_s=5)
MEASURE: Final = PhaseConfig(
    min_iterations=5, min_time_s=0.04, max_iterations=1_000_000, max_time_s=10
)
TIMER_MIN_RUN_TIME_S: Final = 0.04
# The examples have 24k-69k parameters each; this one has 2.1M and runs for about 7 ms.
LARGE = ModelRecipe("transformer-d256-l4", partial(TinyTransformer, 256, 4, heads=4), (32, 16))
EXAMPLE_INPUTS: Final = {"tiny-mlp": (64,), "tiny-transformer": (32, 16), "tiny-cnn": (3, 64, 64)}


@dataclass
class Observed:
    """What each call of either side saw, warm-up call first, for the like-with-like ratio."""

    runner_durations_ns: list[list[int]] = field(default_factory=list)
    timer_medians_s: list[float] = field(default_factory=list)
    timer_block_sizes: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Agreement:
    """One model's two comparisons, and its size."""

    pairing: Pairing
    """The runner's p50 against the Timer's median of block means."""
    like_ratios: tuple[float, ...]
    """Per round: the median of the runner's block means, over blocks as long as the Timer's
    in that round, against the Timer's median: the same statistic on both sides."""
    block: int
    """The Timer's median block size (calls per block)."""
    parameters: int
    skew: float
    """The runner's median of mean/p50 over its rounds: how far a mean-like statistic (the
    Timer's, with large blocks) sits above the median on this model."""


def block_mean_median(durations_ns: Sequence[int], block: int) -> float:
    """The median of the means of consecutive `block`-long runs of durations, in seconds: what
    the Timer reports, computed from the runner's own samples."""
    means = [
        statistics.fmean(durations_ns[start : start + block]) / 1e9
        for start in range(0, len(durations_ns) - block + 1, block)
    ]
    return statistics.median(means) if means else statistics.fmean(durations_ns) / 1e9


def config_for(name: str, path: Path, shape: tuple[int, ...]) -> RunConfig:
    """The config.json synth would write for one fp32 CPU variant of the model at `path`."""
    return RunConfig(
        workflow="runner-accuracy",
        target="cpu",
        device_type="cpu",
        gpus=0,
        warmup=WARMUP,
        measure=MEASURE,
        models={name: ModelConfig(source="file", location=path.name, sha256=file_sha256(path))},
        variants=(
            VariantConfig(
                index=0,
                id="v000000000000",
                model=name,
                precision="fp32",
                quantization="none",
                batch_size=BATCH,
                inputs=(InputConfig(shape=shape, dtype="float32"),),
            ),
        ),
    )


def runner_median(
    config: RunConfig, paths: RunPaths, threads: int, skews: list[float], observed: Observed
) -> Callable[[], float]:
    """The runner's p50 in seconds; each call also appends its mean/p50 to `skews` and its
    samples to `observed`."""

    def measure() -> float:
        result = run_variant(config, config.variants[0], paths)
        assert result.environment is not None  # the runner always describes its environment
        assert result.samples is not None  # and always carries its samples
        if result.environment.threads != threads:
            raise RuntimeError(
                f"the runner used {result.environment.threads} threads, the Timer {threads}"
            )
        skews.append(result.latency.mean_ms / result.latency.p50_ms)
        observed.runner_durations_ns.append(result.samples.durations_ns())
        return result.latency.p50_ms / 1e3

    return measure


def timer_median(
    module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], threads: int, observed: Observed
) -> Callable[[], float]:
    timer = Timer(
        "module(*inputs)", globals={"module": module, "inputs": inputs}, num_threads=threads
    )

    def measure() -> float:
        # Entered around the Timer, not inside its statement, as the runner enters it around
        # its loop: a context manager per call would add microseconds to the smallest model.
        with torch.inference_mode():
            measured = timer.blocked_autorange(min_run_time=TIMER_MIN_RUN_TIME_S)
        observed.timer_medians_s.append(measured.median)
        observed.timer_block_sizes.append(measured.number_per_run)
        return measured.median

    return measure


def agreement(
    name: str, path: Path, shape: tuple[int, ...], threads: int, rounds: int = ROUNDS
) -> Agreement:
    config = config_for(name, path, shape)
    variant = config.variants[0]
    cpu = torch.device("cpu")
    program = load_program(path, config.models[name].sha256)
    module = precision.cast(program.module(), torch.float32, cpu)
    inputs = as_variant(draw_inputs(variant, id_bounds(program))[0], torch.float32, cpu)
    skews: list[float] = []
    observed = Observed()
    paths = RunPaths(models=path.parent, scratch=path.parent)
    pairing = interleaved(
        name,
        runner_median(config, paths, threads, skews, observed),
        timer_median(module, inputs, threads, observed),
        rounds,
    )
    # Index 0 of each list is interleaved's warm-up call; pair i is call i + 1 of each side.
    like = tuple(
        block_mean_median(durations, block) / timer
        for durations, block, timer in zip(
            observed.runner_durations_ns[1:],
            observed.timer_block_sizes[1:],
            observed.timer_medians_s[1:],
            strict=True,
        )
    )
    parameters = sum(p.numel() for p in module.parameters())
    block = round(statistics.median(observed.timer_block_sizes[1:]))
    return Agreement(pairing, like, block, parameters, statistics.median(skews))


def _agrees(ratios: Sequence[float]) -> bool:
    """The median ratio's whole 95 % interval lies within the tolerance of 1."""
    low, high = median_interval(ratios)
    return low >= 1 - TOLERANCE and high <= 1 + TOLERANCE


def _ratio_cell(ratios: Sequence[float]) -> str:
    low, high = median_interval(ratios)
    return f"{statistics.median(ratios):.3f} [{low:.3f}-{high:.3f}]"


def report(rows: list[Agreement], threads: int, rounds: int = ROUNDS) -> str:
    lines = [
        f"runner vs torch.utils.benchmark Timer: CPU, {threads} threads (the runner's "
        f"thread_count), batch {BATCH}, fp32, {rounds} interleaved rounds; ratios are medians "
        "of per-round ratios with their 95 % interval",
        "  p50/Timer: the runner's per-call median against the Timer's median of block means",
        "  like with like: the median of the runner's block means (blocks as long as the "
        "Timer's in the same round) against the Timer's",
        f"{'model':<22} {'params':>9} {'runner ms':>10} {'Timer ms':>9} {'block':>6} "
        f"{'p50/Timer':>22} {'like with like':>22} {'agree':>6} {'mean/p50':>8}",
    ]
    for row in rows:
        pairing = row.pairing
        lines.append(
            f"{pairing.name:<22} {row.parameters:>9,} "
            f"{pairing.candidate_s * 1e3:>10.4f} {pairing.baseline_s * 1e3:>9.4f} "
            f"{row.block:>6} {_ratio_cell(pairing.ratios):>22} "
            f"{_ratio_cell(row.like_ratios):>22} "
            f"{'yes' if _agrees(row.like_ratios) else 'no':>6} {row.skew:>8.3f}"
        )
    agreeing = sum(_agrees(row.like_ratios) for row in rows)
    medians = sum(_agrees(row.pairing.ratios) for row in rows)
    verdict = "holds" if agreeing >= ENOUGH_MODELS else "does not hold"
    lines.append(
        f"like with like, {agreeing} of {len(rows)} models agree within 3 % (interval and "
        f"all): the claim (at least {ENOUGH_MODELS}) {verdict} on this run; the runner's p50 "
        f"and the Timer's median agree so on {medians}, and differ by the skew (mean/p50) "
        "where the Timer's blocks are long"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.runner_accuracy", description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="tiny-mlp alone, 2 rounds")
    smoke = parser.parse_args().smoke
    rounds = 2 if smoke else ROUNDS
    began = time.perf_counter()
    threads = thread_count(cpu_quota(), usable_cpus())
    rows: list[Agreement] = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        for name in EXAMPLE_INPUTS:
            shutil.copy(ROOT / "models" / "examples" / f"{name}.pt2", folder)
        cases = dict(list(EXAMPLE_INPUTS.items())[:1]) if smoke else dict(EXAMPLE_INPUTS)
        if not smoke:
            (folder / f"{LARGE.name}.pt2").write_bytes(export_bytes(LARGE))
            cases[LARGE.name] = LARGE.sample_shape
        for name, shape in cases.items():
            rows.append(agreement(name, folder / f"{name}.pt2", shape, threads, rounds))
    print(report(rows, threads, rounds))
    print(f"({time.perf_counter() - began:.0f} s)")


if __name__ == "__main__":
    main()
