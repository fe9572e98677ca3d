"""Runs to report on, from the database and from the records in git (this checkout's, or
another branch's or commit's): a fresh clone has no database, but its results/ are there."""

import hashlib
import subprocess
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Final

from pydantic import ValidationError

from collector.store import StoredRun
from contract.layout import RESULTS
from contract.records import (
    MAX_RECORD_BYTES,
    JobIdentity,
    JobRecord,
    RecordError,
    parse_record,
    read_record,
)


class HistoryError(ValueError):
    """A record cannot be read, or a git revision does not exist."""


def runs_of(records: Iterable[JobRecord]) -> list[StoredRun]:
    """Each record's variants as stored runs."""
    runs = []
    for record in records:
        identity = JobIdentity.model_validate(
            record.model_dump(include=set(JobIdentity.model_fields))
        )
        runs += [
            StoredRun(identity, variant, variant.finished_at or "") for variant in record.variants
        ]
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


def spec_commits(root: Path, specs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(spec file, sha256) -> the newest of the file's last SPEC_COMMITS_SEARCHED commits whose
    copy has those bytes; a pair not found (an uncommitted edit, an older history, no git)
    is left out."""
    found = {}
    for file, sha256 in sorted(set(specs)):
        try:
            commits = _git(
                root, "log", f"-{SPEC_COMMITS_SEARCHED}", "--format=%H", "--", file
            ).split()
        except (HistoryError, OSError):
            continue
        for commit in commits:
            shown = subprocess.run(
                ["git", "-C", str(root), "show", f"{commit}:{file}"],
                capture_output=True,
                check=False,
            )
            if shown.returncode == 0 and hashlib.sha256(shown.stdout).hexdigest() == sha256:
                found[file, sha256] = commit
                break
    return found


def _git(root: Path, *arguments: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *arguments], capture_output=True, text=True, check=False
    )
    if done.returncode:
        raise HistoryError(f"git {' '.join(arguments)}: {done.stderr.strip()}")
    return done.stdout


def merged(*sources: Iterable[StoredRun]) -> list[StoredRun]:
    """Every run once: the same variant run (cluster, namespace, Job, index) from the database
    and from a record is one run; the first source's copy is kept."""
    seen: dict[tuple[str, str, str, int], StoredRun] = {}
    for source in sources:
        for run in source:
            key = (run.job.cluster, run.job.namespace, run.job.job, run.variant.index)
            seen.setdefault(key, run)
    return list(seen.values())
