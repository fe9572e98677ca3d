"""What torch, torchao and the model's own libraries print while `benchfleet export` works,
held back unless `--verbose`: their warnings, their log records and whatever else reaches the
process's stderr (C++ messages written to file descriptor 2 included). The warnings are
counted, so that one line can say how many were hidden rather than let them bury the
command's own lines (a torchao import alone printed a deprecation notice per enum)."""

import io
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, redirect_stderr
from dataclasses import dataclass
from typing import IO, Any

_STDERR: int = 2


@dataclass
class Hidden:
    """What was held back."""

    warnings: int = 0
    """Python warnings, and log records at WARNING or above."""
    output: bool = False
    """Whether anything reached stderr besides (a C++ message, a library's print)."""

    def note(self) -> str | None:
        """One line saying what was hidden, or None where nothing was."""
        if self.warnings:
            plural = "s" * (self.warnings != 1)
            return (
                f"note: {self.warnings} warning{plural} of torch and the libraries the model "
                "uses hidden; --verbose shows them"
            )
        if self.output:
            return "note: torch's own output hidden; --verbose shows it"
        return None


@contextmanager
def held_back(verbose: bool) -> Iterator[Hidden]:
    """Hold back and count what the block's libraries say, unless `verbose`."""
    hidden = Hidden()
    if verbose:
        yield hidden
        return
    with ExitStack() as stack:
        stack.enter_context(_counted_records(hidden))
        caught = stack.enter_context(warnings.catch_warnings(record=True))
        # Each warning once per place it is raised, as Python shows them by default.
        warnings.simplefilter("default")
        text = stack.enter_context(redirect_stderr(io.StringIO()))
        sink = stack.enter_context(_descriptor_held())
        try:
            yield hidden
        finally:
            hidden.warnings += len(caught)
            written = sink is not None and os.fstat(sink.fileno()).st_size > 0
            hidden.output = bool(text.getvalue()) or written


@contextmanager
def _counted_records(hidden: Hidden) -> Iterator[None]:
    """Count every log record of WARNING or above as it is made, by whichever logger:
    libraries configure loggers of their own that do not reach the root's handlers."""
    made = logging.getLogRecordFactory()

    def counting(*arguments: Any, **keywords: Any) -> logging.LogRecord:
        record = made(*arguments, **keywords)
        if record.levelno >= logging.WARNING:
            hidden.warnings += 1
        return record

    logging.setLogRecordFactory(counting)
    try:
        yield
    finally:
        logging.setLogRecordFactory(made)


@contextmanager
def _descriptor_held() -> Iterator[IO[bytes] | None]:
    """File descriptor 2 pointed at a temporary file for the block: torch's C++ code and the
    log handlers bound to the process's stderr write there, not through sys.stderr. The file
    is yielded, or None where stderr is no descriptor to move."""
    if sys.__stderr__ is not None:
        sys.__stderr__.flush()  # what was written before the block stays where it was going
    try:
        saved = os.dup(_STDERR)
    except OSError:
        yield None
        return
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), _STDERR)
        try:
            yield sink
        finally:
            os.dup2(saved, _STDERR)
            os.close(saved)
