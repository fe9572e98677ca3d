"""A finished variant's stored form: its result, read from the pod, and how it ended in words.

The termination message is read first, because it costs no request: it arrived with the pod
in the watch. The log is fetched only when the message holds no whole, valid result (a
compacted copy, an OOMKilled pod, a crash), so requests grow with failures, not variants.
"""

from collections.abc import Callable

from collector.indexes import IndexState
from collector.pods import ResultReading, with_log
from contract.records import StoredVariant, VariantState
from contract.result import ErrorResult
from contract.variant import VariantRef

LogReader = Callable[[str], str | None]
"""Reads the runner's log of a pod by name; None when it cannot be had (the pod is gone)."""


def _reading(state: IndexState, read_log: LogReader) -> ResultReading | None:
    if state.pod is None:
        return None
    reading = state.pod.message
    if reading.result is None or reading.result.compacted or reading.problem:
        reading = with_log(reading, read_log(state.pod.name))
    return reading


def harvest(
    state: IndexState,
    variant: VariantRef | None,
    job_failure_reason: str | None,
    read_log: LogReader,
) -> StoredVariant:
    """The stored form of a finished (succeeded or failed) variant; `variant` is what
    config.json says the index runs."""
    reading = _reading(state, read_log)
    result = reading.result if reading else None
    pod = state.pod
    explanation = state.explanation
    reason: str | None = None
    stored_state: VariantState = "succeeded"
    if result is not None and result.status == "ok":
        if reading is not None and reading.problem:
            explanation = f"{explanation} ({reading.problem})"
    else:
        stored_state = "failed"
        if state.phase == "succeeded":
            problem = reading.problem if reading else "no pod is left to read it from"
            explanation = f"the pod succeeded but left no usable result: {problem}"
        if isinstance(result, ErrorResult):
            reason = result.error.type
        else:
            reason = (pod.reason if pod else None) or job_failure_reason or "unknown"
    return StoredVariant(
        index=state.index,
        state=stored_state,
        variant=variant,
        explanation=explanation,
        reason=reason,
        pod=pod.name if pod else None,
        node=pod.node if pod else None,
        attempts=state.attempts,
        preemptions=state.preemptions,
        finished_at=pod.finished_at if pod else None,
        result_source=reading.source if reading and result else None,
        result=result,
    )
