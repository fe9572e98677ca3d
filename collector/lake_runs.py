"""A workflow's runs as the lake holds them, for `collector report --lake`: every published
Job's JSON Lines file read back (its digest checked) into a store held in memory, and its
record, so that the report reads them through the very code that reads a root's database
and results/ (store.database, store.history): the lake's report is the publishing root's by
construction. Why not DuckDB over the Parquet files: docs/lake.md, "Reporting from the lake".
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime

from contract.lake import LakeUrl, runs_prefix
from contract.objectstore import ObjectStore
from contract.records import JobIdentity, JobRecord
from store.database import MEMORY, Store, open_store
from store.published import JSONL, MAX_JSONL_BYTES, PublishedError, PublishedRun, read_jsonl


class LakeRunsError(ValueError):
    """A published file that cannot be read, or one Job published twice."""


@dataclass(frozen=True)
class LakeRuns:
    """A workflow's published Jobs: their runs in `store` (in memory) and their records."""

    store: Store
    records: list[JobRecord]


def _published(objects: ObjectStore, lake: LakeUrl, workflow: str) -> Iterator[PublishedRun]:
    seen: dict[tuple[str, str, str], str] = {}
    for listed in objects.list(runs_prefix(lake, workflow)):
        if not listed.key.endswith(f".{JSONL}"):
            continue
        try:
            run = read_jsonl(objects.get(listed.key, MAX_JSONL_BYTES), listed.key)
        except PublishedError as error:
            raise LakeRunsError(str(error)) from None
        record = run.record
        job = (record.cluster, record.namespace, record.job)
        if record.workflow != workflow or job in seen:
            where = seen.get(job, f"workflow={workflow}")
            raise LakeRunsError(
                f"{listed.key} holds Job {record.job} of workflow {record.workflow}, "
                f"which {where} holds too: one Job is published once"
            )
        seen[job] = listed.key
        yield run


@contextmanager
def lake_runs(objects: ObjectStore, lake: LakeUrl, workflow: str) -> Iterator[LakeRuns]:
    """Every published Job of `workflow` in `lake`, in a store closed afterwards. Raises
    LakeRunsError, or the object store's StoreError."""
    with open_store(MEMORY) as store:
        records = []
        for run in _published(objects, lake, workflow):
            record = run.record
            identity = JobIdentity.model_validate(
                record.model_dump(include=set(JobIdentity.model_fields))
            )
            by_time: dict[str, list[int]] = {}
            for index, at in run.collected_at.items():
                if at is not None:
                    by_time.setdefault(at, []).append(index)
            for at, indexes in sorted(by_time.items()):
                store.add(
                    identity,
                    [v for v in record.variants if v.index in indexes],
                    datetime.fromisoformat(at),
                )
            earlier = {vid: job for job, ids in run.tried.items() for vid in ids}
            if earlier:
                store.add_reuses(identity, earlier)
            records.append(record)
        # In the order a root's results/ lists them (store.history.records_in).
        records.sort(key=lambda r: f"{r.cluster}/{r.job}.json")
        yield LakeRuns(store=store, records=records)
