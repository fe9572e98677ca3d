"""What results/ already holds for a workflow in a cluster: the variants synth does not run
again.

A variant's id hashes everything that determines its number (synth/identity.py,
`measurement_setup`), so a recorded result with the same id is the number this spec would
measure again: reused, never re-run. A recorded failure is final for the spec file that
failed it (re-running the same thing would repeat it, and nothing finished runs twice); an
edit of the spec file retries it along with whatever else changed.
"""

from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from contract.layout import RESULTS, record_path, recorded_jobs
from contract.records import MAX_RECORD_BYTES, RecordError, parse_record
from synth.problems import Problem, unreadable
from synth.repo_files import RepoFileError, read_inside


@dataclass(frozen=True)
class RecordedVariant:
    """Where a variant's recorded outcome is: its Job's record, and how it ended."""

    job: str
    succeeded: bool
    spec_sha256: str | None
    """The spec file the Job was made from, as its record says."""


@dataclass(frozen=True)
class Recorded:
    """The recorded variants of one workflow in one cluster, by variant id."""

    jobs: frozenset[str]
    """Every Job with a record: done, whatever it holds."""
    variants: dict[tuple[str, int], RecordedVariant]
    """By variant id and repeat (`benchmark.repeats`): repeats measure the same variant, so
    they share its id, and each run counts once."""

    def reusable(self, variant_id: str, repeat: int, spec_sha256: str) -> RecordedVariant | None:
        """The record that makes running `variant_id`'s `repeat` again pointless, if any."""
        recorded = self.variants.get((variant_id, repeat))
        if recorded is None:
            return None
        if recorded.succeeded or recorded.spec_sha256 == spec_sha256:
            return recorded
        return None

    @property
    def key(self) -> dict[str, object]:
        """What a render depends on, for its cache key."""
        return {
            "jobs": sorted(self.jobs),
            "variants": sorted(
                (v, repeat, r.job, r.succeeded, r.spec_sha256)
                for (v, repeat), r in self.variants.items()
            ),
        }


def read_recorded(root: Path, workflow: str, cluster: str, problems: list[Problem]) -> Recorded:
    """Read results/<workflow>/<cluster>/; each file that is not a record is a problem in
    `problems` and counts as a done Job with nothing reusable. A success wins over a failure
    of the same variant and repeat; among several, the first record in name order (stable,
    not newer: names are hashes). Records are read like spec files: regular files inside the
    repository, bounded in size."""
    jobs = recorded_jobs(root, workflow, cluster)
    variants: dict[tuple[str, int], RecordedVariant] = {}
    for job in jobs:
        relative = record_path(Path(), workflow, cluster, job).as_posix()
        try:
            record = parse_record(read_inside(root, relative, MAX_RECORD_BYTES))
        except (RepoFileError, RecordError, ValidationError) as error:
            problems.append(
                unreadable(
                    relative,
                    error,
                    "a results record",
                    f"records under {RESULTS}/ are written by `collector gather`; "
                    "restore this one from git",
                )
            )
            continue
        for stored in record.variants:
            if stored.variant is None:
                continue
            found = RecordedVariant(job, stored.state == "succeeded", record.spec_sha256)
            key = (stored.variant.id, record.run)
            earlier = variants.get(key)
            if earlier is None or (found.succeeded and not earlier.succeeded):
                variants[key] = found
    return Recorded(frozenset(jobs), variants)
