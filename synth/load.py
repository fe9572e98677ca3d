"""Reading the spec files: the fleet config and every workflow, all problems at once.

`load_specs` either returns every spec validated and expanded, or raises SpecProblems listing
every problem in every file; it never returns part of the specs, so nothing downstream can
write output from a half-valid set.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeVar

from pydantic import BaseModel, ValidationError

from synth.checks import check_workflow
from synth.fleet import Fleet
from synth.modelfiles import ModelFiles
from synth.problems import Problem, SpecProblems, problem_at, problems_from_validation
from synth.spec import SpecContext, Workflow
from synth.sweep import Variant, expand_variants
from synth.yaml_source import YamlSource, YamlSyntaxError, read_yaml

FLEET_FILE: Final = Path("specs/clusters.yaml")
WORKFLOWS_DIR: Final = Path("specs/workflows")

Model = TypeVar("Model", bound=BaseModel)


@dataclass(frozen=True)
class LoadedWorkflow:
    """A validated workflow, where it came from, and its variants."""

    file: str
    """The spec file, relative to the repository root."""
    source: YamlSource
    workflow: Workflow
    variants: tuple[Variant, ...]


@dataclass(frozen=True)
class Specs:
    """Everything under specs/, validated."""

    fleet: Fleet
    fleet_source: YamlSource
    workflows: tuple[LoadedWorkflow, ...]
    model_files: ModelFiles
    """The model files validation read, for the render to reuse."""


def workflow_files(root: Path) -> list[Path]:
    """The workflow spec files under `root`, in a stable order."""
    folder = root / WORKFLOWS_DIR
    return sorted([*folder.rglob("*.yaml"), *folder.rglob("*.yml")])


def load_specs(root: Path, files: Sequence[Path] | None = None) -> Specs:
    """Validate the fleet config and the workflow files (default: all) under `root`.

    Raises SpecProblems with every problem found in any file.
    """
    problems: list[Problem] = []
    fleet_source = _read(root, root / FLEET_FILE, problems)
    fleet = (
        _validate(fleet_source, FLEET_FILE.as_posix(), Fleet, None, problems)
        if fleet_source is not None
        else None
    )
    context = SpecContext(fleet=fleet, root=root) if fleet is not None else None
    model_files = ModelFiles(root)
    loaded: list[LoadedWorkflow] = []
    first_file_of: dict[str, LoadedWorkflow] = {}
    for path in files if files is not None else workflow_files(root):
        source = _read(root, path, problems)
        if source is None:
            continue
        file = _display(root, path)
        workflow = _validate(source, file, Workflow, context, problems)
        if workflow is None or fleet is None:
            continue
        earlier = first_file_of.get(workflow.id)
        if earlier is not None:
            line, _ = earlier.source.position(("id",))
            problems.append(
                problem_at(
                    source,
                    file,
                    ("id",),
                    f"workflow id {workflow.id!r} is already used by {earlier.file}:{line}",
                    "ids are unique across all spec files: they name the Jobs and results",
                )
            )
            continue
        variants = expand_variants(workflow)
        findings = check_workflow(workflow, variants, fleet, model_files)
        problems.extend(problem_at(source, file, f.loc, f.message, f.hint) for f in findings)
        entry = LoadedWorkflow(file, source, workflow, tuple(variants))
        first_file_of[workflow.id] = entry
        loaded.append(entry)
    if problems:
        raise SpecProblems(problems)
    assert fleet is not None and fleet_source is not None  # else they were problems
    return Specs(
        fleet=fleet, fleet_source=fleet_source, workflows=tuple(loaded), model_files=model_files
    )


def unpinned_images(specs: Specs) -> list[Problem]:
    """Warnings for runner images named by tag: a tag can move, so last week's numbers and
    today's may come from different code. A digest cannot."""
    places = [(specs.fleet_source, FLEET_FILE.as_posix(), specs.fleet.image)]
    places += [(w.source, w.file, w.workflow.image) for w in specs.workflows if w.workflow.image]
    return [
        problem_at(
            source,
            file,
            ("image",),
            f"image {image!r} is named by tag, not by digest",
            "pin it as name@sha256:<digest> so that every run measures the same runner"
            + ("; ':latest' changes under you" if _is_latest(image) else ""),
            severity="warning",
        )
        for source, file, image in places
        if image is not None and "@sha256:" not in image
    ]


def _is_latest(image: str) -> bool:
    """Whether `image` names ':latest', explicitly or by giving no tag at all."""
    name = image.rsplit("/", 1)[-1]
    return name.endswith(":latest") or ":" not in name


def _display(root: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _read(root: Path, path: Path, problems: list[Problem]) -> YamlSource | None:
    file = _display(root, path)
    if not path.is_file():
        problems.append(Problem(file, 1, 1, "", "file does not exist"))
        return None
    try:
        return read_yaml(path)
    except YamlSyntaxError as error:
        line, column = error.position
        problems.append(Problem(file, line, column, "", error.message))
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
    try:
        return model.model_validate(source.data, context=context)
    except ValidationError as error:
        problems.extend(problems_from_validation(error, model, source, file))
        return None
