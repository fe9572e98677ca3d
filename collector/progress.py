"""Gather's progress: a live bar on a terminal, a plain line per change elsewhere (CI logs),
with what the running pods are doing where gather reads it (collector/running.py)."""

import shutil
import time
from collections.abc import Callable, Mapping
from typing import IO, Final

from collector.running import RunningView

STATES: Final = ("pending", "running", "succeeded", "failed", "preempted")
_BAR_WIDTH: Final = 30
_PLAIN_INTERVAL_S: Final = 10.0
"""Plain output repeats a line whose counts did not change this often, so CI logs stay short
and never go quiet for long."""


def counts_line(counts: Mapping[str, int]) -> str:
    """`pending 3  running 10  succeeded 80  failed 2  preempted 1`."""
    return "  ".join(f"{state} {counts.get(state, 0)}" for state in STATES)


class Progress:
    """Shows counts of variants per state as gather follows them."""

    def __init__(
        self,
        stream: IO[str],
        total: int,
        *,
        live: bool,
        clock: Callable[[], float] = time.monotonic,
        width: Callable[[], int] = lambda: shutil.get_terminal_size().columns,
    ) -> None:
        self._stream = stream
        self._total = total
        self._live = live
        self._clock = clock
        self._width = width
        self._last_line: str | None = None
        self._last_time = float("-inf")
        self._start: tuple[float, int] | None = None
        """When the first update came, and how many variants were done by then (stored by
        an earlier gather): the rate since is what the ETA extrapolates."""

    def update(self, counts: Mapping[str, int], running: RunningView | None = None) -> None:
        """Show the current counts, and where the `running` pods are (a no-op when nothing
        changed and not yet due: a plain line is due when the counts change, a live one
        when the running pods' clocks move too)."""
        done = counts.get("succeeded", 0) + counts.get("failed", 0)
        # Jobs found along the way (left over from an earlier spec) add to the total.
        total = max(self._total, sum(counts.get(state, 0) for state in STATES))
        line = f"{done}/{total} done  {counts_line(counts)}"
        now = self._clock()
        if self._start is None:
            self._start = (now, done)
        about = running.text() if running is not None and running.running else ""
        key = line + about if self._live else line
        if key == self._last_line and now - self._last_time < _PLAIN_INTERVAL_S:
            return
        self._last_line, self._last_time = key, now
        eta = self._eta(now, done, total)
        about = f" | {about}" if about else ""
        if self._live:
            filled = _BAR_WIDTH * done // total if total else _BAR_WIDTH
            bar = "#" * filled + "." * (_BAR_WIDTH - filled)
            # What the running pods do before the counts that are not zero, where a narrow
            # terminal cuts the line: the summary counts them all at the end.
            counts_text = "  ".join(f"{s} {counts[s]}" for s in STATES if counts.get(s))
            text = f"[{bar}] {done}/{total} done{eta}{about} | {counts_text}"
            # \r and clear-to-end-of-line redraw the bar in place, on one screen line, or
            # the next \r rewrites only the last of the wrapped lines.
            self._stream.write(f"\r{text[: max(self._width() - 1, 1)]}\x1b[K")
        else:
            self._stream.write(f"{line}{eta}{about}\n")
        self._stream.flush()

    def _eta(self, now: float, done: int, total: int) -> str:
        """`  ETA 4m10s` at the rate variants finished since the first update; nothing before
        one has, or once all have."""
        assert self._start is not None
        started, done_before = self._start
        finished = done - done_before
        if finished <= 0 or done >= total:
            return ""
        remaining_s = (now - started) / finished * (total - done)
        minutes, seconds = divmod(round(remaining_s), 60)
        return f"  ETA {minutes}m{seconds:02d}s"

    def finish(self) -> None:
        """End the live line so what follows starts on its own."""
        if self._live and self._last_line is not None:
            self._stream.write("\n")
            self._stream.flush()
