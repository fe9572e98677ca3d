"""`collector forget`: delete stored runs from the results database.

A local run (`localrun`, cluster `local`) is a try on this machine, held only in the database:
forgetting it deletes it. A cluster's runs are held twice once gather has recorded their Job:
in the database and in results/, which synth and every clone read. Forgetting those deletes
the database's copy only (the report still reads the record: `git rm` the record to forget it
for everyone). A cluster's run held nowhere but the database is refused: forgetting it would
lose it, and a result is never lost.

`--everywhere` is the other forgetting: a run that must go (privacy, a mistaken run) is
removed from every place it was written: the lake's published files and the raw objects
its runners wrote, its record in results/ (the deletion to be committed), and the database.
Another collector's database still holding it publishes it again at its next sync: it is
forgotten there too, or its store deleted.
"""

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from contract.lake import LakeUrl, raw_job_prefix, runs_prefix
from contract.layout import LOCAL_CLUSTER, RESULTS, record_path
from contract.objectstore import ObjectStore
from store.database import Store, StoredJob
from store.published import EXTENSIONS


class ForgetError(ValueError):
    """Nothing to forget matches, or forgetting would lose results."""


@dataclass(frozen=True)
class Forgotten:
    """The Jobs whose runs went (or, in a dry run, would go)."""

    jobs: tuple[StoredJob, ...]
    recorded: tuple[StoredJob, ...]
    """Those of them that results/ still holds, and so the report still shows."""

    @property
    def runs(self) -> int:
        return sum(job.runs for job in self.jobs)


def _chosen(
    store: Store, cluster: str, workflow: str | None, names: Collection[str]
) -> list[StoredJob]:
    stored = store.jobs(cluster, workflow)
    where = f"cluster {cluster}" + (f", workflow {workflow}" if workflow else "")
    if not stored:
        raise ForgetError(f"the database holds no runs of {where}")
    unknown = set(names) - {job.job for job in stored}
    if unknown:
        raise ForgetError(
            f"no stored Job named {', '.join(sorted(unknown))} in {where}; stored: "
            + ", ".join(sorted({job.job for job in stored}))
        )
    return [job for job in stored if not names or job.job in names]


def forget(
    store: Store,
    root: Path,
    cluster: str,
    *,
    workflow: str | None = None,
    jobs: Collection[str] = (),
    dry_run: bool = False,
) -> Forgotten:
    """Delete the runs of `cluster`'s stored Jobs (only `workflow`'s, only those named in
    `jobs`, when given); all of them or none. Raises ForgetError when nothing matches, or when
    a cluster's Job is recorded nowhere but here."""
    chosen = _chosen(store, cluster, workflow, jobs)
    recorded = tuple(
        job for job in chosen if record_path(root, job.workflow, job.cluster, job.job).is_file()
    )
    unrecorded = [job for job in chosen if job not in recorded]
    if cluster != LOCAL_CLUSTER and unrecorded:
        raise ForgetError(
            "refusing to forget runs held only in this database (results/ has no record of "
            f"them; they would be lost): {', '.join(f'{j.workflow}/{j.job}' for j in unrecorded)}"
            "; run `collector gather` to record them first, or name other Jobs with --job"
        )
    if not dry_run:
        store.forget(chosen)
    return Forgotten(jobs=tuple(chosen), recorded=recorded)


@dataclass(frozen=True)
class Everywhere:
    """What forgetting runs everywhere removed (or, in a dry run, would remove)."""

    jobs: tuple[str, ...]
    """The Jobs' names, found in any of the places below."""
    stored: tuple[StoredJob, ...]
    records: tuple[Path, ...]
    """Their records in results/ (deleted from the working tree: commit the deletion)."""
    lake_keys: tuple[str, ...]
    """Their published files and raw objects in the lake."""


def _published_job(key: str) -> str | None:
    """The Job a published file is of: its name up to its extension."""
    name = key.rsplit("/", 1)[-1]
    return next((name[: -len(ext) - 1] for ext in EXTENSIONS if name.endswith(f".{ext}")), None)


def forget_everywhere(
    store: Store,
    root: Path,
    cluster: str,
    workflow: str,
    *,
    jobs: Collection[str] = (),
    lake: tuple[ObjectStore, LakeUrl] | None = None,
    dry_run: bool = False,
) -> Everywhere:
    """Remove `workflow`'s runs in `cluster` (only the Jobs named in `jobs`, when given)
    from every place they were written: the lake's published files and raw objects first
    (where a lake is given), then the records in results/, then the database, so that a
    failure part-way leaves what is left findable by running it again. Raises ForgetError
    when a Job named is found nowhere, or nothing matches; the lake's StoreError as it is."""
    stored = store.jobs(cluster, workflow)
    records = {path.stem: path for path in (root / RESULTS / workflow / cluster).glob("*.json")}
    keys: dict[str, list[str]] = {}
    if lake is not None:
        objects, url = lake
        for listed in objects.list(runs_prefix(url, workflow, cluster)):
            if (job := _published_job(listed.key)) is not None:
                keys.setdefault(job, []).append(listed.key)
        raw = raw_job_prefix(url, workflow=workflow, cluster=cluster)
        for listed in objects.list(raw):
            keys.setdefault(listed.key[len(raw) :].split("/", 1)[0], []).append(listed.key)
    found = {job.job for job in stored} | records.keys() | keys.keys()
    where = f"workflow {workflow} in cluster {cluster}"
    if unknown := set(jobs) - found:
        raise ForgetError(
            f"no Job named {', '.join(sorted(unknown))} of {where} in the database, "
            f"{RESULTS}/ or the lake; found: {', '.join(sorted(found)) or 'none'}"
        )
    chosen = sorted(set(jobs) or found)
    if not chosen:
        raise ForgetError(f"nothing of {where} in the database, {RESULTS}/ or the lake")
    gone = Everywhere(
        jobs=tuple(chosen),
        stored=tuple(job for job in stored if job.job in chosen),
        records=tuple(records[job] for job in chosen if job in records),
        lake_keys=tuple(key for job in chosen for key in keys.get(job, ())),
    )
    if dry_run:
        return gone
    if lake is not None and gone.lake_keys:
        lake[0].delete(gone.lake_keys)
    for path in gone.records:
        path.unlink(missing_ok=True)
    store.forget(gone.stored)
    return gone
