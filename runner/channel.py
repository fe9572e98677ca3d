"""Hand results over: a BENCH_RESULT line on stdout per variant, and in the termination log
a copy of all of the pod's results so far.

Both formats are the contract's (contract/result.py): a line carries one whole result, the
termination log a compacted summary that fits what Kubernetes keeps.
"""

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from contract.result import BenchResult, result_line, termination_message

log = logging.getLogger(__name__)


def emit(results: Sequence[BenchResult], stdout: IO[str], termination_log: Path | None) -> None:
    """Hand over the last of `results`: rewrite the termination log (if the path is writable)
    with all of them, then write the last one's line, flushed. Called after each variant, so
    a pod killed mid-group has handed over every variant it finished."""
    if termination_log is not None:
        try:
            termination_log.write_text(termination_message(list(results)), encoding="utf-8")
        except OSError as error:
            # Outside a pod the path may not exist; the stdout line still carries everything.
            log.warning("cannot write the termination log %s: %s", termination_log, error)
    stdout.write(result_line(results[-1]))
    stdout.flush()
