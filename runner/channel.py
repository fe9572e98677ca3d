"""Hand the result over: a BENCH_RESULT line on stdout and a copy in the termination log.

Kubernetes keeps at most 4096 bytes of the termination log in the pod status, where the
collector finds it even after the logs are gone; when the whole result is larger, details
are dropped (most expendable first) and the copy says `compacted: true`.
"""

import logging
from collections.abc import Callable
from pathlib import Path
from typing import IO, Final

from runner.result import RESULT_PREFIX, TERMINATION_LOG_LIMIT, BenchResult, ErrorInfo

log = logging.getLogger(__name__)

_ERROR_MESSAGE_BUDGET: Final = 1500


def _short_error(result: BenchResult) -> BenchResult:
    if result.error is None or len(result.error.message) <= _ERROR_MESSAGE_BUDGET:
        return result
    message = result.error.message[: _ERROR_MESSAGE_BUDGET - 3] + "..."
    return result.model_copy(update={"error": ErrorInfo(type=result.error.type, message=message)})


_COMPACTIONS: Final[tuple[Callable[[BenchResult], BenchResult], ...]] = (
    lambda r: r,
    _short_error,
    lambda r: r.model_copy(update={"environment": None}),
    lambda r: r.model_copy(update={"applied": None, "timings": None, "memory": None}),
)


def compact(result: BenchResult, limit: int = TERMINATION_LOG_LIMIT) -> str:
    """The result as compact JSON of at most `limit` bytes."""
    current = result
    for index, step in enumerate(_COMPACTIONS):
        current = step(current)
        if index:
            current = current.model_copy(update={"compacted": True})
        text = current.model_dump_json(exclude_none=True)
        if len(text.encode()) <= limit:
            return text
    raise ValueError(f"a result cannot be compacted below {limit} bytes: {text[:200]}")


def emit(result: BenchResult, stdout: IO[str], termination_log: Path | None) -> None:
    """Write the termination log (if the path is writable), then the result line, last."""
    if termination_log is not None:
        try:
            termination_log.write_text(compact(result), encoding="utf-8")
        except OSError as error:
            # Outside a pod the path may not exist; the stdout line still carries everything.
            log.warning("cannot write the termination log %s: %s", termination_log, error)
    stdout.write(RESULT_PREFIX + result.model_dump_json(exclude_none=True) + "\n")
    stdout.flush()
