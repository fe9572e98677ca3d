"""A finished variant's stored form: its result, read from the pod, and how it ended in words.

The termination message is read first, because it costs no request: it arrived with the pod
in the watch. The log is fetched only when the message holds no whole, valid result (a
compacted copy, an OOMKilled pod, a crash), so requests grow with failures, not variants.

What is stored here is also what progress and `collector status` count: a variant whose pod
succeeded but whose result cannot be used is failed everywhere, not only in the record.
"""

from collections.abc import Callable

from collector.indexes import IndexState
from collector.pods import ResultReading, with_log
from contract.records import StoredVariant, VariantState
from contract.result import BenchResult, ErrorResult
from contract.variant import VariantRef

LogReader = Callable[[str], str | None]
"""Reads the runner's log of a pod by name; None when it cannot be had (the pod is gone)."""

WRONG_VARIANT = "wrong_variant"
"""The reason of a result that names another variant than config.json runs at its index."""


def settled(state: IndexState) -> bool:
    """The variant has ended and its pod, if any, shows how: the Jobs and the pods arrive on
    two watches, so the Job may list an index as completed before its pod's update is here."""
    if state.phase == "succeeded":
        return state.pod is None or state.pod.phase == "succeeded"
    return state.phase == "failed"


def needs_log(state: IndexState) -> bool:
    """Whether harvesting `state` reads its pod's log: the message holds no whole, valid
    result."""
    if state.pod is None:
        return False
    reading = state.pod.message
    return reading.result is None or reading.result.compacted or reading.problem is not None


def _reading(state: IndexState, read_log: LogReader) -> ResultReading | None:
    if state.pod is None:
        return None
    if needs_log(state):
        return with_log(state.pod.message, read_log(state.pod.name))
    return state.pod.message


def _named(ref: VariantRef) -> str:
    return f"variant {ref.id} (index {ref.index}: {ref.describe()})"


def _misfiled(result: BenchResult, expected: VariantRef | None) -> str | None:
    """Why `result` cannot be filed under the variant config.json runs at its index."""
    arrived = result.variant
    if arrived is None or expected is None or arrived == expected:
        return None
    return (
        f"the result is for {_named(arrived)}, but config.json runs {_named(expected)} at "
        "this index: kept, and filed as a measurement of neither"
    )


def _succeeded(state: IndexState, reading: ResultReading) -> str:
    """The words for a variant whose result was read whole or in part."""
    message_problem = state.pod.message.problem if state.pod else None
    if reading.source == "log" and message_problem:
        return f"succeeded (result read from the log: {message_problem})"
    if reading.problem:
        return f"succeeded; {reading.problem}"
    return "succeeded"


def harvest(
    state: IndexState,
    variant: VariantRef | None,
    job_failure_reason: str | None,
    read_log: LogReader,
) -> StoredVariant:
    """The stored form of a settled (succeeded or failed) variant; `variant` is what
    config.json says the index runs."""
    reading = _reading(state, read_log)
    result = reading.result if reading else None
    pod = state.pod
    explanation = state.explanation
    reason: str | None = None
    stored_state: VariantState = "succeeded"
    misfiled = _misfiled(result, variant) if result is not None else None
    if misfiled is not None:
        stored_state, reason, explanation = "failed", WRONG_VARIANT, misfiled
    elif result is not None and result.status == "ok":
        if state.phase == "succeeded" and reading is not None:
            explanation = _succeeded(state, reading)
    else:
        stored_state = "failed"
        if state.phase == "succeeded":
            problem = reading.problem if reading else "no pod is left to read it from"
            explanation = f"the pod succeeded but left no usable result: {problem}"
        if isinstance(result, ErrorResult):
            reason = result.error.type
        else:
            reason = (
                state.cut_by or (pod.reason if pod else None) or job_failure_reason or "unknown"
            )
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
