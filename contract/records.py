"""The record in git: `results/<workflow>/<cluster>/<job>.json`, one file per finished Job.

A Job's name carries the hash of everything that determines its run, so a file here means
"this exact run is done": `make synth` stops emitting that Job (and the ConfigMaps only it
used), and Flux prunes them. A changed spec gives a new Job name with no record, which runs.
Where records are, and which Jobs have one, is contract.layout's: synth reads the names too.
"""

import json
import os
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from contract.accuracy import AccuracyGate, default_gate, judge
from contract.allocation import Allocation
from contract.atomic import write_atomically
from contract.bounded import read_at_most
from contract.instant import EARLIEST, LATEST, Instant, instant
from contract.lake import StoredObject
from contract.layout import REPEAT_LABEL, SCHEDULED_RUN_LABEL, record_path
from contract.numbers import is_bad_number
from contract.result import (
    BenchResult,
    ErrorResult,
    OkResult,
    read_result,
    unreadable_measurement,
)
from contract.variant import MAX_VARIANTS, RUNTIME_KEY_CONTEXT, VariantRef

RECORD_SCHEMA_VERSION: Final = 1

# A record arrives in git, so a pull request can commit any file in its place, and parsing
# builds Python objects worth up to 25 times the text (a 60 MiB file of tiny variants took
# 3.1 GiB). The largest record gather writes is a Job of MAX_VARIANTS variants, each a full
# result of an interleaved pod (samples left out): 4,184 bytes and 129 JSON values a
# variant, 40 MiB and 1.29 million values in all, which parse to 310 MiB. A record is held
# to those, with room, before any of it is parsed.
MAX_RECORD_BYTES: Final = 64 << 20
"""A record's size: 1.6 times the largest a Job of MAX_VARIANTS variants gets."""
MAX_RECORD_VALUES: Final = 2_000_000
"""JSON values (counted as commas and opening brackets, at C speed, in any text): 1.5 times
the largest record's, so that no record parses to more than about 500 MiB."""

VariantState = Literal["succeeded", "failed"]
UNUSABLE_RESULT: Final = "unusable_result"
"""The reason of a run whose runner exited 0 but left no result a reader can use: none, none
that parses, or one that measured nothing usable (a latency that is not finite or out of
bounds, which collectors before numbers were checked stored: contract/numbers.py)."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


def seconds_between(start: datetime | None, end: datetime | None) -> float | None:
    """Seconds from one time to another; None where either is missing, or where the end
    comes first."""
    if start is None or end is None or end < start:
        return None
    return (end - start).total_seconds()


class PodStart(_Record):
    """When a run's pod reached its runner, as the pod's own status says (the API server's
    times, in whole seconds): what its start-up cost before the runner's own timings."""

    created_at: Instant | None = None
    scheduled_at: Instant | None = None
    """PodScheduled: bound to a node. Before it, the pod waited for one (queued, or no room)."""
    started_at: Instant | None = None
    """The runner container's start. Between the two, the kubelet made the pod's sandbox,
    pulled the runner image and any image volume (an `oci` model), mounted its volumes and
    created the container."""

    @property
    def waited_s(self) -> float | None:
        """From its creation to getting a node."""
        return seconds_between(self.created_at, self.scheduled_at)

    @property
    def starting_s(self) -> float | None:
        """From getting a node to its runner's start: the kubelet's part of the start-up."""
        return seconds_between(self.scheduled_at, self.started_at)


class StoredVariant(_Record):
    """How one completion index of the Job ended."""

    index: int
    state: VariantState
    variant: VariantRef | None = None
    """Which variant of config.json the index runs, from dist/: a failure that left no
    result is still named by model, precision, quantization and batch size."""
    explanation: str
    """In words: the runner's error, OOMKilled, retries exhausted, deadline exceeded..."""
    reason: str | None = None
    """A short, bounded cause for metrics and queries: the runner's error type, or the
    reason Kubernetes gives (OOMKilled, Evicted, DeadlineExceeded...); None on success."""
    pod: str | None = None
    """The pod whose run this is (the last attempt); None when no pod ever ran."""
    node: str | None = None
    attempts: int = 0
    preemptions: int = 0
    finished_at: Instant | None = None
    """The runner container's finishedAt, as the API server reported it; never later than
    the collector's clock when it stored the run (`clock_note` says where it was)."""
    pod_start: PodStart | None = None
    """How its pod got to its runner; None where no pod ran, and in runs stored before it."""
    result_source: Literal["termination-message", "log", "lake"] | None = None
    """Where its result was read: its pod's termination message (compacted), its log, or the
    lake object its runner wrote (whole, its digest checked)."""
    result_object: StoredObject | None = None
    """The lake object its result was read from (`result_source` lake); None otherwise."""
    result: BenchResult | None = None
    accuracy_gate: AccuracyGate | None = None
    """The gate its result was judged by when it was stored: the one its Job said (the
    spec's, GATES_ANNOTATION), or its precision's and quantization's default."""
    accuracy_failed: bool | None = None
    """Whether its result's accuracy misses that gate: the variant is measured and stored
    all the same, and no report ranks it best. None where nothing was judged: no result, or
    a result without accuracy (a runner before it, or a reference that failed): "not
    measured", never passing."""
    allocation: Allocation | None = None
    """The time its pods held their node's devices, every attempt counted, its share where
    its pod ran several variants (contract/allocation.py). None where gather did not read
    it: runs stored before it, and local runs."""
    clock_note: str | None = None
    """Where its pod said it finished later than the collector's clock when the run was
    stored (its node's clock ran ahead, beyond contract.clocks.CLOCK_TOLERANCE): the time it
    said and by how much, in words; `finished_at` is then when the collector stored it."""

    def judged(self, gate: AccuracyGate | None) -> "StoredVariant":
        """This run with its accuracy judged by `gate` (its default where None)."""
        ref = self.variant or (self.result.variant if self.result else None)
        if gate is None and ref is not None:
            gate = default_gate(ref.precision, ref.quantization)
        failed = None
        if isinstance(self.result, OkResult) and gate is not None:
            verdict = judge(self.result.accuracy, gate)
            failed = verdict.failed if verdict.measured else None
        return self.model_copy(update={"accuracy_gate": gate, "accuracy_failed": failed})


def with_left_out(explanation: str, result: BenchResult | None) -> str:
    """A run's explanation, with what its result's reader left out of it (`dropped`) named:
    the words every builder of a StoredVariant from a result just read gives it."""
    if result is None or not result.dropped:
        return explanation
    return f"{explanation}; left out of its result as unusable: {'; '.join(result.dropped)}"


def with_readable_result(data: dict[str, Any]) -> dict[str, Any]:
    """A stored run as JSON parses it (a row's, a record's), its result read as every reader
    reads one (contract.result's `read_result`, or already read so), what was left out of it
    named in its explanation. A result that measured nothing usable (a
    latency an earlier collector let through: null for infinity, below 0) fails the run, its
    reason UNUSABLE_RESULT, rather than every reader of the row or record; a result wrong
    otherwise is left for StoredVariant's validation to name."""
    raw = data.get("result")
    if raw is None:
        return data
    try:
        result = raw if isinstance(raw, OkResult | ErrorResult) else read_result(raw)
    except ValidationError as error:
        words = unreadable_measurement(error)
    else:
        explanation = data.get("explanation")
        if isinstance(explanation, str):
            explanation = with_left_out(explanation, result)
        return {**data, "result": result, "explanation": explanation}
    if words is None:
        return data
    return {
        **data,
        "state": "failed",
        "reason": UNUSABLE_RESULT,
        "explanation": f"{data.get('explanation')}; its result measured nothing usable: {words}",
        "result": None,
        "result_source": None,
        "accuracy_failed": None,
    }


class JobIdentity(_Record):
    """Which run a Job is: where it ran and what it was made from."""

    workflow: str
    cluster: str
    namespace: str
    job: str
    # Defaults, because records are written without None fields: a Job without synth's
    # annotations (applied by hand) must still read back.
    target: str | None = None
    spec_file: str | None = None
    spec_sha256: str | None = None
    image: str | None = None
    repeat: int | None = None
    """Which run of its variants the Job is, where the spec repeats them
    (`benchmark.repeats`), from 0; None where it runs them once."""

    scheduled_run: int | None = None
    """Which run of a scheduled workflow (`scheduling.every`) the Job belongs to, from 1;
    None where the workflow is not scheduled."""
    scheduled_at: Instant | None = None
    """The start of the period that run was started for (UTC, ISO 8601)."""

    @property
    def run(self) -> int:
        """The repeat, 0 for a Job of a workflow that runs its variants once: that run is
        the first of any repeats added later."""
        return self.repeat or 0


def repeat_of(labels: Mapping[str, str]) -> int | None:
    """The repeat a Job's (or pod's) REPEAT_LABEL names; None without one, or where the
    value is not synth's (edited by hand): such a Job counts as its variants' only run."""
    value = labels.get(REPEAT_LABEL)
    return int(value) if value is not None and value.isascii() and value.isdigit() else None


def scheduled_run_of(labels: Mapping[str, str]) -> int | None:
    """The scheduled run a Job's SCHEDULED_RUN_LABEL names; None without the label, or where
    it is not synth's (edited by hand)."""
    value = labels.get(SCHEDULED_RUN_LABEL)
    if value is None or not (value.isascii() and value.isdigit()):
        return None
    return int(value)


def scheduled_at_of(text: str) -> datetime:
    """The period start a Job's SCHEDULED_AT_ANNOTATION gives, read as every time where it
    enters (contract.instant); raises ValueError where it is not one."""
    moment = instant(text)
    if moment is None:
        raise ValueError(
            f"{text[:40]!r} is not a time like 2026-12-07T00:00:00Z, from "
            f"{EARLIEST:%Y} to {LATEST:%Y}"
        )
    return moment


class JobRecord(JobIdentity):
    """Everything gather learnt about one finished Job."""

    schema_version: Literal[1] = RECORD_SCHEMA_VERSION
    outcome: Literal["complete", "failed"]
    """The Job's own end: Complete, or Failed (some index failed, or its deadline passed)."""
    failure: str | None = None
    """Why the Job failed as a whole, in words."""
    variants: tuple[StoredVariant, ...] = Field(max_length=MAX_VARIANTS)
    description: str | None = None
    """The workflow's description and owner, as its spec said when synth made the Job."""
    owner: str | None = None
    reuses: dict[str, tuple[str, ...]] | None = None
    """The variants of earlier Jobs (name: variant ids) whose recorded results this Job's
    spec revision reuses instead of running them again: its report shows them beside its own
    (docs/synth.md, "Incremental sweeps")."""


_LEFT_OUT: Final = {"variants": {"__all__": {"result": {"samples", "samples_in_log"}}}}
"""Per-iteration samples stay in the collector's store: git gets the summaries (about 3 bytes
per iteration would make a 96-variant sweep's record megabytes), the same whether the store
has read the samples yet or not."""


def record_text(record: JobRecord) -> str:
    """The file's bytes: the same record always gives the same text, for clean git diffs."""
    return (
        record.model_dump_json(
            indent=2, exclude_none=True, exclude=_LEFT_OUT, context=RUNTIME_KEY_CONTEXT
        )
        + "\n"
    )


def write_record(root: Path, record: JobRecord) -> tuple[Path, bool]:
    """Write the record atomically; (path, False) when the file already says the same."""
    path = record_path(root, record.workflow, record.cluster, record.job)
    text = record_text(record)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return path, False
    write_atomically(path, text.encode())
    return path, True


class RecordError(ValueError):
    """A file that cannot be a record gather wrote, told before it is parsed."""


_TOO_LARGE: Final = f"it holds more than the {MAX_RECORD_BYTES:,} bytes a record may have"


def parse_record(data: bytes | str) -> JobRecord:
    """A record from its file's bytes; raises RecordError for a text over the bounds and
    pydantic.ValidationError (a ValueError too) naming the field that is wrong."""
    text = data.encode() if isinstance(data, str) else data
    if len(text) > MAX_RECORD_BYTES:
        raise RecordError(_TOO_LARGE)
    values = text.count(b",") + text.count(b"[") + text.count(b"{")
    if values > MAX_RECORD_VALUES:
        raise RecordError(f"it holds about {values:,} values, more than {MAX_RECORD_VALUES:,}")
    try:
        return JobRecord.model_validate_json(text)
    except ValidationError as error:
        if not any(is_bad_number(detail) for detail in error.errors()):
            raise
    # A number no reader of a result takes (a record an earlier gather wrote): each result is
    # read as readers read one, the rest validated as before.
    data = json.loads(text)
    variants = data.get("variants") if isinstance(data, dict) else None
    if isinstance(variants, list):
        readable = [with_readable_result(v) if isinstance(v, dict) else v for v in variants]
        data = {**data, "variants": readable}
    return JobRecord.model_validate(data)


def read_record(path: Path) -> JobRecord:
    """Parse a record file, reading no more of it than a record may hold; raises OSError,
    RecordError or pydantic.ValidationError (see parse_record)."""
    with path.open("rb") as file:
        if os.fstat(file.fileno()).st_size > MAX_RECORD_BYTES:
            raise RecordError(_TOO_LARGE)
        return parse_record(read_at_most(file, MAX_RECORD_BYTES))


Reuses = dict[str, tuple[str, ...]]
"""Earlier Job name -> the ids of its variants a Job reuses."""


def reuses_text(reuses: Mapping[str, Iterable[str]]) -> str:
    """The REUSES_ANNOTATION value synth writes on a Job: compact, sorted JSON."""
    ordered = {job: sorted(ids) for job, ids in sorted(reuses.items())}
    return json.dumps(ordered, separators=(",", ":"))


def parse_reuses(text: str | None) -> Reuses:
    """A Job's REUSES_ANNOTATION ({} without one); raises ValueError if it is not one."""
    if not text:
        return {}
    return _REUSES.validate_json(text)


_REUSES: Final = TypeAdapter(Reuses)
