"""The runner's progress lines: one `BENCH_PROGRESS {json}` line on stderr as a variant enters
each phase, and every few seconds while it warms up or measures. The one writer and reader of
them, shared by the runner and whoever shows a running pod (localrun).

They are no part of the result: stdout carries that, and nothing is stored from them. A line
comes from a pod's log, so reading one is bounded and forgiving: anything but a well-formed
record of a known phase is not a progress line (a newer runner's phase included), never an
error. What a reader shows of a record is worded here too (`phase_text`), so that localrun
and the collector say it alike.
"""

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

PROGRESS_PREFIX: Final = "BENCH_PROGRESS "
"""Starts a progress line on stderr."""
MAX_PROGRESS_LINE: Final = 1000
"""Characters a progress line holds at most (a record is under 200): a longer line is not
one, and is not parsed."""

Phase = Literal["load", "prepare", "compile", "warmup", "measure", "accuracy"]
"""What a variant is doing: loading its model (a download included), computing its accuracy
reference, casting and quantizing it, compiling it, warming it up, measuring it."""


class ProgressRecord(BaseModel):
    """Where the variants of a pod's current step are."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    variants: tuple[int, ...] = Field(min_length=1, max_length=64)
    """The variant indexes the step is for: several where interleaved rounds measure them
    together."""
    phase: Phase
    elapsed_s: float = Field(ge=0)
    """Seconds since the phase began."""
    done: int | None = Field(default=None, ge=0)
    """Iterations run so far (warmup and measure)."""
    left_s: float | None = Field(default=None, ge=0)
    """About how many seconds the phase has left, by its stopping rule at the pace so far."""

    def left_after(self, since_s: float) -> float | None:
        """About how many seconds the phase has left `since_s` after the line was read."""
        return None if self.left_s is None else max(0.0, self.left_s - since_s)


def progress_line(record: ProgressRecord) -> str:
    """The stderr line that carries `record`, newline included."""
    return PROGRESS_PREFIX + record.model_dump_json(exclude_none=True) + "\n"


def parse_progress(line: str) -> ProgressRecord | None:
    """The record `line` carries; None where it is not a progress line."""
    if not line.startswith(PROGRESS_PREFIX) or len(line) > MAX_PROGRESS_LINE:
        return None
    try:
        return ProgressRecord.model_validate_json(line.removeprefix(PROGRESS_PREFIX).strip())
    except ValidationError:
        return None


def clock_text(seconds: float) -> str:
    """`0:42`, `12:05`: minutes and seconds."""
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}:{rest:02d}"


def phase_text(record: ProgressRecord, since_s: float) -> str:
    """Where `record`'s variants are `since_s` after it was read, in words: `measure 0:10,
    1200 iterations, ~0:04 left`."""
    words = f"{record.phase} {clock_text(record.elapsed_s + since_s)}"
    if record.done is not None:
        words += f", {record.done} iterations"
    left_s = record.left_after(since_s)
    if left_s is not None:
        words += f", ~{clock_text(left_s)} left"
    return words
