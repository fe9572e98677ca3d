"""Where the example policy's query goes: each stage's share of the chain, and what the chain
costs over the model alone.

    python -m bench.pipeline_stages [--rounds N] [--iterations N]

Each round measures, in this process and one after the other, the policy between its
preprocess and postprocess (models/policy/, as `make models` builds them) and its model
alone on what the preprocess returns (a float CHW image, the scaled state, the tokens), each
with the runner's own run_variant at batch 1, fp32 on the CPU. The two alternate (the chain
first in even rounds) after one warming pair that is not counted; absolute times drift on
this shared machine, so the chain's p50 is compared with the model's pair by pair (the median
of the ratios and their range), as is the chain's model stage with the model alone: the cost
of timing the stages apart. The stage split is each stage's p50 and share, median over rounds.

`--smoke` runs one round of few iterations, for the test-suite (tests/bench/).
"""

import argparse
import statistics
import tempfile
from pathlib import Path

from contract.config import InputConfig, PhaseConfig, RunConfig
from contract.result import OkResult
from runner.run import RunPaths, run_variant
from tests.runner.test_pipeline import POLICY_DIR, policy_config

MODEL_INPUTS = (
    InputConfig(shape=(3, 32, 32), dtype="float32"),
    InputConfig(shape=(7,), dtype="float32"),
    InputConfig(shape=(8,), dtype="int64"),
)


def _configs(iterations: int) -> tuple[RunConfig, RunConfig]:
    rule = PhaseConfig(
        min_iterations=iterations, min_time_s=0.0, max_iterations=iterations, max_time_s=120.0
    )
    warmup = PhaseConfig(min_iterations=20, min_time_s=0.0, max_iterations=20, max_time_s=30.0)

    def shaped(config: RunConfig) -> RunConfig:
        variant = config.variants[0].model_copy(update={"batch_size": 1})
        update = {"measure": rule, "warmup": warmup, "variants": (variant,)}
        return config.model_copy(update=update)

    chain = shaped(policy_config())
    alone = shaped(policy_config(preprocess=None, postprocess=None, inputs=MODEL_INPUTS))
    return chain, alone


def _run(config: RunConfig, scratch: Path) -> OkResult:
    return run_variant(config, config.variants[0], RunPaths(POLICY_DIR, scratch))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--smoke", action="store_true")
    options = parser.parse_args()
    rounds, iterations = (1, 50) if options.smoke else (options.rounds, options.iterations)
    chain_config, alone_config = _configs(iterations)
    chains: list[OkResult] = []
    alones: list[OkResult] = []
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as scratch:
        if not options.smoke:
            _run(chain_config, Path(scratch))
            _run(alone_config, Path(scratch))
        for round_ in range(rounds):
            order = [(chain_config, chains), (alone_config, alones)]
            for config, kept in order if round_ % 2 == 0 else order[::-1]:
                kept.append(_run(config, Path(scratch)))
    print(f"policy chain at batch 1, fp32, CPU: {rounds} round(s) of {iterations} queries")
    print(f"{'stage':<12} {'p50 ms':>8} {'share':>6}")
    for name in ("preprocess", "model", "postprocess"):
        p50 = statistics.median(r.stages[name].p50_ms for r in chains if r.stages)
        share = statistics.median(r.stages[name].share for r in chains if r.stages)
        print(f"{name:<12} {p50:8.4f} {share:6.1%}")
    chain_p50 = statistics.median(r.latency.p50_ms for r in chains)
    print(f"{'chain':<12} {chain_p50:8.4f}")
    pairs = [
        (chain.latency.p50_ms / alone.latency.p50_ms, _model_stage(chain) / alone.latency.p50_ms)
        for chain, alone in zip(chains, alones, strict=True)
    ]
    for label, ratios in (
        ("chain / model alone", [ratio for ratio, _ in pairs]),
        ("model stage in the chain / model alone", [ratio for _, ratio in pairs]),
    ):
        print(
            f"{label}: {statistics.median(ratios):.3f} "
            f"(range {min(ratios):.3f}-{max(ratios):.3f}, {len(ratios)} pairs)"
        )


def _model_stage(result: OkResult) -> float:
    assert result.stages is not None
    return result.stages["model"].p50_ms


if __name__ == "__main__":
    main()
