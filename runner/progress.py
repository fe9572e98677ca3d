"""Progress lines (contract/progress.py) on stderr as a pod's variants go through their
phases: one as each phase begins, and one every INTERVAL_S while a loop (warmup, the timed
loop) runs, with its count and about how long it has left.

Silent until `report_to` names a stream, as logging is until configured: `python -m runner`
names stderr; the exporter's checks and the tests, which call the runner's functions, hear
nothing they did not ask for.
"""

from collections.abc import Sequence
from typing import IO, Final

from contract.config import PhaseConfig, VariantConfig
from contract.progress import Phase, ProgressRecord, progress_line
from runner.measure import Tick, time_left

INTERVAL_S: Final = 5.0
"""Seconds between two lines of a running loop: a reader's display stays current, and a
day-long loop writes a few thousand lines."""

_stream: IO[str] | None = None


def report_to(stream: IO[str] | None) -> None:
    """Write progress lines to `stream` from now on (None: none)."""
    global _stream  # noqa: PLW0603 - configured once per process, as logging is
    _stream = stream


def _write(record: ProgressRecord) -> None:
    if _stream is not None:
        _stream.write(progress_line(record))
        _stream.flush()


def _indexes(variants: Sequence[VariantConfig]) -> tuple[int, ...]:
    return tuple(variant.index for variant in variants)


def begin(variants: Sequence[VariantConfig], phase: Phase) -> None:
    """`variants` enter `phase`."""
    _write(ProgressRecord(variants=_indexes(variants), phase=phase, elapsed_s=0.0))


def loop(
    variants: Sequence[VariantConfig], phase: Phase, rule: PhaseConfig, *, at_least: int = 0
) -> Tick:
    """The tick to hand a loop of `variants` in `phase` under `rule` (`at_least` as
    run_phase takes it): it writes a line every INTERVAL_S of the loop."""
    indexes = _indexes(variants)
    due_s = INTERVAL_S

    def tick(done: int, elapsed_s: float) -> None:
        # A comparison per iteration, nothing more, until a line is due: the loop's own
        # clock says when, so the timed loop pays for no clock of progress's.
        nonlocal due_s
        if elapsed_s < due_s or _stream is None:
            return
        due_s = elapsed_s + INTERVAL_S
        left_s = time_left(rule, done, elapsed_s, at_least=at_least)
        _write(
            ProgressRecord(
                variants=indexes, phase=phase, elapsed_s=elapsed_s, done=done, left_s=left_s
            )
        )

    return tick
