"""Hand results over: a BENCH_RESULT line on stdout per variant, and in the termination log
a copy of all of the pod's results so far.

Both formats are the contract's (contract/result.py): a line carries one whole result, the
termination log a compacted summary that fits what Kubernetes keeps.
"""

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from contract.result import BenchResult, result_line, termination_message

log = logging.getLogger(__name__)


def rewrite(path: Path, text: str) -> None:
    """Make `text` the whole content of `path`, creating it if need be; raises OSError.

    Overwritten in place and cut to length afterwards, never opened with O_TRUNC: ext4
    (auto_da_alloc) and XFS write a file's data back to disk when it is closed after being
    truncated, which made each variant's rewrite of the termination log cost 0.3 ms on a
    quiet disk and up to 30 ms on a busy one here (docs/decisions/runner.md). Only a message shorter
    than the last one is cut, so a growing log is never truncated at all.
    """
    data = text.encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    with os.fdopen(fd, "wb") as file:
        file.write(data)
        file.flush()
        if os.fstat(fd).st_size > len(data):
            os.ftruncate(fd, len(data))


def emit(results: Sequence[BenchResult], stdout: IO[str], termination_log: Path | None) -> None:
    """Hand over the last of `results`: rewrite the termination log (if the path is writable)
    with all of them, then write the last one's line, flushed. Called after each variant, so
    a pod killed mid-group has handed over every variant it finished."""
    if termination_log is not None:
        try:
            rewrite(termination_log, termination_message(list(results)))
        except OSError as error:
            # Outside a pod the path may not exist; the stdout line still carries everything.
            log.warning("cannot write the termination log %s: %s", termination_log, error)
    stdout.write(result_line(results[-1]))
    stdout.flush()
