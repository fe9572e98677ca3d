"""What the committed dist/ holds: what Flux applies once it is pushed.

The working tree's dist/ is whatever the last `make synth` wrote, committed or not; the
clusters run what git holds. So `make plan` compares with git's HEAD tree, and synth keeps
a Job that HEAD holds and results/ does not record while its spec is unchanged (see
`synth.jobs.plan_runs`): that Job may be running. Without git, or before the first commit,
nothing is known to run.
"""

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Final

import yaml

from contract.config import RunConfig
from contract.dist import config_text, read_workload_text
from contract.layout import (
    CLUSTERS,
    DIST,
    KUSTOMIZATION_FILE,
    SYNTH_CACHE,
    TARGET_LABEL,
    WORKLOADS,
)
from contract.records import repeat_of
from synth.write import is_generated

COMMITTED: Final = "HEAD"
MEMO_DIR: Final = Path(SYNTH_CACHE, "committed-v1")
"""What each committed workloads file holds, by its git blob id: a blob never changes, so a
synth reads and parses each committed file once (dist/ holds megabytes of models)."""


NO_COMMIT: Final = "no commit yet"


class GitError(Exception):
    """git cannot run here, or refused what was asked."""


def git(root: Path, *arguments: str, stdin: bytes | None = None) -> bytes:
    """git's output, run in `root`; raises GitError where it cannot run or fails."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *arguments], input=stdin, capture_output=True, check=False
        )
    except OSError as error:
        raise GitError(f"git cannot run: {error}") from error
    if done.returncode:
        message = done.stderr.decode(errors="replace").strip().splitlines()
        raise GitError(message[0] if message else f"git {arguments[0]} failed")
    return done.stdout


def _blobs(root: Path, revision: str, folders: Sequence[str]) -> dict[PurePosixPath, str]:
    """The files under `folders` (relative to `root`) at `revision`: path -> blob id."""
    listing = git(root, "ls-tree", "-r", "-z", revision, "--", *folders)
    blobs = {}
    for entry in filter(None, listing.split(b"\0")):
        info, _, name = entry.partition(b"\t")
        _, kind, blob = info.decode().split()
        if kind == "blob":
            blobs[PurePosixPath(os.fsdecode(name))] = blob
    return blobs


def _contents(root: Path, blobs: Sequence[str]) -> list[str]:
    """The text of each blob, in one git process however many there are."""
    if not blobs:
        return []
    batch = git(root, "cat-file", "--batch", stdin="".join(f"{b}\n" for b in blobs).encode())
    texts = []
    offset = 0
    for _ in blobs:
        header_end = batch.index(b"\n", offset)
        size = int(batch[offset:header_end].split()[2])
        start = header_end + 1
        texts.append(batch[start : start + size].decode("utf-8", errors="replace"))
        offset = start + size + 1
    return texts


def files_at(root: Path, revision: str, folders: Sequence[str]) -> dict[PurePosixPath, str]:
    """The files under `folders` (relative to `root`) as git holds them at `revision`, by
    path relative to `root`."""
    blobs = _blobs(root, revision, folders)
    return dict(zip(blobs, _contents(root, list(blobs.values())), strict=True))


def generated_at(root: Path, revision: str) -> dict[PurePosixPath, str]:
    """synth's files (synth.write.is_generated) as git holds them at `revision`."""
    files = files_at(root, revision, (DIST, CLUSTERS))
    return {path: text for path, text in files.items() if is_generated(path, text)}


@dataclass(frozen=True)
class CommittedJob:
    """A Job the committed dist/ holds: its name and the ids of the variants it runs."""

    name: str
    variant_ids: frozenset[str]


JobSlot = tuple[str, int]
"""A Job's place in a workflow: its target and its repeat (0 where nothing repeats)."""


@dataclass(frozen=True)
class Committed:
    """synth's files in git's HEAD tree under `root`, read when first asked for."""

    root: Path
    commit: str | None
    """None where there is none: no git repository, or no commit yet."""
    source: str
    """Which tree, in words: "HEAD (<commit>)", "no commit yet", or why there is no git."""

    @property
    def in_git(self) -> bool:
        """Whether `root` is in a git repository (with or without a commit)."""
        return self.commit is not None or self.source == NO_COMMIT

    @cached_property
    def files(self) -> dict[PurePosixPath, str]:
        """synth's files as committed ({} without a commit)."""
        return generated_at(self.root, self.commit) if self.commit else {}

    @cached_property
    def jobs(self) -> dict[tuple[str, str], dict[JobSlot, CommittedJob]]:
        """The committed Jobs, by (workflow, cluster), then by target and repeat. A file
        that is not what synth writes (edited by hand, in a commit) holds none: nothing of
        it is kept, and `make plan` says what is wrong with it."""
        if self.commit is None:
            return {}
        workloads = {
            path: blob
            for path, blob in _blobs(self.root, self.commit, (DIST,)).items()
            if path.parts[2:3] == (WORKLOADS,) and path.name != KUSTOMIZATION_FILE
        }
        memo = self.root / MEMO_DIR
        recalled = {blob: _recall(memo / f"{blob}.json") for blob in set(workloads.values())}
        held = {blob: jobs for blob, jobs in recalled.items() if jobs is not None}
        unknown = sorted(recalled.keys() - held.keys())
        for blob, text in zip(unknown, _contents(self.root, unknown), strict=True):
            held[blob] = _workload_jobs(text)
            _remember(memo / f"{blob}.json", held[blob])
        return {(path.stem, path.parts[1]): held[blob] for path, blob in workloads.items()}


def _workload_jobs(text: str) -> dict[JobSlot, CommittedJob]:
    try:
        workload = read_workload_text(text)
        jobs = {}
        for job in workload.jobs:
            meta = job["metadata"]
            config_json = config_text(workload.configmaps, meta["name"])
            if config_json is None:
                return {}
            config = RunConfig.model_validate_json(config_json)
            slot = (meta["labels"][TARGET_LABEL], repeat_of(meta["labels"]) or 0)
            jobs[slot] = CommittedJob(meta["name"], frozenset(v.id for v in config.variants))
    except (yaml.YAMLError, ValueError, KeyError, TypeError, AttributeError):
        return {}
    return jobs


def _recall(path: Path) -> dict[JobSlot, CommittedJob] | None:
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
        return {
            (target, repeat): CommittedJob(name, frozenset(ids))
            for target, repeat, name, ids in entries
        }
    except (OSError, ValueError, TypeError):
        return None  # not remembered, or damaged: read it again


def _remember(path: Path, jobs: Mapping[JobSlot, CommittedJob]) -> None:
    partial = path.with_name(f".{path.name}.partial")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(listed(jobs)), encoding="utf-8")
        partial.replace(path)
    except OSError:
        pass  # a read-only checkout: the file is read again next time, nothing else


def listed(jobs: Mapping[JobSlot, CommittedJob]) -> list[tuple[str, int, str, list[str]]]:
    """The Jobs as sorted plain data: (target, repeat, name, variant ids)."""
    return sorted(
        (target, repeat, job.name, sorted(job.variant_ids))
        for (target, repeat), job in jobs.items()
    )


def read_committed(root: Path) -> Committed:
    """Which commit HEAD is under `root`, if any; its files are read when asked for."""
    try:
        git(root, "rev-parse", "--git-dir")
    except GitError as error:
        return Committed(root, None, f"no git repository ({error})")
    try:
        commit = git(root, "rev-parse", "--verify", "--quiet", f"{COMMITTED}^{{commit}}")
    except GitError:
        return Committed(root, None, NO_COMMIT)
    name = commit.decode().strip()
    return Committed(root, name, f"{COMMITTED} ({name[:12]})")
