"""Hand the result over: a BENCH_RESULT line on stdout and a copy in the termination log.

Both formats are the contract's (contract/result.py): the line carries the whole result, the
termination log a compacted copy that fits what Kubernetes keeps.
"""

import logging
from pathlib import Path
from typing import IO

from contract.result import BenchResult, compact, result_line

log = logging.getLogger(__name__)


def emit(result: BenchResult, stdout: IO[str], termination_log: Path | None) -> None:
    """Write the termination log (if the path is writable), then the result line, last."""
    if termination_log is not None:
        try:
            termination_log.write_text(compact(result), encoding="utf-8")
        except OSError as error:
            # Outside a pod the path may not exist; the stdout line still carries everything.
            log.warning("cannot write the termination log %s: %s", termination_log, error)
    stdout.write(result_line(result))
    stdout.flush()
