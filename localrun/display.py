"""What a local try shows while a pod runs: which of its variants is in which phase, with a
loop's count and about how long it has left, read from the runner's progress lines
(contract/progress.py), and how long the pod has run.

On a terminal, one line rewritten in place every second. Elsewhere (a CI log), a plain line
as each phase begins and at least every PLAIN_INTERVAL_S, so a log never goes quiet while a
pod runs. Each pod ends with its own line, which stays.
"""

import shutil
import time
from collections.abc import Callable, Mapping
from typing import IO, Final

from contract.progress import ProgressRecord, clock_text, parse_progress, phase_text

PLAIN_INTERVAL_S: Final = 10.0
"""The longest a plain display stays quiet while a pod runs."""


def _terminal_width() -> int:
    return shutil.get_terminal_size().columns


class PodDisplay:
    """Shows the running pod of a local try on `stream`."""

    def __init__(
        self,
        stream: IO[str],
        *,
        live: bool,
        clock: Callable[[], float] = time.monotonic,
        width: Callable[[], int] = _terminal_width,
    ) -> None:
        self._stream = stream
        self._live = live
        self._clock = clock
        self._width = width
        self._heading = ""
        self._names: Mapping[int, str] = {}
        self._started = 0.0
        self._record: ProgressRecord | None = None
        self._record_at = 0.0
        self._shown: tuple[str, tuple[int, ...]] | None = None
        """The phase and variants the last plain line was about."""
        self._shown_at = float("-inf")
        self._drawn = False

    def start(self, heading: str, names: Mapping[int, str]) -> None:
        """A pod starts: `heading` names it (`[2/6] index 1`), `names` its variants by index."""
        self._heading, self._names = heading, names
        self._started = self._clock()
        self._record, self._shown, self._shown_at = None, None, float("-inf")
        self._show()

    def line(self, text: str) -> None:
        """A line the pod wrote to stderr: a progress line moves the display on."""
        record = parse_progress(text)
        if record is not None:
            self._record, self._record_at = record, self._clock()
            self._show()

    def tick(self) -> None:
        """Time passes (at least every second): the clocks move on."""
        self._show()

    def finish(self, summary: str) -> None:
        """The pod ended: `summary` is its line, which stays."""
        self._stream.write(("\r\x1b[K" if self._drawn else "") + summary + "\n")
        self._stream.flush()
        self._drawn = False

    def text(self) -> str:
        """Where the pod is, in words: `[2/6] index 1, 0:42: measure 0:10, 1200 iterations,
        ~0:04 left (tiny-mlp fp32 batch 8)`; the variants last, where a narrow terminal cuts
        the line."""
        now = self._clock()
        head = f"{self._heading}, {clock_text(now - self._started)}"
        record = self._record
        if record is None:
            return f"{head}: starting"
        names = ", ".join(self._names.get(i, f"variant {i}") for i in record.variants)
        return f"{head}: {phase_text(record, now - self._record_at)} ({names})"

    def _show(self) -> None:
        if self._live:
            # One screen line, or the next \r rewrites only the last of the wrapped lines.
            self._stream.write("\r" + self.text()[: max(self._width() - 1, 1)] + "\x1b[K")
            self._drawn = True
        else:
            now = self._clock()
            about = (self._record.phase, self._record.variants) if self._record else None
            if about == self._shown and now - self._shown_at < PLAIN_INTERVAL_S:
                return
            self._shown, self._shown_at = about, now
            self._stream.write(self.text() + "\n")
        self._stream.flush()
