"""A finished pod's variants in their stored form: each one's result, read from the pod, and
how it ended in words.

The termination message is read first, because it costs no request: it arrived with the pod
in the watch. The log is fetched only when the message holds no whole, valid results (a
compacted copy, an OOMKilled pod, a crash), so requests grow with failures, not variants.

A pod runs one variant, or a group of them in sequence (scheduling.variants_per_pod). Each
result is filed by the variant it names, never by its place: a variant the pod never
reported (it crashed, or was killed, mid-group) fails with the pod's end as its cause.

What is stored here is also what progress and `collector status` count: a variant whose pod
succeeded but whose result cannot be used is failed everywhere, not only in the record.
"""

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import NamedTuple

from pydantic import ValidationError

from collector.indexes import IndexState
from collector.lakeread import Fetched, covered
from collector.lakerefs import references
from collector.pods import PodState, ResultReading, ResultSource, with_log
from contract.fingerprint import with_image_digest
from contract.records import UNUSABLE_RESULT, StoredVariant, VariantState, with_left_out
from contract.result import BenchResult, ErrorResult, parse_result
from contract.variant import VariantRef
from store.database import Unread

LogReader = Callable[[str], str | None]
"""Reads the runner's log of a pod by name; None when it cannot be had (the pod is gone)."""

WRONG_VARIANT = "wrong_variant"
"""The reason of a result that names another variant than config.json runs at its index."""


class Ending(NamedTuple):
    """How a variant ended, as stored: its state, the reason in one word, in words, and where
    its result was read."""

    state: VariantState
    reason: str | None
    explanation: str
    source: ResultSource | None


class Slot(NamedTuple):
    """A variant a pod runs: its position in config.json's variants, and the variant there as
    far as config.json is known (a Job read from the cluster may say only its positions)."""

    position: int
    variant: VariantRef | None


class Harvest(NamedTuple):
    """What a settled index's pod left for each of its variants."""

    stored: list[StoredVariant]
    """The variants that ended for good, as they are stored."""
    unread: list[Unread]
    """Those whose result a newer runner wrote: kept as it arrived, final only once a
    collector that reads it has read it (read_kept)."""


def settled(state: IndexState) -> bool:
    """The variant has ended and its pod, if any, shows how: the Jobs and the pods arrive on
    two watches, so the Job may list an index as completed before its pod's update is here."""
    if state.phase == "succeeded":
        return state.pod is None or state.pod.phase == "succeeded"
    return state.phase == "failed"


def unseen(state: IndexState) -> bool:
    """The Job lists the index as completed, but no pod of it is seen to have succeeded: the
    pod watch may not have caught up with the Job watch, or the pod is gone. Only a fresh
    list of the Job's pods tells which (gather's `_confirmed`)."""
    return state.phase == "succeeded" and (state.pod is None or state.pod.phase != "succeeded")


def gone(state: IndexState) -> IndexState:
    """`state` of an unseen index that a fresh list showed no succeeded pod of either: its pod
    is gone, and the attempt shown, once ended, is one of the earlier ones. One still
    running is left as it is, to wait."""
    if state.pod is None:
        return state
    earlier = ended_attempts(state)
    if not earlier or earlier[-1] is not state.pod:
        return state
    return replace(state, pod=None, manifest=None, earlier=earlier)


def needs_log(state: IndexState, from_lake: bool = False) -> bool:
    """Whether harvesting `state` reads its pod's log: neither the lake (`from_lake`: it
    gave the whole result of each the message lists) nor the message holds a whole, valid
    result."""
    if state.pod is None or from_lake:
        return False
    reading = state.pod.message
    return not reading.whole or reading.problem is not None


def _reading(
    state: IndexState, read_log: LogReader, fetched: Sequence[Fetched]
) -> ResultReading | None:
    if state.pod is None:
        return None
    return _pod_reading(
        state.pod, read_log, fetched, needs_log(state, covered(state.pod.message, fetched))
    )


def _pod_reading(
    pod: PodState, read_log: LogReader, fetched: Sequence[Fetched], log: bool
) -> ResultReading:
    """What `pod` handed over: the lake's whole results in place of its own copies, its
    termination message for the rest, completed from its log where `log`."""
    base = with_log(pod.message, read_log(pod.name)) if log else pod.message
    return with_lake(base, fetched, references(pod.message).unwritten)


def with_lake(
    base: ResultReading, fetched: Sequence[Fetched], unwritten: Mapping[int | None, str]
) -> ResultReading:
    """`base` (what the pod's message and log gave) with every whole result the lake gave
    in place of the pod's copy, and why the lake gave none for the others."""
    lake = {
        f.result.variant.index: f
        for f in fetched
        if f.result is not None and f.result.variant is not None
    }
    missing: dict[int | None, str] = {
        **unwritten,
        **{f.reference.index: f.problem for f in fetched if f.result is None and f.problem},
    }
    if not lake and not missing:
        return base
    kept = [r for r in base.results if r.variant is None or r.variant.index not in lake]
    results = tuple(sorted(kept + [f.result for f in lake.values() if f.result], key=_position))
    source = base.source if kept or base.omitted or not lake else "lake"
    return ResultReading(
        results,
        source,
        base.problem,
        tuple(o for o in base.omitted if o.index not in lake),
        base.newer,
        from_lake={index: f.stored for index, f in lake.items() if f.stored},
        not_from_lake=missing,
    )


def _position(result: BenchResult) -> int:
    return result.variant.index if result.variant else -1


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


def _succeeded(state: IndexState, reading: ResultReading, result: BenchResult) -> str:
    """The words for a variant whose result was read whole or in part."""
    if result.variant is not None and result.variant.index in reading.from_lake:
        return "succeeded"
    message_problem = state.pod.message.problem if state.pod else None
    if reading.source == "log" and message_problem:
        return f"succeeded (result read from the log: {message_problem})"
    if reading.problem:
        return f"succeeded; {reading.problem}"
    return "succeeded"


def harvest(
    state: IndexState,
    group: Sequence[Slot],
    job_failure_reason: str | None,
    read_log: LogReader,
    fetched: Sequence[Fetched] = (),
) -> Harvest:
    """The stored form of every variant of a settled (succeeded or failed) index; `group` is
    what the index runs, `fetched` what the lake gave for its pod. A variant whose result
    only a newer runner's schema holds is not final on that ground: it is kept unread
    instead."""
    reading = _reading(state, read_log, fetched)
    if len(group) <= 1:
        variant = group[0].variant if group else None
        stored = [_harvest_one(state, variant, job_failure_reason, reading)]
    else:
        stored = _harvest_group(state, group, job_failure_reason, reading)
    if reading is not None:
        stored = [_lake_told(variant, reading) for variant in stored]
    if reading is None or not reading.newer:
        return Harvest(stored, [])
    # How the pod ended, to be completed by the result once it can be read.
    ended: VariantState = "succeeded" if state.phase == "succeeded" else "failed"
    cause = None if ended == "succeeded" else _cause(state, job_failure_reason)
    ending = {
        "state": ended,
        "reason": cause,
        "explanation": state.explanation,
        "result_source": reading.source,
    }
    unread = [
        Unread(variant.model_copy(update=ending), raw, reading.problem or "")
        for variant in stored
        if variant.result is None and (raw := _newer_for(variant.index, reading.newer, len(stored)))
    ]
    kept = {entry.variant.index for entry in unread}
    return Harvest([v for v in stored if v.index not in kept], unread)


def _lake_told(variant: StoredVariant, reading: ResultReading) -> StoredVariant:
    """`variant` saying where its whole result came from: the lake object it was read from,
    or why the lake gave none where its runner wrote one."""
    result = variant.result
    index = result.variant.index if result is not None and result.variant else None
    if index is not None and index in reading.from_lake:
        return variant.model_copy(
            update={"result_source": "lake", "result_object": reading.from_lake[index]}
        )
    why = reading.not_from_lake.get(variant.index) or reading.not_from_lake.get(None)
    if why is None:
        return variant
    return variant.model_copy(
        update={"explanation": f"{variant.explanation}; not read from the lake: {why}"}
    )


def _newer_for(index: int, newer: Sequence[str], variants: int) -> str | None:
    """What a newer runner wrote for the variant at `index`: the result naming it, else
    (where a result names no index this collector can find) every such result, or for a
    pod of one variant its last."""
    named = {text: _named_index(text) for text in newer}
    own = [text for text, at in named.items() if at == index]
    if own or variants == 1:
        return (own or list(newer))[-1]
    return "\n".join(text for text, at in named.items() if at is None) or None


def _named_index(text: str) -> int | None:
    """The variant index a newer runner's result names, where it names one where ours do."""
    data = json.loads(text)
    variant = data.get("variant") if isinstance(data, dict) else None
    index = variant.get("index") if isinstance(variant, dict) else None
    return index if isinstance(index, int) else None


def read_kept(kept: Unread) -> StoredVariant | None:
    """A variant kept unread, as stored now that this collector reads what the newer runner
    wrote; None while it still cannot (it stays kept)."""
    try:
        result = parse_result(kept.raw, strict=True)
    except ValidationError:
        return None
    variant = kept.variant
    state: VariantState = "succeeded"
    reason = None
    if isinstance(result, ErrorResult):
        state, reason = "failed", result.error.type
        words = f"runner error {result.error.type}: {result.error.message}"
    elif variant.state == "succeeded":
        words = "succeeded"
    else:
        words = f"succeeded; its pod then ended: {variant.explanation}"
    explanation = with_left_out(
        f"{words} (read later, from the result kept as a newer runner wrote it)", result
    )
    return variant.model_copy(
        update={"result": result, "state": state, "reason": reason, "explanation": explanation}
    )


def _harvest_one(
    state: IndexState,
    variant: VariantRef | None,
    job_failure_reason: str | None,
    reading: ResultReading | None,
) -> StoredVariant:
    result = reading.result if reading else None
    explanation = state.explanation
    reason: str | None = None
    stored_state: VariantState = "succeeded"
    misfiled = _misfiled(result, variant) if result is not None else None
    if misfiled is not None:
        stored_state, reason, explanation = "failed", WRONG_VARIANT, misfiled
    elif result is not None and result.status == "ok":
        if state.phase == "succeeded" and reading is not None:
            explanation = _succeeded(state, reading, result)
    else:
        stored_state = "failed"
        if state.phase == "succeeded":
            problem = reading.problem if reading else "no pod is left to read it from"
            explanation = f"the pod succeeded but left no usable result: {problem}"
        if isinstance(result, ErrorResult):
            reason = result.error.type
        else:
            reason = _cause(state, job_failure_reason)
    ending = Ending(stored_state, reason, explanation, reading.source if reading else None)
    return _stored(state, state.pod, variant, ending, result)


def _fits(result: BenchResult, group: Sequence[Slot]) -> Slot | None:
    """The slot of `group` that `result` names (by position, and by its whole identity where
    config.json is known)."""
    named = result.variant
    for slot in group:
        if named is not None and named.index == slot.position:
            return slot if slot.variant in (None, named) else None
    return None


def _harvest_group(
    state: IndexState,
    group: Sequence[Slot],
    job_failure_reason: str | None,
    reading: ResultReading | None,
) -> list[StoredVariant]:
    results = reading.results if reading else ()
    own = {slot.position: r for r in results if (slot := _fits(r, group)) is not None}
    # What names no variant of the group: the group's own failure (config.json unreadable,
    # SIGTERM between variants), or a result for another variant altogether.
    stray = [r for r in results if _fits(r, group) is None]
    reported = {(o.index, o.id) for o in reading.omitted} if reading else set()
    cause = _cause(state, job_failure_reason)
    source = reading.source if reading else None
    stored = []
    for slot in group:
        position, variant = slot
        result = own.get(position)
        if result is None and stray:
            result = stray.pop(0) if stray[0].variant is not None else stray[0]
        stored_state: VariantState = "failed"
        reason: str | None = cause
        if result is not None:
            stored_state, reason, explanation = _reported(state, variant, result, reading)
        else:
            explanation = _unreported(state, slot, reading, reported, len(own))
        ending = Ending(stored_state, reason, explanation, source)
        stored.append(_stored(state, state.pod, variant, ending, result, position=position))
    return stored


def ended_attempts(state: IndexState) -> tuple[PodState, ...]:
    """The attempts of index `state` that ended without deciding it, oldest first: those
    before the deciding one, and while a retry is due the deciding one itself, once its
    runner has exited (a disrupted pod is `preempted` while it still terminates, and its
    termination message is only there at the end)."""
    pod = state.pod
    ended = pod is not None and pod.phase in ("failed", "preempted") and pod.exit_code is not None
    if pod is not None and ended and not settled(state):
        return (*state.earlier, pod)
    return state.earlier


def earlier_needs_log(pod: PodState, from_lake: bool = False) -> bool:
    """Whether what attempt `pod` measured takes its log to read: its termination message
    lists results it holds no whole copy of, and the lake did not give them all
    (`from_lake`)."""
    reading = pod.message
    return bool(reading.results or reading.omitted) and not reading.whole and not from_lake


def harvest_earlier(
    state: IndexState,
    attempts: Sequence[PodState],
    group: Sequence[Slot],
    read_log: LogReader,
    fetched: Mapping[str, Sequence[Fetched]] | None = None,
) -> list[StoredVariant]:
    """The variants of `group` that `attempts` (ended attempts of index `state`, oldest first:
    ended_attempts) measured, each as stored from the first attempt that did: stored at once,
    so that the retry of a group can be told to skip them (contract/reported.py), and kept
    whatever the retry does. `read_log` is called for the attempts earlier_needs_log names;
    `fetched` is what the lake gave for each attempt, by pod."""
    found: dict[int, StoredVariant] = {}
    for pod in attempts:
        got = (fetched or {}).get(pod.name, ())
        log = earlier_needs_log(pod, covered(pod.message, got))
        reading = _pod_reading(pod, read_log, got, log) if log or got else None
        for result in (reading or pod.message).results:
            ref = result.variant
            slot = _fits(result, group)
            if result.status == "ok" and slot and ref and slot.position not in found:
                explanation = (
                    f"succeeded in an earlier attempt, pod {pod.name}, which then ended: "
                    f"{pod.explanation}"
                )
                if reading is not None and reading.problem:
                    explanation += f"; {reading.problem}"
                source = reading.source if reading else "termination-message"
                ending = Ending("succeeded", None, explanation, source)
                variant = _stored(state, pod, ref, ending, result)
                found[slot.position] = _lake_told(variant, reading) if reading else variant
    return [found[slot.position] for slot in group if slot.position in found]


def _cause(state: IndexState, job_failure_reason: str | None) -> str:
    """Why the pod of `state` ended without a result, in one word."""
    if state.cut_by:
        return state.cut_by
    if state.phase == "succeeded":
        # Its runner exited 0 (the pod's reason says Completed): its result failed it.
        return UNUSABLE_RESULT
    pod = state.pod
    return (pod.reason if pod else None) or job_failure_reason or "unknown"


def _stored(
    state: IndexState,
    pod: PodState | None,
    variant: VariantRef | None,
    ending: Ending,
    result: BenchResult | None,
    *,
    position: int | None = None,
) -> StoredVariant:
    """One variant of index `state`, run by `pod`, as stored (without config.json's word for
    which variant, under its `position`, else the index)."""
    index = position if position is not None else state.index
    return StoredVariant(
        index=variant.index if variant else index,
        state=ending.state,
        variant=variant,
        explanation=with_left_out(ending.explanation, result),
        reason=ending.reason,
        pod=pod.name if pod else None,
        node=pod.node if pod else None,
        attempts=state.attempts,
        preemptions=state.preemptions,
        finished_at=pod.finished_at if pod else None,
        pod_start=pod.start if pod else None,
        result_source=ending.source if result else None,
        result=_with_digest(result, pod.image_digest if pod else None),
    )


def _with_digest(result: BenchResult | None, digest: str | None) -> BenchResult | None:
    """`result` with its image's digest in its fingerprint: the pod's status has it, the
    runner in the pod cannot read it."""
    if result is None or result.fingerprint is None:
        return result
    return result.model_copy(update={"fingerprint": with_image_digest(result.fingerprint, digest)})


def _reported(
    state: IndexState,
    variant: VariantRef | None,
    result: BenchResult,
    reading: ResultReading | None,
) -> tuple[VariantState, str | None, str]:
    """How a variant of a group ended that a result was filed for: its state, reason, words."""
    if (misfiled := _misfiled(result, variant)) is not None:
        return "failed", WRONG_VARIANT, misfiled
    if isinstance(result, ErrorResult):
        words = f"runner error {result.error.type}: {result.error.message}"
        return "failed", result.error.type, words
    if state.phase == "succeeded" and reading is not None:
        return "succeeded", None, _succeeded(state, reading, result)
    return "succeeded", None, f"succeeded; its pod then ended: {state.explanation}"


def _unreported(
    state: IndexState,
    slot: Slot,
    reading: ResultReading | None,
    stubs: set[tuple[int | None, str | None]],
    own: int,
) -> str:
    """Why the variant of `slot` in a group has no result, in words (it failed)."""
    problem = reading.problem if reading else "no pod is left to read it from"
    position, variant = slot
    named = _named(variant) if variant else f"the variant at index {position}"
    stubbed = (position, variant.id) in stubs if variant else any(i == position for i, _ in stubs)
    if stubbed:
        return (
            f"the runner reported {named}, but the termination message had no room "
            f"for its result and the log does not have it: {problem}"
        )
    if state.phase == "succeeded":
        return f"the pod succeeded but left no result for {named}: {problem}"
    return f"the pod ended before {named} reported ({own} of its group had): {state.explanation}"
