"""`collector sync`: publish the local store's finished Jobs to the lake, each file once.

A Job is published once gather has recorded it (results/ holds its record: the Job is
finished, and no later variant will join it), from the store's copy of its runs (with the
samples the store read) and the record. Its files (store/published.py) go to the lake's
runs/workflow=W/cluster=C/date=D/ with put-once: a key already holding the same bytes is
this Job's own earlier, interrupted sync; another collector's copy of the Job is refused by
the store and counted as already there where it holds the same run (its content digest,
which leaves out each collector's time of storing), and is an error naming both digests
where it does not: a Job's files are never overwritten. S3 puts are whole or nothing, so a
sync killed mid-way left whole files only, and a re-run finishes the Job. A Job whose files
are all in the lake is noted in the store (`published`) and never sent again.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from contract.lake import LakeUrl, run_key
from contract.layout import LOCAL_CLUSTER, record_path
from contract.objectstore import ObjectStore, StoreError, StoreErrorKind
from contract.records import RecordError, Reuses, read_record
from store.database import Store, StoredJob, StoredRun
from store.published import (
    EXTENSIONS,
    JSONL,
    SAMPLES,
    VARIANTS,
    PublishedError,
    PublishedRun,
    content_sha256,
    jsonl_bytes,
    published_digest,
    published_run,
    samples_parquet,
    variants_parquet,
)

_WRITERS: Final[dict[str, Callable[[PublishedRun], bytes]]] = {
    VARIANTS: variants_parquet,
    SAMPLES: samples_parquet,
    JSONL: jsonl_bytes,
}
_ROOM: Final = 1 << 20
"""Beyond twice this store's copy, and this: another copy of one run differs from it only in
its times of storing, so a file larger is no copy of it and is not read."""


class SyncError(RuntimeError):
    """A Job the lake holds differently, or a store that failed: nothing overwritten."""


@dataclass
class Synced:
    """What one sync did, Job by Job (`workflow/cluster/job`)."""

    published: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    """In the lake already, the same run: another collector's copy, or this store's."""
    unrecorded: list[str] = field(default_factory=list)
    """Stored but not recorded in results/ (not finished, or gathered with --keep)."""
    skipped: int = 0
    """Noted as published by an earlier sync: no request made."""


def _name(job: StoredJob) -> str:
    return f"{job.workflow}/{job.cluster}/{job.job}"


def _put(objects: ObjectStore, key: str, data: bytes, ext: str, digest: str) -> bool:
    """Put `data` once at `key`; whether it was there already, holding the same run (the
    same bytes, or another collector's copy whose content hashes to `digest`)."""
    try:
        objects.put_once(key, data)
    except StoreError as error:
        if error.kind is not StoreErrorKind.EXISTS:
            raise
    else:
        return False
    try:
        found = published_digest(objects.get(key, 2 * len(data) + _ROOM), ext, key)
    except StoreError as unread:
        if unread.kind is not StoreErrorKind.TOO_LARGE:
            raise
        raise SyncError(
            f"the lake holds a different run under this Job's name at {key}: far larger than "
            f"this store's copy ({unread}); nothing overwritten"
        ) from None
    except PublishedError as error:
        raise SyncError(
            f"the lake holds another file at {key}, which is no published run: {error}; "
            "it is left as it is"
        ) from None
    if found != digest:
        raise SyncError(
            f"the lake holds a different run under this Job's name at {key}: its content "
            f"hashes to {found}, this store's to {digest}; nothing overwritten (compare the "
            "two with `collector report --lake`, or forget one of them)"
        )
    return True


def _publish(objects: ObjectStore, lake: LakeUrl, run: PublishedRun, digest: str) -> bool:
    """Put each of the run's files once; whether the Job was in the lake already (its JSON
    Lines file, which holds the publishing collector's times, another collector's)."""
    record = run.record
    already = False
    for ext in EXTENSIONS:
        key = run_key(
            lake,
            workflow=record.workflow,
            cluster=record.cluster,
            date=run.date,
            job=record.job,
            ext=ext,
        )
        there = _put(objects, key, _WRITERS[ext](run), ext, digest)
        already = there if ext == JSONL else already
    return already


def sync(
    store: Store, root: Path, objects: ObjectStore, lake: LakeUrl, workflow: str | None = None
) -> Synced:
    """Publish every recorded Job the store holds (of `workflow` only, where given) that it
    has not published to `lake` yet. Raises SyncError (a Job the lake holds differently, a
    record that cannot be read) or StoreError (the object store failed), having published
    the Jobs before it; a re-run goes on from there."""
    done = Synced()
    noted = store.published(str(lake))
    jobs = [job for job in store.jobs(None, workflow) if job.cluster != LOCAL_CLUSTER]
    runs: dict[tuple[str, str, str], list[StoredRun]] = {}
    reuses: dict[str, dict[tuple[str, str], Reuses]] = {}
    for job in jobs:
        if (job.cluster, job.namespace, job.job) in noted:
            done.skipped += 1
            continue
        path = record_path(root, job.workflow, job.cluster, job.job)
        if not path.is_file():
            done.unrecorded.append(_name(job))
            continue
        try:
            record = read_record(path)
        except (OSError, RecordError, ValueError) as error:
            raise SyncError(f"{path} is not a results record: {error}") from None
        if job.workflow not in reuses:
            reuses[job.workflow] = store.reuses(job.workflow)
            for stored in store.runs(job.workflow):
                key = (stored.job.cluster, stored.job.namespace, stored.job.job)
                runs.setdefault(key, []).append(stored)
        held = runs.get((job.cluster, job.namespace, job.job), [])
        tried = reuses[job.workflow].get((job.cluster, job.job), {})
        run = published_run(record, held, tried)
        digest = content_sha256(run)
        already = _publish(objects, lake, run, digest)
        store.mark_published(str(lake), job, digest)
        (done.already if already else done.published).append(_name(job))
    return done
