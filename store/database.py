"""The results database: SQLite (embedded, no server), one row per variant run.

A variant run is one completion index of one Job in one cluster; Job names carry a content
hash, so that key never means two different runs, and storing it twice is a no-op: gather
can be re-run, or resumed after an interruption, without duplicates.
"""

import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from contract.accuracy import AccuracyGate
from contract.allocation import Allocation
from contract.clocks import ahead_by
from contract.instant import instant, instant_text
from contract.lake import StoredObject
from contract.records import (
    UNUSABLE_RESULT,
    JobIdentity,
    PodStart,
    Reuses,
    StoredVariant,
    with_readable_result,
)
from contract.result import OkResult, parse_result, result_json
from contract.variant import VARIANT_FIELDS, VariantRef, VariantSettings

_SCHEMA_VERSION: Final = 16
# Each version's changes to a database of the version before it, in order: a database of
# version n (1 or more) takes every step above n. Version 0 is a new database.
_MIGRATIONS: Final[dict[int, tuple[str, ...]]] = {
    # Version 1 also copied four fields of the result into columns that nothing read (the
    # result is stored whole in result_json); version 2 drops them.
    2: tuple(
        f"ALTER TABLE variant_runs DROP COLUMN {column}"
        for column in ("device_name", "model_sha256", "status", "p50_ms")
    ),
    # Version 3 adds the Job's repeat (`benchmark.repeats`); rows stored before it are NULL,
    # their Jobs' only run.
    3: ("ALTER TABLE variant_runs ADD COLUMN repeat INTEGER",),
    # Version 4 adds only tables, which _SCHEMA creates.
    # Version 5 adds each run's accuracy gate (JSON) and the gate's verdict; rows stored
    # before it are NULL, not judged: their results have no accuracy (a runner before it),
    # "not measured" in every report.
    5: (
        "ALTER TABLE variant_runs ADD COLUMN accuracy_gate TEXT",
        "ALTER TABLE variant_runs ADD COLUMN accuracy_failed INTEGER",
    ),
    # Version 6 adds what the cluster allocated to each run (contract/allocation.py, JSON);
    # rows stored before it are NULL: "not recorded" in every report.
    6: ("ALTER TABLE variant_runs ADD COLUMN allocation TEXT",),
    # Version 7 adds the scheduled run a Job belongs to (`scheduling.every`) and the start of
    # its period; rows stored before it are NULL: their workflows were not scheduled.
    7: (
        "ALTER TABLE variant_runs ADD COLUMN scheduled_run INTEGER",
        "ALTER TABLE variant_runs ADD COLUMN scheduled_at TEXT",
    ),
    # Version 8 adds how the variant ran (eager, or compiled: `compile`); rows stored before
    # it are NULL, eager, as every variant was then.
    8: ("ALTER TABLE variant_runs ADD COLUMN compile TEXT",),
    # Version 9 adds when each run's pod got its node and started its runner (JSON,
    # PodStart); rows stored before it are NULL: their start-up is unknown. It also adds
    # reuses, the variants a Job reuses the run of an earlier Job for (a local try's, which
    # has no record), a table _SCHEMA creates.
    9: ("ALTER TABLE variant_runs ADD COLUMN pod_start TEXT",),
    # Version 10 adds what a run's times said of its node's clock where it ran ahead of the
    # collector's (its finish is then the collector's time of storing it); rows stored
    # before it are NULL: nothing was said.
    10: ("ALTER TABLE variant_runs ADD COLUMN clock_note TEXT",),
    # Version 14 renames `compile` to `runtime`, the setting's name since runtimes beyond
    # inductor (contract/variant.py); its values (NULL, eager, inductor) stay runtimes.
    14: ("ALTER TABLE variant_runs RENAME COLUMN compile TO runtime",),
    # Version 15 adds the lake object a run's whole result was read from (JSON: key, sha256,
    # bytes); rows stored before it are NULL: read from the pod, as every result was then.
    # Version 16 landed first, so a database of 16 may lack it too (_LANDED_LATE).
    15: ("ALTER TABLE variant_runs ADD COLUMN result_object TEXT",),
    # Version 16 adds only a table, published (the Jobs `collector sync` put in a lake, or
    # found there already), which _SCHEMA creates.
}
_LANDED_LATE: Final = {15: ("result_object", 16)}
"""Steps that landed after a later version had been released, by version: the column each
adds, and the latest version whose databases may lack it (those get it when opened)."""


def _sql_type(setting: FieldInfo) -> str:
    """A setting's column type: INTEGER for a number, TEXT for the rest (names, enums)."""
    return "INTEGER" if setting.annotation is int else "TEXT"


# One per variant run; a variant's settings (contract/variant.py) take a column each after
# its id. Nothing reads by position: every statement names its columns.
_VARIANT_RUNS: Final = (
    ("cluster", "TEXT NOT NULL"),
    ("namespace", "TEXT NOT NULL"),
    ("job", "TEXT NOT NULL"),
    ("job_index", "INTEGER NOT NULL"),
    ("workflow", "TEXT NOT NULL"),
    ("target", "TEXT"),
    ("spec_file", "TEXT"),
    ("spec_sha256", "TEXT"),
    ("image", "TEXT"),
    ("repeat", "INTEGER"),
    ("state", "TEXT NOT NULL CHECK (state IN ('succeeded', 'failed'))"),
    ("explanation", "TEXT NOT NULL"),
    ("reason", "TEXT"),
    ("pod", "TEXT"),
    ("node", "TEXT"),
    ("attempts", "INTEGER NOT NULL"),
    ("preemptions", "INTEGER NOT NULL"),
    ("finished_at", "TEXT"),
    ("variant_id", "TEXT"),
    *((name, _sql_type(setting)) for name, setting in VariantSettings.model_fields.items()),
    ("result_source", "TEXT"),
    ("result_json", "TEXT"),
    ("collected_at", "TEXT NOT NULL"),
    ("accuracy_gate", "TEXT"),
    ("accuracy_failed", "INTEGER"),
    ("allocation", "TEXT"),
    ("scheduled_run", "INTEGER"),
    ("scheduled_at", "TEXT"),
    ("pod_start", "TEXT"),
    ("clock_note", "TEXT"),
    ("result_object", "TEXT"),
)
_COLUMNS: Final = [name for name, _ in _VARIANT_RUNS]
_VARIANT_RUNS_LINES: Final = "".join(f"    {name} {kind},\n" for name, kind in _VARIANT_RUNS)
_SCHEMA: Final = f"""
CREATE TABLE IF NOT EXISTS variant_runs (
{_VARIANT_RUNS_LINES}\
    PRIMARY KEY (cluster, namespace, job, job_index)
);
CREATE INDEX IF NOT EXISTS variant_runs_by_workflow ON variant_runs (workflow);
CREATE TABLE IF NOT EXISTS unread_results (
    cluster TEXT NOT NULL,
    namespace TEXT NOT NULL,
    job TEXT NOT NULL,
    job_index INTEGER NOT NULL,
    workflow TEXT NOT NULL,
    why TEXT NOT NULL,
    variant_json TEXT NOT NULL,
    raw TEXT NOT NULL,
    collected_at TEXT NOT NULL,
    PRIMARY KEY (cluster, namespace, job, job_index)
);
CREATE TABLE IF NOT EXISTS reuses (
    cluster TEXT NOT NULL,
    namespace TEXT NOT NULL,
    job TEXT NOT NULL,
    workflow TEXT NOT NULL,
    variant_id TEXT NOT NULL,
    earlier_job TEXT NOT NULL,
    PRIMARY KEY (cluster, namespace, job, variant_id)
);
CREATE TABLE IF NOT EXISTS published (
    lake TEXT NOT NULL,
    cluster TEXT NOT NULL,
    namespace TEXT NOT NULL,
    job TEXT NOT NULL,
    workflow TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    published_at TEXT NOT NULL,
    PRIMARY KEY (lake, cluster, namespace, job)
);
CREATE TABLE IF NOT EXISTS waiting_causes (
    cluster TEXT NOT NULL,
    namespace TEXT NOT NULL,
    job TEXT NOT NULL,
    completion_index INTEGER NOT NULL,
    workflow TEXT NOT NULL,
    cause TEXT NOT NULL,
    PRIMARY KEY (cluster, namespace, job, completion_index)
);
"""
# Version 4 adds unread_results, results a newer runner wrote, kept as they arrived until a
# collector that reads them stores them in variant_runs; and waiting_causes, why each index
# waited, for a later gather to explain its failure when its pod is gone. CREATE ... IF NOT
# EXISTS adds them.

_JSON_COLUMNS: Final[dict[str, type[BaseModel]]] = {
    "accuracy_gate": AccuracyGate,
    "allocation": Allocation,
    "pod_start": PodStart,
    "result_object": StoredObject,
}
"""The columns that hold one of StoredVariant's fields as JSON, with the model that reads it."""
# The columns that are StoredVariant's own fields, read back by name (those in JSON apart).
_VARIANT_COLUMNS: Final = [
    column
    for column in _COLUMNS
    if column in StoredVariant.model_fields and column not in _JSON_COLUMNS
]
# The variant's identity, a column per field: its index is the row's job_index, and its id
# is called variant_id beside the Job's own columns.
_IDENTITY_COLUMNS: Final = {
    field: "job_index" if field == "index" else "variant_id" if field == "id" else field
    for field in VARIANT_FIELDS
}

_SAMPLES_UNREAD: Final = "json_extract(result_json, '$.samples_in_log') = 1"
"""A run whose result came from a termination message, which never holds the samples."""


@dataclass(frozen=True)
class Unread:
    """A variant whose result a newer runner wrote than this collector reads: kept as it
    arrived, never stored as final on that ground alone."""

    variant: StoredVariant
    """How its pod ended (its state, reason and words, where and when), without the result."""
    raw: str
    """The result as it arrived (JSON; several on lines where none named its variant)."""
    why: str
    """In words: which schema version arrived, and which this collector reads."""


class StoreError(RuntimeError):
    """The database cannot be opened or is of an unknown version."""


@dataclass(frozen=True)
class StoredRun:
    """One row, as reports read it."""

    job: JobIdentity
    variant: StoredVariant
    collected_at: str

    @property
    def result_at(self) -> datetime | None:
        """When a run that succeeded finished (its runner's end, as the API server said),
        never later than when the collector stored it (its own clock: a node's clock that
        ran ahead must not make a result look newer than it is); None for a failure, or
        where no finish time is known."""
        finished = self.variant.finished_at
        if self.variant.state != "succeeded" or finished is None:
            return None
        stored = instant(self.collected_at)
        return min(finished, stored) if stored is not None else finished

    def result_by(self, now: datetime) -> tuple[datetime | None, timedelta | None]:
        """`result_at` as a reader at `now` counts it: never later than `now`, and none
        where it lies ahead of `now` beyond CLOCK_TOLERANCE (a record keeps no time of
        storage, and one stored before gather checked finishes keeps its node's word), with
        that skew for the reader to say. Counted as `now`, such a result would look fresh
        at every reading."""
        at = self.result_at
        if at is None or at <= now:
            return at, None
        skew = ahead_by(at, now)
        return (None, skew) if skew is not None else (now, None)


@dataclass(frozen=True)
class StoredJob:
    """One Job's rows in the database."""

    workflow: str
    cluster: str
    namespace: str
    job: str
    runs: int


@dataclass(frozen=True)
class Added:
    """What one `add` call did."""

    new: int
    already_stored: int


def _json(value: BaseModel | None) -> str | None:
    return result_json(value) if value is not None else None


def _row(job: JobIdentity, variant: StoredVariant, collected_at: str) -> tuple[object, ...]:
    result = variant.result
    ref = variant.variant or (result.variant if result else None)
    values = {
        **job.model_dump(),
        "job_index": variant.index,
        "state": variant.state,
        "explanation": variant.explanation,
        "reason": variant.reason,
        "pod": variant.pod,
        "node": variant.node,
        "attempts": variant.attempts,
        "preemptions": variant.preemptions,
        "finished_at": instant_text(variant.finished_at) if variant.finished_at else None,
        **{
            column: getattr(ref, field) if ref else None
            for field, column in _IDENTITY_COLUMNS.items()
            if field != "index"
        },
        "result_source": variant.result_source,
        "result_json": _json(result),
        "collected_at": collected_at,
        "accuracy_failed": variant.accuracy_failed,
        "clock_note": variant.clock_note,
        **{column: _json(getattr(variant, column)) for column in _JSON_COLUMNS},
    }
    return tuple(values[column] for column in _COLUMNS)


MEMORY: Final = Path(":memory:")
"""A database held in memory only, gone when closed: what a report from the lake reads."""


class Store:
    """An open results database."""

    def __init__(self, path: Path) -> None:
        if path != MEMORY:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(path)
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if not 0 <= version <= _SCHEMA_VERSION:
                raise StoreError(
                    f"{path} has schema version {version}; this collector knows "
                    f"{_SCHEMA_VERSION}: use the collector version that wrote it"
                )
            with self._db:
                for step, statements in _MIGRATIONS.items():
                    if 0 < version < step or self._landed_late(step, version):
                        for statement in statements:
                            self._db.execute(statement)
                # Versions 3 and 4 lack the tables _SCHEMA creates.
                self._db.executescript(_SCHEMA)
                self._db.execute(f"PRAGMA user_version = {_SCHEMA_VERSION}")
        except sqlite3.DatabaseError as error:
            raise StoreError(f"cannot open the results database {path}: {error}") from error
        self.path = path

    def _landed_late(self, step: int, version: int) -> bool:
        """Whether a database of `version` lacks the column of a step that landed after
        that version was released (_LANDED_LATE)."""
        column, latest = _LANDED_LATE.get(step, ("", 0))
        if not step <= version <= latest:
            return False
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(variant_runs)")}
        return column not in columns

    def close(self) -> None:
        self._db.close()

    def add(
        self,
        job: JobIdentity,
        variants: Sequence[StoredVariant],
        now: datetime | None = None,
        *,
        replace: bool = False,
    ) -> Added:
        """Store each variant run unless it already is (or over it, with `replace`: a local
        run repeated on purpose); all of them or none (one transaction)."""
        collected_at = (now or datetime.now(UTC)).isoformat(timespec="seconds")
        placeholders = ", ".join("?" * len(_COLUMNS))
        verb = "INSERT OR REPLACE" if replace else "INSERT"
        statement = f"{verb} INTO variant_runs ({', '.join(_COLUMNS)}) VALUES ({placeholders})" + (
            "" if replace else " ON CONFLICT DO NOTHING"
        )
        with self._db:
            before = self._db.total_changes
            self._db.executemany(statement, [_row(job, v, collected_at) for v in variants])
            new = self._db.total_changes - before
            # Stored for good: what was kept of a newer runner's result has been read.
            self._db.executemany(
                "DELETE FROM unread_results "
                "WHERE cluster = ? AND namespace = ? AND job = ? AND job_index = ?",
                [(job.cluster, job.namespace, job.job, v.index) for v in variants],
            )
            # A Job's own run of a variant stands for it, not the earlier one it reused.
            self._db.executemany(
                "DELETE FROM reuses "
                "WHERE cluster = ? AND namespace = ? AND job = ? AND variant_id = ?",
                [
                    (job.cluster, job.namespace, job.job, v.variant.id)
                    for v in variants
                    if v.variant
                ],
            )
        return Added(new=new, already_stored=len(variants) - new)

    def keep_unread(
        self, job: JobIdentity, unread: Sequence[Unread], now: datetime | None = None
    ) -> None:
        """Keep results this collector cannot read as they arrived (the first copy of each)."""
        collected_at = (now or datetime.now(UTC)).isoformat(timespec="seconds")
        with self._db:
            self._db.executemany(
                "INSERT INTO unread_results (cluster, namespace, job, job_index, workflow, why, "
                "variant_json, raw, collected_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                [
                    (
                        job.cluster,
                        job.namespace,
                        job.job,
                        kept.variant.index,
                        job.workflow,
                        kept.why,
                        result_json(kept.variant),
                        kept.raw,
                        collected_at,
                    )
                    for kept in unread
                ],
            )

    def add_reuses(self, job: JobIdentity, earlier: Mapping[str, str]) -> None:
        """Note that `job` reuses, for each variant id of `earlier`, that variant's run in the
        earlier Job named (same cluster and namespace) instead of running it: a local try's
        incremental sweep, which has no record in results/ to say so."""
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO reuses "
                "(cluster, namespace, job, workflow, variant_id, earlier_job) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (job.cluster, job.namespace, job.job, job.workflow, variant_id, earlier_job)
                    for variant_id, earlier_job in sorted(earlier.items())
                ],
            )

    def reuses(self, workflow: str) -> dict[tuple[str, str], Reuses]:
        """(cluster, Job) -> the earlier Jobs of that cluster whose runs the Job reuses, with
        the variant ids, for every Job of `workflow` that reuses any (`add_reuses`)."""
        rows = self._db.execute(
            "SELECT cluster, job, earlier_job, variant_id FROM reuses WHERE workflow = ? "
            "ORDER BY cluster, job, earlier_job, variant_id",
            (workflow,),
        )
        found: dict[tuple[str, str], dict[str, list[str]]] = {}
        for cluster, job, earlier_job, variant_id in rows:
            found.setdefault((cluster, job), {}).setdefault(earlier_job, []).append(variant_id)
        return {
            key: {earlier: tuple(ids) for earlier, ids in jobs.items()}
            for key, jobs in found.items()
        }

    def remember_cause(self, job: JobIdentity, index: int, cause: str) -> None:
        """Why completion index `index` of `job` waits (over what was said before)."""
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO waiting_causes "
                "(cluster, namespace, job, completion_index, workflow, cause) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (job.cluster, job.namespace, job.job, index, job.workflow, cause),
            )

    def allocate(self, job: JobIdentity, allocations: Mapping[int, Allocation]) -> None:
        """Keep what the cluster allocated to stored runs of `job`, by index: runs stored
        before their index had ended (a group's, measured by an attempt a retry followed)
        get it once it has."""
        with self._db:
            self._db.executemany(
                "UPDATE variant_runs SET allocation = ? "
                "WHERE cluster = ? AND namespace = ? AND job = ? AND job_index = ?",
                [
                    (_json(allocation), job.cluster, job.namespace, job.job, index)
                    for index, allocation in allocations.items()
                ],
            )

    def causes(self, cluster: str, namespace: str, job: str) -> dict[int, str]:
        """Why each completion index of `job` was last seen waiting, where one was."""
        rows = self._db.execute(
            "SELECT completion_index, cause FROM waiting_causes "
            "WHERE cluster = ? AND namespace = ? AND job = ?",
            (cluster, namespace, job),
        )
        return dict(rows.fetchall())

    def unread(self, cluster: str, namespace: str, job: str) -> list[Unread]:
        """The kept results of `job` no collector has read yet, by index."""
        rows = self._db.execute(
            "SELECT variant_json, raw, why FROM unread_results "
            "WHERE cluster = ? AND namespace = ? AND job = ? ORDER BY job_index",
            (cluster, namespace, job),
        )
        return [
            Unread(StoredVariant.model_validate_json(variant), raw, why)
            for variant, raw, why in rows
        ]

    def stored_indexes(self, cluster: str, namespace: str, job: str) -> set[int]:
        """The completion indexes of `job` already stored."""
        rows = self._db.execute(
            "SELECT job_index FROM variant_runs WHERE cluster = ? AND namespace = ? AND job = ?",
            (cluster, namespace, job),
        )
        return {index for (index,) in rows}

    def variants(self, cluster: str, namespace: str, job: str) -> list[StoredVariant]:
        """The stored variant runs of one Job, by index."""
        cursor = self._db.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM variant_runs "
            "WHERE cluster = ? AND namespace = ? AND job = ? ORDER BY job_index",
            (cluster, namespace, job),
        )
        return [self._stored_run(dict(zip(_COLUMNS, row, strict=True))).variant for row in cursor]

    def runs(self, workflow: str) -> list[StoredRun]:
        """Every stored run of `workflow`, by cluster, Job and index."""
        cursor = self._db.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM variant_runs WHERE workflow = ? "
            "ORDER BY cluster, namespace, job, job_index",
            (workflow,),
        )
        return [self._stored_run(dict(zip(_COLUMNS, row, strict=True))) for row in cursor]

    def samples_unread(self, workflow: str) -> list[StoredRun]:
        """The runs of `workflow` stored from a termination message, whose samples only their
        pod's log has (`samples_in_log`), by cluster, Job and index."""
        cursor = self._db.execute(
            f"SELECT {', '.join(_COLUMNS)} FROM variant_runs WHERE workflow = ? "
            f"AND {_SAMPLES_UNREAD} ORDER BY cluster, namespace, job, job_index",
            (workflow,),
        )
        return [self._stored_run(dict(zip(_COLUMNS, row, strict=True))) for row in cursor]

    def add_samples(self, job: JobIdentity, index: int, result: OkResult) -> bool:
        """Store `result`, read whole from the log, over the run of `job`'s `index` whose
        samples were unread; whether there was such a run."""
        with self._db:
            cursor = self._db.execute(
                f"UPDATE variant_runs SET result_json = ?, result_source = 'log' "
                f"WHERE cluster = ? AND namespace = ? AND job = ? AND job_index = ? "
                f"AND {_SAMPLES_UNREAD}",
                (
                    result_json(result),
                    job.cluster,
                    job.namespace,
                    job.job,
                    index,
                ),
            )
        return cursor.rowcount == 1

    def jobs(self, cluster: str | None, workflow: str | None = None) -> list[StoredJob]:
        """The Jobs stored for `cluster` (every cluster's where None; of `workflow` only, when
        given), by workflow, cluster and name."""
        cursor = self._db.execute(
            "SELECT workflow, cluster, namespace, job, COUNT(*) FROM variant_runs "
            "WHERE (? IS NULL OR cluster = ?) AND (? IS NULL OR workflow = ?) "
            "GROUP BY workflow, cluster, namespace, job ORDER BY workflow, cluster, namespace, job",
            (cluster, cluster, workflow, workflow),
        )
        return [StoredJob(*row) for row in cursor]

    def published(self, lake: str) -> dict[tuple[str, str, str], str]:
        """(cluster, namespace, Job) -> its content digest, for each Job this store put in
        `lake` or found there the same (`mark_published`)."""
        rows = self._db.execute(
            "SELECT cluster, namespace, job, content_sha256 FROM published WHERE lake = ?",
            (lake,),
        )
        return {(cluster, namespace, job): digest for cluster, namespace, job, digest in rows}

    def mark_published(
        self, lake: str, job: StoredJob, content_sha256: str, now: datetime | None = None
    ) -> None:
        """Note that `lake` holds `job` whole, as this store's copy hashes to `content_sha256`."""
        at = (now or datetime.now(UTC)).isoformat(timespec="seconds")
        with self._db:
            self._db.execute(
                "INSERT OR REPLACE INTO published (lake, cluster, namespace, job, workflow, "
                "content_sha256, published_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (lake, job.cluster, job.namespace, job.job, job.workflow, content_sha256, at),
            )

    def forget(self, jobs: Sequence[StoredJob]) -> int:
        """Delete every run of `jobs`, all or none; how many rows went."""
        keys = [(j.workflow, j.cluster, j.namespace, j.job) for j in jobs]
        with self._db:
            before = self._db.total_changes
            self._db.executemany(
                "DELETE FROM variant_runs "
                "WHERE workflow = ? AND cluster = ? AND namespace = ? AND job = ?",
                keys,
            )
            deleted = self._db.total_changes - before
            for table in ("unread_results", "waiting_causes", "reuses", "published"):
                self._db.executemany(
                    f"DELETE FROM {table} "
                    "WHERE workflow = ? AND cluster = ? AND namespace = ? AND job = ?",
                    keys,
                )
            return deleted

    @staticmethod
    def _stored_run(row: dict[str, object]) -> StoredRun:
        identity = JobIdentity.model_validate(
            {
                **{field: row[field] for field in JobIdentity.model_fields},
                # Stored as its Job said it before the annotation was read as a time: one
                # that is none reads as unknown, as a row's finish does.
                "scheduled_at": instant(row["scheduled_at"]),
            }
        )
        try:
            variant = _stored_variant(row)
        except (ValidationError, ValueError) as error:
            # Nothing stored fails its readers: the row stays as it is, for whoever can read
            # it, and reads as a failure saying why.
            variant = StoredVariant(
                index=int(str(row["job_index"])),
                state="failed",
                reason=UNUSABLE_RESULT,
                explanation=f"its stored row cannot be read: {_first_line(error)}",
            )
        return StoredRun(job=identity, variant=variant, collected_at=str(row["collected_at"]))


def _first_line(error: Exception) -> str:
    if isinstance(error, ValidationError):
        return "; ".join(
            f"{'.'.join(map(str, detail['loc']))}: {detail['msg']}" for detail in error.errors()
        )
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def _result(text: object) -> object:
    """A row's result: read, or where it cannot be, as JSON parses it, for
    with_readable_result to say why (Python's json reads the NaN and Infinity an earlier
    collector may have let through)."""
    if not text:
        return None
    try:
        return parse_result(str(text))
    except ValidationError:
        return json.loads(str(text))


def _stored_variant(row: dict[str, object]) -> StoredVariant:
    """One row's run; raises ValidationError or ValueError where the row holds what no
    version of the collector stores."""
    ref = None
    if row["variant_id"] is not None:
        # A later setting is NULL in rows stored before its column: its default.
        ref = VariantRef.model_validate(
            {
                field: row[column]
                for field, column in _IDENTITY_COLUMNS.items()
                if row[column] is not None
            }
        )
    return StoredVariant.model_validate(
        with_readable_result(
            {
                **{name: row[name] for name in _VARIANT_COLUMNS},
                "index": row["job_index"],
                # A row stored before times were checked where they enter may hold one
                # that is none: it reads as unknown, not as a failure of every report.
                "finished_at": instant(row["finished_at"]),
                "variant": ref,
                "result": _result(row["result_json"]),
                **{
                    column: model.model_validate_json(str(row[column])) if row[column] else None
                    for column, model in _JSON_COLUMNS.items()
                },
            }
        )
    )


@contextmanager
def open_store(path: Path) -> Iterator[Store]:
    """The database at `path`, created if missing, closed afterwards."""
    store = Store(path)
    try:
        yield store
    finally:
        store.close()
