"""`collector forget`: delete stored runs from the results database.

A local run (`localrun`, cluster `local`) is a try on this machine, held only in the database:
forgetting it deletes it. A cluster's runs are held twice once gather has recorded their Job:
in the database and in results/, which synth and every clone read. Forgetting those deletes
the database's copy only (the report still reads the record: `git rm` the record to forget it
for everyone). A cluster's run held nowhere but the database is refused: forgetting it would
lose it, and a result is never lost.
"""

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from contract.layout import LOCAL_CLUSTER, record_path
from store.database import Store, StoredJob


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
