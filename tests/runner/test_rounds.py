"""Interleaved rounds (config.json `interleave`): the schedule is ABBA, a variant's blocks
stay within its measure phase's bounds, and a pod running two example models at fp32 and
bf16 pairs each bf16 variant with its model's fp32 one."""

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from contract.config import PhaseConfig
from contract.errors import ExitCode
from contract.order_stats import paired_ratio
from contract.result import (
    TERMINATION_LOG_LIMIT,
    ErrorResult,
    OkResult,
    OmittedResult,
    Paired,
    Rounds,
    Validity,
    parse_group_message,
    parse_result,
    termination_message,
)
from localcluster.results import ok_result
from runner.__main__ import main
from runner.measure import PhaseOutcome
from runner.rounds import (
    ROUNDS,
    block_rule,
    joined,
    paired,
    round_count,
    round_order,
    round_shares,
    run_rounds,
    runs,
)
from runner.stats import summarize
from tests.runner.conftest import EXAMPLES, QUICK, group_config, group_variant

SHORT = PhaseConfig(min_iterations=32, min_time_s=0.0, max_iterations=64, max_time_s=5.0)


def test_rounds_alternate_abba() -> None:
    assert [round_order(2, r) for r in range(4)] == [[0, 1], [1, 0], [0, 1], [1, 0]]
    assert [round_order(3, r) for r in range(2)] == [[0, 1, 2], [2, 1, 0]]


def _recording(name: str, duration_ns: int, calls: list[str]) -> Callable[[], int]:
    def step() -> int:
        calls.append(name)
        return duration_ns

    return step


def test_run_rounds_calls_the_variants_in_abba_blocks_and_pairs_them() -> None:
    calls: list[str] = []
    one_per_block = PhaseConfig(min_iterations=4, min_time_s=0.0, max_iterations=4, max_time_s=5.0)
    steps = [_recording("A", 100, calls), _recording("B", 250, calls)]
    first, second = run_rounds(steps, one_per_block)
    assert "".join(calls) == "ABBAABBA"
    assert joined(first).durations_ns == [100] * 4
    comparison = paired(second, first, "a")
    assert (comparison.against, comparison.rounds) == ("a", 4)
    assert comparison.low == comparison.ratio == comparison.high == 2.5
    mine, theirs = round_shares([first, second])
    assert mine.id == theirs.id, "one loop, one name for its rounds"
    assert (mine.medians_ns, theirs.medians_ns) == ([100.0] * 4, [250.0] * 4)
    assert round_shares([first, second])[0].id != mine.id, "each loop names its own rounds"


def test_the_round_medians_give_the_paired_ratio_exactly() -> None:
    """The report pairs any two variants from their round medians with the function the
    runner's `paired` uses: from the medians it gets the runner's numbers to the bit."""
    reference = [PhaseOutcome([100 + r, 90, 130 - r], 0.0, "minimums") for r in range(16)]
    other = [PhaseOutcome([70 + 3 * r, 71, 69, 75], 0.0, "minimums") for r in range(16)]
    comparison = paired(other, reference, "a")
    mine, theirs = round_shares([other, reference])
    assert mine.medians_ns[0] == 70.5, "an even block's median is the mean of the middle two"
    ratio, low, high = paired_ratio(mine.medians_ns, theirs.medians_ns)
    assert (comparison.ratio, comparison.low, comparison.high) == (ratio, low, high)
    assert low < ratio < high


def test_blocks_together_keep_the_measure_phases_bounds() -> None:
    assert round_count(SHORT) == ROUNDS
    assert round_count(QUICK) == QUICK.max_iterations, "every block holds an iteration"
    block = block_rule(SHORT, ROUNDS)
    assert block.min_iterations * ROUNDS >= SHORT.min_iterations
    assert block.max_iterations * ROUNDS <= SHORT.max_iterations
    assert block.max_time_s * ROUNDS <= SHORT.max_time_s


def test_a_block_stopped_early_marks_the_joined_loop() -> None:
    done = PhaseOutcome([1], 0.1, "minimums")
    cut = PhaseOutcome([1], 0.1, "max_time")
    assert joined([done, cut, done]).stopped_by == "max_time"
    assert joined([done, done]).stopped_by == "minimums"


def test_only_variants_of_one_model_are_interleaved() -> None:
    a, b, c = (
        group_variant(0, "tiny-mlp", "fp32"),
        group_variant(1, "tiny-cnn", "fp32"),
        group_variant(2, "tiny-mlp", "bf16"),
    )
    assert runs([a, b, c], interleave=False) == [(a,), (b,), (c,)]
    assert runs([a, b, c], interleave=True) == [(a, c), (b,)]


@pytest.mark.slow
def test_a_pod_pairs_bf16_with_fp32_of_the_same_model(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    models = ("tiny-mlp", "tiny-cnn")
    variants = tuple(
        group_variant(2 * m + p, model, precision)
        for m, model in enumerate(models)
        for p, precision in enumerate(("fp32", "bf16"))
    )
    config = group_config(variants, ((0, 1, 2, 3),), measure=SHORT, interleave=True)
    path = tmp_path / "config.json"
    path.write_text(config.model_dump_json(), encoding="utf-8")
    code = main(["--config", str(path), "--models", str(EXAMPLES), "--index", "0",
                 "--termination-log", str(tmp_path / "log")])  # fmt: skip
    assert code == ExitCode.OK
    lines = capsys.readouterr().out.splitlines()
    results = [parse_result(line.removeprefix("BENCH_RESULT ")) for line in lines]
    assert all(isinstance(r, OkResult) for r in results)
    by_index = {r.variant.index: r for r in results if isinstance(r, OkResult) and r.variant}
    assert sorted(by_index) == [0, 1, 2, 3]
    names = set()
    for reference, other in ((0, 1), (2, 3)):
        fp32, bf16 = by_index[reference], by_index[other]
        assert fp32.paired is None
        assert fp32.rounds is not None and bf16.rounds is not None, "the first keeps its too"
        assert fp32.rounds.id == bf16.rounds.id
        names.add(fp32.rounds.id)
        assert len(fp32.rounds.medians_ns) == len(bf16.rounds.medians_ns) == ROUNDS
        assert fp32.samples is not None and bf16.samples is not None
        assert len(bf16.samples.durations_ns()) == bf16.latency.count >= ROUNDS, (
            "a block holds one at least"
        )
        assert bf16.paired is not None
        assert bf16.paired.against == variants[reference].id
        assert bf16.paired.rounds == ROUNDS
        assert bf16.paired.low <= bf16.paired.ratio <= bf16.paired.high
        assert bf16.paired.ratio == paired_ratio(bf16.rounds.medians_ns, fp32.rounds.medians_ns)[0]
        assert bf16.applied is not None and bf16.applied.compute_dtype == "bfloat16"
    assert len(names) == 2, "each model's loop has rounds of its own"
    # Four interleaved summaries fill the message: how many stay whole depends on the digits
    # of the numbers measured, so the message is checked for what holds under any load.
    log = parse_group_message((tmp_path / "log").read_text(encoding="utf-8"))
    named = [
        e.index if isinstance(e, OmittedResult) else e.variant and e.variant.index for e in log
    ]
    assert named == [0, 1, 2, 3], "every variant is in the message, as a result or a stub"
    for entry in log:
        if isinstance(entry, OkResult) and entry.variant:
            assert entry.samples is None and entry.samples_in_log
            assert entry.rounds is None or entry.rounds == by_index[entry.variant.index].rounds
            assert entry.rounds is not None or entry.compacted, "left out only to fit"


def _interleaved(count: int) -> list[OkResult | ErrorResult]:
    """`count` results of one interleaved loop of 16 rounds, as the runner writes them."""
    base = ok_result(
        group_config((group_variant(0, "tiny-mlp"),), ((0,),)).model_dump(mode="json"), 0
    )
    assert base.variant is not None
    medians = [1_234_567.5 + 1000 * r for r in range(ROUNDS)]
    return [
        base.model_copy(
            update={
                "variant": base.variant.model_copy(update={"index": i, "id": f"v{i:012x}"}),
                "rounds": Rounds(id="0123456789ab", medians_ns=medians),
            }
        )
        for i in range(count)
    ]


def test_round_medians_stay_in_the_termination_log_where_there_is_room() -> None:
    pair = _interleaved(2)
    entries = parse_group_message(termination_message(pair))
    assert entries == pair, "two results with their rounds fit whole"


def test_a_loaded_nodes_reasons_turn_no_interleaved_result_into_a_stub() -> None:
    """A loaded node flags a run and says why in words, longer the more it disturbed it: the
    flags stay in the message, the words go before any result becomes a stub, so the
    message of a loaded pod holds the same results as a quiet one's (the log has the words).
    The results are shaped like the runner's: full-precision statistics, a pairing."""
    rng = random.Random(7)
    latency = summarize([int(rng.lognormvariate(13.5, 0.1)) for _ in range(500)])
    quiet = Validity(
        noisy=False, noise=0.0876, reliable_percentiles=["p50", "p90", "p95"],
        output_finite=True, contended=False, cpu_throttled=False, stopped_early=False,
    )  # fmt: skip
    loaded = quiet.model_copy(
        update={
            "noisy": True,
            "contended": True,
            "cpu_throttled": True,
            "stopped_early": True,
            "reasons": [
                "IQR is 37% of the median (over 10%)",
                "threads waited for a CPU 41% of the loop",
                "the process ran 63% of one CPU during a loop that never sleeps",
                "the CPU quota throttled the process in 12 periods, 9% of the loop",
                "measure stopped at max time with 58 of 100 iterations, 4.98 of 5 s",
            ],
        }
    )
    pairing = Paired(against="v000000000000", rounds=ROUNDS, ratio=1.0234, low=0.9876, high=1.0457)
    for count in range(2, 7):
        results = [
            r.model_copy(
                update={"latency": latency, "paired": pairing if r.variant.index else None}
            )
            for r in _interleaved(count)
            if r.variant
        ]
        kinds = []
        for validity in (quiet, loaded):
            text = termination_message(
                [r.model_copy(update={"validity": validity}) for r in results]
            )
            kinds.append([type(entry) for entry in parse_group_message(text)])
        assert kinds[0] == kinds[1], f"{count} results"


def test_32_interleaved_results_still_fit_the_termination_log() -> None:
    text = termination_message(_interleaved(32))
    assert len(text.encode()) <= TERMINATION_LOG_LIMIT
    entries = parse_group_message(text)
    assert len(entries) == 32
    assert all(not isinstance(e, OkResult) or e.rounds is None for e in entries), (
        "rounds are the first detail left out after the samples"
    )


@pytest.mark.parametrize(
    ("mine", "theirs"), [([1.0], [1.0, 2.0]), ([], []), ([0.0, 1.0], [1.0, 1.0])]
)
def test_rounds_that_do_not_match_or_hold_no_time_give_no_ratio(
    mine: list[float], theirs: list[float]
) -> None:
    with pytest.raises(ValueError, match=r"rounds cannot be paired|not positive"):
        paired_ratio(mine, theirs)
