"""Gather's progress: a live bar on a terminal, a plain line per change elsewhere (CI logs)."""

import time
from collections.abc import Callable, Mapping
from typing import IO, Final

STATES: Final = ("pending", "running", "succeeded", "failed", "preempted")
_BAR_WIDTH: Final = 30
_PLAIN_INTERVAL_S: Final = 10.0
"""Plain output repeats an unchanged line at most this often, so CI logs stay short."""


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
    ) -> None:
        self._stream = stream
        self._total = total
        self._live = live
        self._clock = clock
        self._last_line: str | None = None
        self._last_time = float("-inf")
        self._start: tuple[float, int] | None = None
        """When the first update came, and how many variants were done by then (stored by
        an earlier gather): the rate since is what the ETA extrapolates."""

    def update(self, counts: Mapping[str, int]) -> None:
        """Show the current counts (a no-op when nothing changed and not yet due)."""
        done = counts.get("succeeded", 0) + counts.get("failed", 0)
        # Jobs found along the way (left over from an earlier spec) add to the total.
        total = max(self._total, sum(counts.get(state, 0) for state in STATES))
        line = f"{done}/{total} done  {counts_line(counts)}"
        now = self._clock()
        if self._start is None:
            self._start = (now, done)
        if line == self._last_line and now - self._last_time < _PLAIN_INTERVAL_S:
            return
        self._last_line, self._last_time = line, now
        line += self._eta(now, done, total)
        if self._live:
            filled = _BAR_WIDTH * done // total if total else _BAR_WIDTH
            bar = "#" * filled + "." * (_BAR_WIDTH - filled)
            # \r and clear-to-end-of-line redraw the bar in place.
            self._stream.write(f"\r[{bar}] {line}\x1b[K")
        else:
            self._stream.write(line + "\n")
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
