"""Reading the spec files: the fleet config and every workflow, all problems at once.

`load_specs` either returns every spec validated and expanded, or raises SpecProblems listing
every problem in every file; it never returns part of the specs, so nothing downstream can
write output from a half-valid set.
"""

import hashlib
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Final, TypeVar

from pydantic import BaseModel, ValidationError

from contract.layout import FLEET_FILE, SPECS_DIR
from contract.schedule import ScheduleState
from contract.text import unprintable
from synth.checks import check_workflow, target_clusters
from synth.committed import Committed, read_committed
from synth.empty import empty_entries
from synth.fleet import Fleet
from synth.fleet_checks import check_fleet
from synth.hints import SpecError
from synth.limits import MAX_COMBINATIONS, MAX_FILE_BYTES, MAX_VARIANTS_CEILING
from synth.modelfiles import ModelFiles
from synth.problems import (
    Problem,
    SpecProblems,
    empty_problems,
    format_loc,
    problem_at,
    problems_from_validation,
)
from synth.recorded import Recorded, read_recorded
from synth.repo_files import RepoFileError, read_inside
from synth.schedules import read_schedules
from synth.spec import SpecContext, Workflow, check_ca_bundle_file
from synth.sweep import Variant, combinations, expand_variants
from synth.yaml_source import YamlSource, YamlSyntaxError, parse_yaml

WORKFLOWS_DIR: Final = SPECS_DIR / "workflows"
WORKFLOW_SCHEMA: Final = SPECS_DIR / "schema.json"
FLEET_SCHEMA: Final = SPECS_DIR / "clusters.schema.json"
WORKFLOW_SUFFIXES: Final = (".yaml", ".yml")

Model = TypeVar("Model", bound=BaseModel)


@dataclass(frozen=True)
class LoadedWorkflow:
    """A validated workflow, where it came from, and its variants."""

    file: str
    """The spec file, relative to the repository root."""
    sha256: str
    """Of the spec file's bytes, as read."""
    source: YamlSource
    workflow: Workflow
    variants: tuple[Variant, ...]
    schedule: ScheduleState | None = None
    """The run a scheduled workflow is at (schedules/); None where it is not scheduled, or
    waits for its first run."""


@dataclass(frozen=True)
class Specs:
    """Everything under specs/, validated."""

    fleet: Fleet
    fleet_source: YamlSource
    workflows: tuple[LoadedWorkflow, ...]
    model_files: ModelFiles
    """The model files validation read, for the render to reuse."""
    recorded: Mapping[tuple[str, str], Recorded]
    """What results/ holds of each workflow (by id) in each cluster (by name) it runs in."""
    root: Path

    @cached_property
    def committed(self) -> Committed:
        """What git's HEAD holds of dist/ and clusters/: read only by what renders or
        plans, never by validation alone."""
        return read_committed(self.root)


def workflow_files(root: Path) -> list[Path]:
    """The workflow spec files under `root`, in a stable order."""
    folder = root / WORKFLOWS_DIR
    return sorted(path for path in folder.rglob("*") if _is_workflow_file(path))


def _is_workflow_file(path: Path) -> bool:
    return path.suffix in WORKFLOW_SUFFIXES and not path.is_dir()


def stray_files(root: Path) -> list[Problem]:
    """Problems for what lies under specs/ that synth does not read: a workflow saved as
    `.YAML` or `.txt`, or a file beside the fleet config, would otherwise be ignored in
    silence, and its author would think it runs."""
    specs = root / SPECS_DIR
    if not specs.is_dir():
        return []
    problems = []
    for path in sorted(specs.rglob("*")):
        if _is_read(root, path):
            continue
        inside_workflows = path.is_relative_to(root / WORKFLOWS_DIR)
        hint = (
            f"a workflow's file name ends in {' or '.join(WORKFLOW_SUFFIXES)}; rename or remove it"
            if inside_workflows
            else f"workflows go in {WORKFLOWS_DIR.as_posix()}/; move or remove it"
        )
        problems.append(
            Problem(_display(root, path), 1, 1, "", "synth does not read this file", hint)
        )
    return problems


def _is_read(root: Path, path: Path) -> bool:
    """Whether synth reads `path` under specs/ (or walks it, for a folder of workflows)."""
    if path in (root / FLEET_FILE, root / WORKFLOW_SCHEMA, root / FLEET_SCHEMA):
        return True
    if not path.is_relative_to(root / WORKFLOWS_DIR):
        return False
    return _is_workflow_file(path) or (path.is_dir() and not path.is_symlink())


def load_specs(root: Path, files: Sequence[Path] | None = None) -> Specs:
    """Validate the fleet config and the workflow files (default: all) under `root`.

    Raises SpecProblems with every problem found in any file.
    """
    problems: list[Problem] = [] if files is not None else stray_files(root)
    fleet_read, fleet = _load_fleet(root, problems)
    model_files = ModelFiles(root)
    if fleet is not None and fleet_read is not None:
        for loc, file in fleet.ca_bundles():
            try:
                check_ca_bundle_file(model_files, file)
            except SpecError as error:
                problems.append(
                    problem_at(fleet_read[1], FLEET_FILE.as_posix(), loc, error.message, error.hint)
                )
    context = SpecContext(fleet=fleet, model_files=model_files) if fleet is not None else None
    loaded: list[LoadedWorkflow] = []
    for path in files if files is not None else workflow_files(root):
        read = _read(root, path, problems)
        if read is None:
            continue
        sha256, source = read
        file = _display(root, path)
        workflow = _validate(source, file, Workflow, context, problems)
        if workflow is None or fleet is None:
            continue
        count = combinations(workflow)
        if count > MAX_COMBINATIONS:
            problems.append(
                problem_at(
                    source,
                    file,
                    ("sweep", "matrix") if workflow.sweep else ("models",),
                    f"the workflow names {count:,} combinations (targets x models x matrix, "
                    f"plus includes), more than the {MAX_COMBINATIONS:,} synth expands",
                    "sweep fewer values or split the workflow: at most "
                    f"{MAX_VARIANTS_CEILING:,} variants run after excludes",
                )
            )
            continue
        variants = expand_variants(workflow)
        findings = check_workflow(workflow, variants, fleet, model_files)
        problems.extend(problem_at(source, file, f.loc, f.message, f.hint) for f in findings)
        loaded.append(LoadedWorkflow(file, sha256, source, workflow, tuple(variants)))
    problems.extend(_duplicate_ids(root, loaded))
    # A schedule with no valid workflow beside it is judged once its workflow is valid.
    workflows = [entry.workflow for entry in loaded]
    states = read_schedules(root, workflows, problems, every_file=files is None and not problems)
    loaded = [replace(entry, schedule=states.get(entry.workflow.id)) for entry in loaded]
    recorded = {
        (entry.workflow.id, cluster.name): read_recorded(
            root, entry.workflow.id, cluster.name, problems
        )
        for entry in loaded
        if fleet is not None
        for cluster in target_clusters(entry.workflow, fleet)
    }
    if problems:
        raise SpecProblems(problems)
    assert fleet is not None and fleet_read is not None  # else they were problems
    return Specs(
        fleet=fleet,
        fleet_source=fleet_read[1],
        workflows=tuple(loaded),
        model_files=model_files,
        recorded=recorded,
        root=root,
    )


def _load_fleet(
    root: Path, problems: list[Problem]
) -> tuple[tuple[str, YamlSource] | None, Fleet | None]:
    """The fleet file as read, and validated with its cross-checks; each None where its
    problems (added to `problems`) stopped it."""
    fleet_read = _read(root, root / FLEET_FILE, problems)
    fleet = (
        _validate(fleet_read[1], FLEET_FILE.as_posix(), Fleet, None, problems)
        if fleet_read is not None
        else None
    )
    if fleet is not None and fleet_read is not None:
        problems.extend(
            problem_at(fleet_read[1], FLEET_FILE.as_posix(), f.loc, f.message, f.hint)
            for f in check_fleet(fleet)
        )
    return fleet_read, fleet


def load_fleet(root: Path) -> Fleet:
    """The fleet config alone, validated as `load_specs` validates it (for what reads no
    workflow: the collector's prices). Raises SpecProblems with every problem of the file."""
    problems: list[Problem] = []
    _, fleet = _load_fleet(root, problems)
    if problems or fleet is None:
        raise SpecProblems(problems)
    return fleet


def _duplicate_ids(root: Path, loaded: list[LoadedWorkflow]) -> Iterator[Problem]:
    """A problem at each copy of a workflow id but one. The one kept is the file git's HEAD
    holds, so a pull request that copies a spec to start a new one is told to change its
    copy, whichever name sorts first; where HEAD holds none or several, the first in name
    order. Each problem names the file kept."""
    by_id: dict[str, list[LoadedWorkflow]] = {}
    for entry in loaded:
        by_id.setdefault(entry.workflow.id, []).append(entry)
    copies = [entries for entries in by_id.values() if len(entries) > 1]
    committed = _in_head(root, [entry.file for entries in copies for entry in entries])
    for entries in copies:
        kept = next((entry for entry in entries if entry.file in committed), entries[0])
        why = "in git's HEAD" if kept.file in committed else "the first of them by name"
        line, _ = kept.source.position(("id",))
        for entry in entries:
            if entry is not kept:
                yield problem_at(
                    entry.source,
                    entry.file,
                    ("id",),
                    f"workflow id {entry.workflow.id!r} is already used by {kept.file}:{line} "
                    f"({why})",
                    "ids are unique across all spec files: they name the Jobs and results; "
                    "give this file's workflow an id of its own",
                )


def _in_head(root: Path, files: list[str]) -> set[str]:
    """Which of `files` (relative to `root`) git's HEAD holds: none where `root` is no git
    checkout, or there are no files to ask about."""
    if not files:
        return set()
    try:
        listed = subprocess.run(
            ["git", "-C", str(root), "ls-tree", "-r", "--name-only", "HEAD", "--", *files],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:  # no git at all
        return set()
    return set(listed.stdout.splitlines()) if listed.returncode == 0 else set()


def _display(root: Path, path: Path) -> str:
    """`path` relative to the repository root as written, symlinks not followed: the name
    the author knows it by, and the one that says where it is in the repository."""
    try:
        return path.absolute().relative_to(root.absolute()).as_posix()
    except ValueError:
        return path.as_posix()


def _unprintable_name(file: str) -> Problem | None:
    """The problem of a file whose name holds a character that does not print as itself: a
    line break there would let the name forge a line of its own in CI's log (a GitHub
    Actions command such as `::error ...::`), so the file is not read at all."""
    found = unprintable(file)
    if found is None:
        return None
    return Problem(
        file,
        1,
        1,
        "",
        f"the file's name holds {found}, which does not print as itself",
        "rename the file: names of spec files print in logs and comments",
    )


def _read(root: Path, path: Path, problems: list[Problem]) -> tuple[str, YamlSource] | None:
    """The sha256 of a spec file's bytes and the document they hold, or None after adding
    the file's problems."""
    file = _display(root, path)
    misnamed = _unprintable_name(file)
    if misnamed is not None:
        problems.append(misnamed)
        return None
    try:
        data = read_inside(root, file, MAX_FILE_BYTES)
    except RepoFileError as error:
        problems.append(Problem(file, 1, 1, "", error.message, error.hint))
        return None
    try:
        return hashlib.sha256(data).hexdigest(), parse_yaml(data)
    except YamlSyntaxError as error:
        problems.extend(
            Problem(file, *problem.position, format_loc(problem.loc), problem.message, problem.hint)
            for problem in error.errors
        )
        return None


def _validate(
    source: YamlSource,
    file: str,
    model: type[Model],
    context: SpecContext | None,
    problems: list[Problem],
) -> Model | None:
    if not isinstance(source.data, dict):
        found = "an empty file" if source.data is None else type(source.data).__name__
        problems.append(
            Problem(file, 1, 1, "", f"expected a mapping of keys to values, found {found}")
        )
        return None
    empty = dict(empty_entries(source.data))
    try:
        validated = model.model_validate(source.data, context=context)
    except ValidationError as error:
        problems.extend(problems_from_validation(error, model, source, file, empty))
        return None
    problems.extend(empty_problems(source, file, empty.items()))
    return validated
