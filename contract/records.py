"""The record in git: `results/<workflow>/<cluster>/<job>.json`, one file per finished Job.

A Job's name carries the hash of everything that determines its run, so a file here means
"this exact run is done": `make synth` stops emitting that Job (and the ConfigMaps only it
used), and Flux prunes them. A changed spec gives a new Job name with no record, which runs.
Where records are, and which Jobs have one, is contract.layout's: synth reads the names too.
"""

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, TypeAdapter

from contract.layout import REPEAT_LABEL, record_path
from contract.result import BenchResult
from contract.variant import VariantRef

RECORD_SCHEMA_VERSION: Final = 1

VariantState = Literal["succeeded", "failed"]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


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
    finished_at: str | None = None
    """The runner container's finishedAt, as the API server reported it."""
    result_source: Literal["termination-message", "log"] | None = None
    result: BenchResult | None = None


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


class JobRecord(JobIdentity):
    """Everything gather learnt about one finished Job."""

    schema_version: Literal[1] = RECORD_SCHEMA_VERSION
    outcome: Literal["complete", "failed"]
    """The Job's own end: Complete, or Failed (some index failed, or its deadline passed)."""
    failure: str | None = None
    """Why the Job failed as a whole, in words."""
    variants: tuple[StoredVariant, ...]
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
    return record.model_dump_json(indent=2, exclude_none=True, exclude=_LEFT_OUT) + "\n"


def write_record(root: Path, record: JobRecord) -> tuple[Path, bool]:
    """Write the record atomically; (path, False) when the file already says the same."""
    path = record_path(root, record.workflow, record.cluster, record.job)
    text = record_text(record)
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return path, False
    path.parent.mkdir(parents=True, exist_ok=True)
    # A reader (synth, git) never sees half a record: write aside, then rename over.
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path, True


def read_record(path: Path) -> JobRecord:
    """Parse a record file; raises pydantic.ValidationError naming the bad field."""
    return JobRecord.model_validate_json(path.read_bytes())


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
