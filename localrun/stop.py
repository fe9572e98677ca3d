"""SIGINT and SIGTERM during a local try: a request to stop, answered in order, not an end
wherever the signal lands.

While pods run, the first signal asks the running pod to end (localrun/streams.py: SIGTERM,
a grace, SIGKILL) and no further pod to start; what finished is stored, the scratch folder
removed, and the command exits 128 + the signal's number (130 for Ctrl-C). A second signal
cuts the grace short. Only where nothing can be lost (`at_once`: reading the workflow,
pulling its images) does the first signal end the work there and then.
"""

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType, TracebackType
from typing import Final

SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


class Stopped(BaseException):
    """A signal came where the work stops at once (`Stop.at_once`). A BaseException, as
    KeyboardInterrupt is, so that no `except Exception` on the way takes it for a failure."""


class Stop:
    """The handler of SIGINT and SIGTERM while it is entered (main thread only)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        """The first signal that came, if any."""
        self.requested = threading.Event()
        """Set by the first signal: end the running pod, start no other."""
        self.hurry = threading.Event()
        """Set by a second signal: kill the running pod without waiting."""
        self._at_once = False
        self._previous: dict[int, object] = {}

    def __enter__(self) -> "Stop":
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]  # what signal() returned

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is not None:
            self.hurry.set()
            return
        self.signum = signum
        self.requested.set()
        if self._at_once:
            raise Stopped

    @contextmanager
    def at_once(self) -> Iterator[None]:
        """A signal in here raises Stopped where it lands: nothing in here is worth keeping."""
        if self.requested.is_set():
            raise Stopped
        self._at_once = True
        try:
            yield
        finally:
            self._at_once = False

    @property
    def name(self) -> str:
        """The signal's name (SIGINT); "" when none came."""
        return signal.Signals(self.signum).name if self.signum is not None else ""

    @property
    def exit_code(self) -> int:
        """What a shell reports for a process the signal ended: 128 + its number."""
        assert self.signum is not None
        return 128 + self.signum
