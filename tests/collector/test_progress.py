"""Progress is a bar redrawn in place on a terminal and short plain lines in a CI log; the
summary after it counts in words and names each variant it explains."""

import io

from collector.gather import GatherOutcome, Unfinished
from collector.indexes import IndexState
from collector.progress import Progress
from collector.session import _summary
from collector.workload import ExpectedJob
from contract.records import JobRecord
from contract.text import plural
from contract.variant import VariantRef
from tests.collector.stored import JOB, failed, succeeded

COUNTS = {"pending": 1, "running": 2, "succeeded": 3, "failed": 1, "preempted": 0}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_plain_output_prints_a_line_per_change_and_repeats_rarely() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = Progress(stream, total=7, live=False, clock=clock)
    progress.update(COUNTS)
    progress.update(COUNTS)
    clock.now = 11.0
    progress.update(COUNTS)
    progress.update({**COUNTS, "running": 1, "succeeded": 4})
    lines = stream.getvalue().splitlines()
    assert lines[0] == "4/7 done  pending 1  running 2  succeeded 3  failed 1  preempted 0"
    assert len(lines) == 3 and lines[2].startswith("5/7 done")


def test_the_eta_extrapolates_the_rate_since_gather_began() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = Progress(stream, total=10, live=False, clock=clock)
    started = {"pending": 8, "succeeded": 2}  # two stored by an earlier gather
    progress.update(started)
    clock.now = 60.0
    progress.update({"pending": 4, "running": 2, "succeeded": 4})
    clock.now = 120.0
    progress.update({"succeeded": 10})
    first, second, last = stream.getvalue().splitlines()
    assert "ETA" not in first, "nothing has finished in this gather yet"
    # Two finished in 60 s and six remain: three more minutes.
    assert second.endswith("  ETA 3m00s")
    assert "ETA" not in last


def test_a_terminal_gets_one_line_redrawn_in_place() -> None:
    stream = io.StringIO()
    progress = Progress(stream, total=8, live=True, clock=Clock())
    progress.update(COUNTS)
    progress.finish()
    text = stream.getvalue()
    assert text.startswith("\r[" + "#" * 15 + "." * 15 + "] 4/8 done")
    assert text.endswith("\x1b[K\n") and text.count("\n") == 1


def test_plural_says_one_variant_and_two_variants() -> None:
    assert plural(1, "variant") == "1 variant"
    assert plural(0, "variant") == "0 variants"
    assert plural(2, "variant run") == "2 variant runs"


def _ref(index: int) -> VariantRef:
    return VariantRef(
        index=index,
        id=f"v{index}",
        model="tiny-mlp",
        precision="fp16",
        quantization="int8-dynamic",
        batch_size=4,
    )


def test_the_summary_names_each_failed_and_waiting_variant_and_counts_one_in_the_singular() -> None:
    stored_failure = failed(1).model_copy(update={"variant": _ref(1)})
    record = JobRecord(
        **JOB.model_dump(), outcome="failed", variants=(succeeded(0), stored_failure)
    )
    waiting = IndexState(
        index=2, phase="pending", explanation="no node fits", attempts=1, preemptions=0, pod=None
    )
    unfinished = Unfinished("other-job", "1 of 3 variants finished", (waiting,), (failed(0),))
    outcome = GatherOutcome("us-east", 1, 1, ((record, None),), (), (unfinished,))
    other = ExpectedJob(
        identity=JOB.model_copy(update={"job": "other-job"}),
        completions=3,
        variants={0: _ref(0), 2: _ref(2).model_copy(update={"precision": "fp32"})},
    )
    lines = _summary(outcome, [other])
    assert lines[0] == "us-east: stored 1 variant run (1 was stored before)"
    assert (
        "    tiny-mlp fp16 int8-dynamic batch 4 at index 1: runner error model_load"
        in "\n".join(lines)
    )
    assert any(
        line.startswith("    tiny-mlp fp16 int8-dynamic batch 4 at index 0: failed: ")
        for line in lines
    )
    assert "    tiny-mlp fp32 int8-dynamic batch 4 at index 2: pending: no node fits" in lines


def test_an_index_whose_variant_is_unknown_is_named_by_its_index_alone() -> None:
    record = JobRecord(**JOB.model_dump(), outcome="failed", variants=(failed(3),))
    outcome = GatherOutcome("us-east", 0, 1, ((record, None),), (), ())
    assert f"    index 3: {failed(3).explanation}" in _summary(outcome)


def test_an_explanation_that_breaks_lines_is_summarised_on_one_line() -> None:
    """The runner's message quotes what a model file or spec named: a pod's error may hold
    a line break, which must not start a line (a CI log's `::error` command) of its own."""
    told = failed(3).model_copy(
        update={"explanation": "m.pt2 is refused\n::error file=specs/clusters.yaml::forged"}
    )
    record = JobRecord(**JOB.model_dump(), outcome="failed", variants=(told,))
    lines = _summary(GatherOutcome("us-east", 0, 1, ((record, None),), (), ()))
    assert not [line for line in lines if not line.isprintable() or "\n" in line]
    assert "    index 3: m.pt2 is refused\\n::error file=specs/clusters.yaml::forged" in lines
