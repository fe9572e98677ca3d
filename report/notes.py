"""What the records, dist/ and git add to a report beside the runs themselves."""

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from contract.layout import FLEET_FILE
from contract.pricing import CHECKOUT, PriceList, Pricing, Version
from contract.records import JobRecord, Reuses
from report.model import Notes
from store.database import StoredRun
from store.history import file_versions, in_dist, record_ages, record_commits, spec_revisions


def notes_of(
    root: Path,
    workflow: str,
    records: Iterable[JobRecord],
    runs: Iterable[StoredRun],
    tried: Mapping[tuple[str, str], Reuses] | None = None,
) -> Notes:
    """What the records (the current ones and a baseline's), dist/ and git add to the report
    of `runs`: Job names are content hashes, so one mapping serves the runs and the
    baseline. `tried`: the reuses the store holds (Store.reuses), by cluster and Job."""
    every = list(records)
    return Notes(
        reuses={r.job: r.reuses for r in every if r.reuses},
        about={r.job: (r.description, r.owner) for r in every},
        spec_revisions=spec_revisions(
            root,
            {
                (r.job.spec_file, r.job.spec_sha256)
                for r in runs
                if r.job.spec_file and r.job.spec_sha256
            },
        ),
        record_ages=record_ages(root, workflow),
        in_dist=in_dist(root, workflow),
        tried=tried or {},
    )


def pricing_of(root: Path, workflow: str, read: Callable[[str], PriceList | None]) -> Pricing:
    """The prices each Job of `workflow` ran at: the fleet file as the commit that added its
    record held it, else the checkout's; `read` reads a version of it (`CHECKOUT`, or a
    commit), once per version."""
    commits = record_commits(root, workflow)
    versions = file_versions(root, FLEET_FILE, commits.values())
    tables = {version: read(version) for version in sorted(filter(None, versions.values()))}
    recorded: dict[str, dict[str, Version]] = {}
    for (cluster, job), commit in sorted(commits.items()):
        if version := versions.get(commit):
            recorded.setdefault(cluster, {})[job] = (version, tables[version])
    return Pricing(checkout=read(CHECKOUT), recorded=recorded)
