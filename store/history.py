"""Runs to report on, from the database and from the records in git (this checkout's, or
another branch's or commit's): a fresh clone has no database, but its results/ are there."""

import hashlib
import subprocess
from collections.abc import Iterable
from pathlib import Path, PurePath, PurePosixPath
from typing import Final, NamedTuple

from pydantic import ValidationError

from contract.dist import read_workload
from contract.layout import RESULTS, cluster_of, workload_files
from contract.records import (
    MAX_RECORD_BYTES,
    JobIdentity,
    JobRecord,
    RecordError,
    parse_record,
    read_record,
)
from store.database import Store, StoredRun


class HistoryError(ValueError):
    """A record cannot be read, or a git revision does not exist."""


def runs_of(records: Iterable[JobRecord]) -> list[StoredRun]:
    """Each record's variants as stored runs (a record keeps no time of storage: a finish
    time, a node's clock, would stand in for the collector's)."""
    runs = []
    for record in records:
        identity = JobIdentity.model_validate(
            record.model_dump(include=set(JobIdentity.model_fields))
        )
        runs += [StoredRun(identity, variant, "") for variant in record.variants]
    return runs


def records_in(root: Path, workflow: str) -> list[JobRecord]:
    """The records under results/<workflow>/ in this checkout."""
    records = []
    for path in sorted((root / RESULTS / workflow).glob("*/*.json")):
        try:
            records.append(read_record(path))
        except (RecordError, ValidationError) as error:
            raise HistoryError(f"{path} is not a results record: {error}") from error
    return records


def records_at(root: Path, revision: str, workflow: str) -> list[JobRecord]:
    """The records under results/<workflow>/ as git holds them at `revision` (a branch, tag
    or commit): how a pull request compares itself with main."""
    folder = PurePosixPath(RESULTS, workflow).as_posix()
    listing = _git(root, "ls-tree", "-r", "--name-only", revision, "--", folder)
    records = []
    for name in sorted(line for line in listing.splitlines() if line.endswith(".json")):
        where = f"{revision}:{name}"
        # Sized before it is shown: a commit can hold any file under a record's name.
        if int(_git(root, "cat-file", "-s", where)) > MAX_RECORD_BYTES:
            raise HistoryError(f"{where} is not a results record: over {MAX_RECORD_BYTES:,} bytes")
        try:
            records.append(parse_record(_git(root, "show", where)))
        except (RecordError, ValidationError) as error:
            raise HistoryError(f"{where} is not a results record: {error}") from error
    return records


SPEC_COMMITS_SEARCHED: Final = 50
"""How far back a spec file's history is searched for the bytes a Job was made from."""
CURRENT: Final = -1
"""The age of what the checkout holds now: newer than any commit."""


class SpecRevision(NamedTuple):
    """Where a spec file's bytes stand in its history: which revision a Job was made from."""

    commit: str | None
    """The newest of the file's last SPEC_COMMITS_SEARCHED commits whose copy has the bytes."""
    age: int
    """CURRENT where the checkout's file has the bytes; else how many of the file's commits
    are newer than `commit`. Git's order, never a clock: it orders spec revisions."""


def spec_revisions(
    root: Path, specs: Iterable[tuple[str, str]]
) -> dict[tuple[str, str], SpecRevision]:
    """(spec file, sha256) -> its revision; a pair neither the checkout nor the file's recent
    history holds (an older history, an edit since undone, no git) is left out."""
    found = {}
    for file, sha256 in sorted(set(specs)):
        current = _checkout_sha256(root, file) == sha256
        try:
            commits = _git(
                root, "log", f"-{SPEC_COMMITS_SEARCHED}", "--format=%H", "--", file
            ).split()
        except (HistoryError, OSError):
            commits = []
        for age, commit in enumerate(commits):
            shown = subprocess.run(
                ["git", "-C", str(root), "show", f"{commit}:{file}"],
                capture_output=True,
                check=False,
            )
            if shown.returncode == 0 and hashlib.sha256(shown.stdout).hexdigest() == sha256:
                found[file, sha256] = SpecRevision(commit, CURRENT if current else age)
                break
        else:
            if current:
                found[file, sha256] = SpecRevision(None, CURRENT)
    return found


def _checkout_sha256(root: Path, file: str) -> str | None:
    """The sha256 of `file` as the checkout holds it; None where it is not a regular file
    inside the repository (the name comes from a Job, so from the cluster)."""
    path = (root / file).resolve()
    if not path.is_relative_to(root.resolve()) or not path.is_file():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _records_added(root: Path, workflow: str) -> list[tuple[str, list[tuple[str, str]]]]:
    """Each commit that added records of `workflow`, newest first, with the (cluster, Job)
    of each record it added; none without git."""
    folder = PurePosixPath(RESULTS, workflow).as_posix()
    try:
        listing = _git(
            root, "log", "--format=%x00%H", "--name-only", "--diff-filter=A", "--", folder
        )
    except (HistoryError, OSError):
        return []
    added = []
    for entry in listing.split("\0")[1:]:
        commit, *names = entry.split()
        paths = [PurePosixPath(name) for name in names]
        jobs = [(p.parts[2], p.stem) for p in paths if p.suffix == ".json" and len(p.parts) == 4]
        added.append((commit, jobs))
    return added


def record_ages(root: Path, workflow: str) -> dict[tuple[str, str], int]:
    """(cluster, Job) -> how many commits that added records of `workflow` are newer than the
    one that added its record: the order gather recorded the Jobs in, as git holds it. A
    record not committed yet is left out (it is the newest); so is everything without git."""
    ages: dict[tuple[str, str], int] = {}
    for age, (_, jobs) in enumerate(_records_added(root, workflow)):
        for job in jobs:
            ages.setdefault(job, age)
    return ages


def record_commits(root: Path, workflow: str) -> dict[tuple[str, str], str]:
    """(cluster, Job) -> the commit that added its record of `workflow` (the first, where a
    record was deleted and added again); left out as in `record_ages`."""
    commits: dict[tuple[str, str], str] = {}
    for commit, jobs in reversed(_records_added(root, workflow)):
        for job in jobs:
            commits.setdefault(job, commit)
    return commits


def file_versions(root: Path, path: PurePath, commits: Iterable[str]) -> dict[str, str | None]:
    """commit -> the version of `path` it holds, named by the newest commit at or before it
    that changed the file; None where it holds the checkout's bytes (or neither has the
    file). Every commit left out without git."""
    asked = sorted(set(commits))
    if not asked:
        return {}
    try:
        listing = _git(
            root,
            "cat-file",
            "--batch-check",
            stdin="".join(f"{c}:{path.as_posix()}\n" for c in asked),
        )
        here = _git(root, "hash-object", "--", path.as_posix()) if (root / path).is_file() else ""
    except (HistoryError, OSError):
        return {}
    held: dict[str | None, list[str]] = {}
    for commit, line in zip(asked, listing.splitlines(), strict=True):
        found = line.split()
        held.setdefault(found[0] if found[1:2] == ["blob"] else None, []).append(commit)
    versions: dict[str, str | None] = {}
    for blob, holders in held.items():
        if blob == (here.strip() or None):
            versions.update(dict.fromkeys(holders))
            continue
        # The same bytes name the same version, whichever commit holds them.
        changed = _git(root, "log", "-1", "--format=%H", holders[0], "--", path.as_posix()).strip()
        versions.update(dict.fromkeys(holders, changed or holders[0]))
    return versions


def file_at(root: Path, revision: str, path: PurePath, max_bytes: int) -> bytes | None:
    """`path` as git holds it at `revision`; None where that revision has no such file."""
    where = f"{revision}:{path.as_posix()}"
    try:
        size = int(_git(root, "cat-file", "-s", where))
    except (HistoryError, OSError):
        return None
    # Sized before it is read: a commit can hold any file under the name.
    if size > max_bytes:
        raise HistoryError(f"{where} is over {max_bytes:,} bytes")
    return subprocess.run(
        ["git", "-C", str(root), "cat-file", "blob", where], capture_output=True, check=True
    ).stdout


def in_dist(root: Path, workflow: str) -> frozenset[tuple[str, str]]:
    """(cluster, Job) of each Job of `workflow` that dist/ holds now."""
    return frozenset(
        (cluster_of(path), job["metadata"]["name"])
        for path in workload_files(root, workflow)
        for job in read_workload(path).jobs
    )


def _git(root: Path, *arguments: str, stdin: str | None = None) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *arguments],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        raise HistoryError(f"git {' '.join(arguments)}: {done.stderr.strip()}")
    return done.stdout


def every_run(store: Store, root: Path, workflow: str) -> list[StoredRun]:
    """Every run of `workflow` once, stored in the database or recorded under results/ in
    this checkout (the database's copy kept)."""
    return merged(store.runs(workflow), runs_of(records_in(root, workflow)))


def merged(*sources: Iterable[StoredRun]) -> list[StoredRun]:
    """Every run once: the same variant run (cluster, namespace, Job, index) from the database
    and from a record is one run; the first source's copy is kept."""
    seen: dict[tuple[str, str, str, int], StoredRun] = {}
    for source in sources:
        for run in source:
            key = (run.job.cluster, run.job.namespace, run.job.job, run.variant.index)
            seen.setdefault(key, run)
    return list(seen.values())
