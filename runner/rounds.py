"""Interleaved rounds (config.json `interleave`): the variants of one model in a pod take
turns in the timed loop, so that what drifts during it (clocks, caches, neighbours) falls on
all of them alike, and each later variant is compared with the first round by round. Every
variant's result also keeps its median of each round (`Rounds`), so that the report can
compare any two variants of the loop round by round, and keep doing so across repeats.

Every variant runs one block of iterations per round; the order is reversed on odd rounds
(A B, B A, A B, ...: ABBA), so a drift that is linear over two rounds falls on each side
equally, where A B A B would always give B the later moment.
"""

import math
import secrets
import statistics
from collections.abc import Sequence
from typing import Final

from contract.config import PhaseConfig, VariantConfig
from contract.order_stats import paired_ratio
from contract.result import Paired, Rounds, StoppedBy
from runner.measure import PhaseOutcome, Step, Tick, run_phase

ROUNDS: Final = 16
"""Rounds of a timed loop, fewer only when max_iterations is below this. 16 round ratios give
the sign test's 95 % interval of their median at ranks 4 and 13; more rounds narrow it
slowly, while each round's block, and so its median, gets shorter."""


def runs(group: Sequence[VariantConfig], interleave: bool) -> list[tuple[VariantConfig, ...]]:
    """What a pod measures in turn: each variant alone, or with `interleave` the group's
    variants of one model together (in the group's order, placed where the model's first
    variant is)."""
    if not interleave:
        return [(variant,) for variant in group]
    by_model: dict[str, list[VariantConfig]] = {}
    for variant in group:
        by_model.setdefault(variant.model, []).append(variant)
    return [tuple(variants) for variants in by_model.values()]


def round_count(rule: PhaseConfig) -> int:
    """The rounds of a timed loop under `rule`: each block holds at least one iteration."""
    return min(ROUNDS, rule.max_iterations)


def block_rule(rule: PhaseConfig, rounds: int) -> PhaseConfig:
    """One block's share of `rule`, so that a variant's blocks together meet its minimums and
    stay within its maximums, as its single loop would."""
    return PhaseConfig(
        min_iterations=math.ceil(rule.least_iterations / rounds),
        min_time_s=rule.min_time_s / rounds,
        max_iterations=rule.max_iterations // rounds,
        max_time_s=rule.max_time_s / rounds,
    )


def round_order(variants: int, round_number: int) -> list[int]:
    """The positions of `variants` in the order round `round_number` runs them: ABBA."""
    order = list(range(variants))
    return order[::-1] if round_number % 2 else order


def loop_rule(rule: PhaseConfig, variants: int) -> PhaseConfig:
    """Every block's rule of a loop of `variants` under `rule` added up: what the whole loop
    amounts to, for telling how far it is."""
    rounds = round_count(rule)
    block = block_rule(rule, rounds)
    blocks = rounds * variants
    return PhaseConfig(
        min_iterations=max(block.min_iterations, 1) * blocks,
        min_time_s=block.min_time_s * blocks,
        max_iterations=block.max_iterations * blocks,
        max_time_s=block.max_time_s * blocks,
    )


def run_rounds(
    steps: Sequence[Step], rule: PhaseConfig, tick: Tick | None = None
) -> list[list[PhaseOutcome]]:
    """Each step's blocks, round by round, under the timed loop's `rule`; `tick` is told the
    whole loop's iterations and seconds so far."""
    rounds = round_count(rule)
    block = block_rule(rule, rounds)
    blocks: list[list[PhaseOutcome]] = [[] for _ in steps]
    ran, spent_s = 0, 0.0
    for round_number in range(rounds):
        for position in round_order(len(steps), round_number):
            outcome = run_phase(steps[position], block, at_least=1, tick=_after(tick, ran, spent_s))
            blocks[position].append(outcome)
            ran += len(outcome.durations_ns)
            spent_s += outcome.elapsed_s
    return blocks


def _after(tick: Tick | None, ran: int, spent_s: float) -> Tick | None:
    """`tick` for a block that begins after `ran` iterations and `spent_s` of the loop."""
    if tick is None:
        return None
    return lambda done, elapsed_s: tick(ran + done, spent_s + elapsed_s)


def joined(blocks: Sequence[PhaseOutcome]) -> PhaseOutcome:
    """A variant's blocks as one timed loop: its samples, time, and the first reason a block
    stopped other than reaching its minimums."""
    early = (block.stopped_by for block in blocks if block.stopped_by != "minimums")
    stopped_by: StoppedBy = next(early, "minimums")
    return PhaseOutcome(
        [duration for block in blocks for duration in block.durations_ns],
        sum(block.elapsed_s for block in blocks),
        stopped_by,
    )


def block_medians(blocks: Sequence[PhaseOutcome]) -> list[float]:
    """A variant's median in each round: what a round compares of it."""
    return [float(statistics.median(block.durations_ns)) for block in blocks]


def round_shares(blocks: Sequence[Sequence[PhaseOutcome]]) -> list[Rounds]:
    """Every variant's block medians under one name for the loop's rounds, so that the report
    can pair any two of them, not only each with the first (`paired`).

    The name is random rather than derived from the pod: a retried pod runs the same
    variants again in other rounds, and the collector may keep one variant from each attempt;
    48 random bits never name two loops alike among the few a report compares."""
    name = secrets.token_hex(6)
    return [Rounds(id=name, medians_ns=block_medians(own)) for own in blocks]


def paired(
    blocks: Sequence[PhaseOutcome], reference: Sequence[PhaseOutcome], against: str
) -> Paired:
    """`blocks` against the `reference` variant's blocks of the same rounds."""
    ratio, low, high = paired_ratio(block_medians(blocks), block_medians(reference))
    return Paired(against=against, rounds=len(blocks), ratio=ratio, low=low, high=high)
