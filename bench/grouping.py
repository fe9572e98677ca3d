"""What running several variants per pod saves: a 24-variant CPU sweep through localrun's
process executor, one variant per pod against grouped pods (scheduling.variants_per_pod).

    python -m bench.grouping [--measure-s 1.0] [--per-pod 6] [--pairs 3] [--grouped-only]

The sweep is the three example models x fp32, bf16 x batch 1, 2, 4, 8, measured for
`--measure-s` each (min_time, after a 0.1 s warm-up), every pod pinned to one CPU as a
`cpu: 1` limit pins it. Its config.json is the same on both sides but for `groups`, which
synth's own `pod_groups` makes, so both sides run the same variants. The sides alternate, A
B A B, and are compared pair by pair (shared/notes/measurement.md): total wall time, the
overhead share ((wall - measurement) / wall, where measurement is each result's timed loop
alone: a warm-up measures nothing, so it is overhead like a start or a load), and the ratio
of the wall times with its range over the pairs. `--grouped-only` runs the grouped side
alone, `--pairs` times, for its overhead share in a minute rather than the one-per-pod
side's five: no ratio then, since that needs the baseline in the same run. `--smoke` runs
two variants of tiny-mlp for 0.01 s each, one pair, for the test-suite (tests/bench/).
"""

import argparse
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from bench.timing import Pairing, pairing, table
from contract.config import InputConfig, ModelConfig, PhaseConfig, RunConfig, VariantConfig
from contract.result import OkResult, Timings
from localrun.pod import Mount, PodPlan
from localrun.process import run_process
from localrun.workflow import read_outcome
from synth.digests import digest, file_sha256
from synth.run_config import pod_groups

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES: Final = ROOT / "models" / "examples"
INPUTS: Final = {"tiny-cnn": (3, 64, 64), "tiny-mlp": (64,), "tiny-transformer": (32, 16)}
"""Each example model's input shape per sample."""
POD_TIMEOUT_S: Final = 600.0


@dataclass(frozen=True)
class Cells:
    """The sweep's matrix: every model at every precision and batch."""

    models: tuple[str, ...]
    precisions: tuple[str, ...]
    batches: tuple[int, ...]
    quantizations: tuple[str, ...] = ("none",)
    runtimes: tuple[str, ...] = ("eager",)


FULL: Final = Cells(models=tuple(INPUTS), precisions=("fp32", "bf16"), batches=(1, 2, 4, 8))
SMOKE: Final = Cells(models=("tiny-mlp",), precisions=("fp32",), batches=(1, 2))


def sweep(
    measure_s: float,
    per_pod: int,
    cells: Cells = FULL,
    *,
    models: Path = EXAMPLES,
    shapes: Mapping[str, tuple[int, ...]] = INPUTS,
    interleave: bool = False,
) -> RunConfig:
    """The sweep's variants (24 in FULL), grouped `per_pod` to a pod (1: no groups), of the
    models in the folder `models` whose input shapes per sample `shapes` gives."""
    variants = [
        VariantConfig(
            index=index,
            id="v" + digest([model, precision, quantization, batch, how])[:12],
            model=model,
            precision=precision,
            quantization=quantization,
            batch_size=batch,
            runtime=how,
            inputs=(InputConfig(shape=shapes[model], dtype="float32"),),
        )
        for index, (model, precision, quantization, batch, how) in enumerate(
            (m, p, q, b, c)
            for m in cells.models
            for p in cells.precisions
            for q in cells.quantizations
            for b in cells.batches
            for c in cells.runtimes
        )
    ]
    return RunConfig(
        workflow="bench-grouping",
        target="cpu",
        device_type="cpu",
        gpus=0,
        warmup=PhaseConfig(min_iterations=1, min_time_s=0.1, max_iterations=10**6, max_time_s=5),
        measure=PhaseConfig(
            min_iterations=10, min_time_s=measure_s, max_iterations=10**7, max_time_s=60
        ),
        models={m: _model(models, m) for m in cells.models},
        variants=tuple(variants),
        groups=pod_groups([v.model for v in variants], per_pod),
        interleave=interleave,
    )


def _model(folder: Path, name: str) -> ModelConfig:
    return ModelConfig(
        source="file", location=f"{name}.pt2", sha256=file_sha256(folder / f"{name}.pt2")
    )


def _plan(config_dir: Path, index: int, workdir: Path, models: Path) -> PodPlan:
    return PodPlan(
        job_name="bench-grouping",
        index=index,
        workdir=workdir,
        image="local",
        env={
            "CONFIG_PATH": "/config/config.json",
            "MODEL_PATH": "/models",
            "JOB_COMPLETION_INDEX": str(index),
        },
        mounts=(
            Mount(config_dir, "/config", read_only=True),
            Mount(models, "/models", read_only=True),
        ),
        images=(),
        tmpfs=("/tmp",),
        run_as_user=0,
        run_as_group=0,
        read_only_root=False,
        cpu_limit=1.0,
        memory_limit_bytes=None,
        gpus=0,
        termination_message_path="/dev/termination-log",
    )


@dataclass(frozen=True)
class Sweep:
    """One side's run: its wall time and every variant's timings, in the order they ran."""

    wall_s: float
    timings: list[tuple[int, str, Timings]]
    """(pod, model, timings) per variant."""
    pod_walls_s: list[float]
    """Each pod's wall time, start to exit, by index."""
    results: list[OkResult] = field(default_factory=list)
    """Every variant's result, in the order they ran."""

    @property
    def measured_s(self) -> float:
        """The timed loops, what the overhead share leaves out."""
        return sum(t.measure.seconds for _, _, t in self.timings)

    def parts(self) -> dict[str, float]:
        """The overhead in the results' own timings; what they do not time is the rest."""
        # A pod loads each of its models once, for the first of its variants.
        firsts = {(pod, model): t.load_s for pod, model, t in reversed(self.timings)}
        loads = sum(t.load_s for _, _, t in self.timings)
        parts = {
            "first load of each model (+ its copy)": sum(firsts.values()),
            "module copies of the later variants": loads - sum(firsts.values()),
            "precision, quantization, inputs": sum(t.prepare_s for _, _, t in self.timings),
            "cold first iterations": sum(t.first_iteration_ms for _, _, t in self.timings) / 1e3,
            "warm-ups": sum(t.warmup.seconds for _, _, t in self.timings),
            "accuracy pass": sum(t.accuracy_s or 0 for _, _, t in self.timings),
        }
        overhead = self.wall_s - self.measured_s
        return parts | {"rest: start, imports, results, exit": overhead - sum(parts.values())}


def run_sweep(config: RunConfig, scratch: Path, models: Path = EXAMPLES) -> Sweep:
    """Every pod of `config`, its models in the folder `models`, one after another."""
    config_dir = scratch / "config"
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "config.json").write_text(config.model_dump_json(), encoding="utf-8")
    timings: list[tuple[int, str, Timings]] = []
    results: list[OkResult] = []
    pod_walls: list[float] = []
    began = time.perf_counter()
    for index in range(config.completions):
        workdir = scratch / f"pod-{index}"
        workdir.mkdir(parents=True, exist_ok=True)
        plan = _plan(config_dir, index, workdir, models)
        started = time.perf_counter()
        outcome = read_outcome(plan, run_process(plan, POD_TIMEOUT_S))
        pod_walls.append(time.perf_counter() - started)
        for result in outcome.results:
            if not isinstance(result, OkResult) or not (result.timings and result.variant):
                raise RuntimeError(f"pod {index} did not measure: {result}")
            timings.append((index, result.variant.model, result.timings))
            results.append(result)
    wall = time.perf_counter() - began
    if len(timings) != len(config.variants):
        raise RuntimeError(f"{len(timings)} of {len(config.variants)} variants reported")
    return Sweep(wall, timings, pod_walls, results)


def _spread(values: list[float]) -> str:
    """The median share and its range."""
    ordered = sorted(values)
    return f"{ordered[len(ordered) // 2]:.0%} [{ordered[0]:.0%}-{ordered[-1]:.0%}]"


def _grouped_only(grouped: RunConfig, runs: int) -> None:
    """The grouped side alone: each run's wall, measurement, overhead and its parts."""
    shares = []
    with tempfile.TemporaryDirectory(prefix="bench-grouping-") as scratch:
        for run in range(runs):
            sweep = run_sweep(grouped, Path(scratch) / str(run))
            overhead = sweep.wall_s - sweep.measured_s
            shares.append(overhead / sweep.wall_s)
            parts = ", ".join(f"{name} {s:.2f}" for name, s in sweep.parts().items())
            print(
                f"run {run + 1}: grouped {sweep.wall_s:.1f} s ({sweep.measured_s:.1f} s "
                f"in timed loops, overhead {overhead:.1f} s: {parts})",
                flush=True,
            )
    print(f"overhead share (wall - timed loops) / wall: grouped {_spread(shares)}")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.grouping", description=__doc__)
    parser.add_argument("--measure-s", type=float, default=1.0)
    parser.add_argument("--per-pod", type=int, default=6)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--grouped-only", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="2 variants, 0.01 s, one pair")
    args = parser.parse_args()
    cells = FULL
    if args.smoke:
        cells, args.measure_s, args.per_pod, args.pairs = SMOKE, 0.01, 2, 1
    alone = sweep(args.measure_s, 1, cells)
    grouped = sweep(args.measure_s, args.per_pod, cells)
    if args.grouped_only:
        _grouped_only(grouped, args.pairs)
        return
    walls: list[tuple[float, float]] = []
    shares: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory(prefix="bench-grouping-") as scratch:
        for pair in range(args.pairs):
            sides = {}
            # Alternate which side goes first, so neither always runs in the other's wake.
            order = ("grouped", "alone") if pair % 2 == 0 else ("alone", "grouped")
            for side in order:
                config = grouped if side == "grouped" else alone
                ran = run_sweep(config, Path(scratch) / f"{pair}-{side}")
                sides[side] = ran.wall_s, ran.measured_s
            (g_wall, g_measured), (a_wall, a_measured) = sides["grouped"], sides["alone"]
            walls.append((g_wall, a_wall))
            shares.append(((g_wall - g_measured) / g_wall, (a_wall - a_measured) / a_wall))
            print(
                f"pair {pair + 1}: grouped {g_wall:.1f} s ({g_measured:.1f} s in timed loops), "
                f"one per pod {a_wall:.1f} s ({a_measured:.1f} s in timed loops)",
                flush=True,
            )
    rows: list[Pairing] = [pairing("wall time of the sweep", walls)]
    print()
    print(
        table(
            f"{len(grouped.variants)} variants, {args.measure_s:g} s measurement each, "
            f"{args.per_pod} per pod "
            f"against 1 per pod, {args.pairs} interleaved pairs",
            "1/pod",
            rows,
        )
    )
    print(
        f"overhead share (wall - timed loops) / wall: grouped {_spread([g for g, _ in shares])}, "
        f"one per pod {_spread([a for _, a in shares])}"
    )


if __name__ == "__main__":
    main()
