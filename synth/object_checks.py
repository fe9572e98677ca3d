"""Every object a render built, held to the API server's limits (`synth.object_budget`)
before anything is written, and each refusal located at the spec that made the object: the
workflow's target for its Job and config.json, its model for a model bundle, the cluster in
the fleet file for the cluster's own objects."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Final

from contract.layout import JOB_LABEL, MODELS_ANNOTATION, TARGET_LABEL
from synth.object_budget import Manifest, Part, refusals
from synth.problems import Problem, problem_at
from synth.spec import Workflow
from synth.yaml_source import Loc, YamlSource


@dataclass(frozen=True)
class Origin:
    """The spec file one rendered file comes from."""

    source: YamlSource
    file: str
    cluster: str
    loc: Loc
    """Where a problem of the file's objects is reported, unless the workflow says better."""
    workflow: Workflow | None = None
    """None for the cluster's own objects (the fleet file's)."""


_WORKFLOW_HINTS: Final[Mapping[Part, str]] = {
    "annotations": (
        "shorten the description or the owner; where the Job reuses thousands of recorded "
        "results (benchfleet.io/reuses), split the workflow; where thousands of its variants "
        "have gates of their own (benchfleet.io/accuracy-gates: models[i].accuracy), give "
        "models a shared one in benchmark.accuracy"
    ),
    "data": "split the workflow into several files, each with fewer variants or models",
    "object": "split the workflow into several files, each with fewer variants or models",
    "labels": "a label's value comes from the workflow's id, a target's name or a queue's; "
    "shorten the one the message names to a Kubernetes label value",
}
_FLEET_HINT: Final = (
    "the cluster's objects grow with its workflows and the fleet's settings: move some "
    "workflows to another cluster, or shorten what the message names"
)


def refused(
    objects: Mapping[PurePosixPath, Iterable[Manifest]], origins: Mapping[PurePosixPath, Origin]
) -> list[Problem]:
    """A problem for each thing the API server would refuse of `objects` (by file, each file's
    origin in `origins`); the same problem of a Job and of its config ConfigMaps, which carry
    its annotations, once."""
    found: dict[Problem, None] = {}
    for path, documents in objects.items():
        origin = origins[path]
        for obj in documents:
            for refusal in refusals(obj):
                metadata = obj["metadata"]
                job = metadata.get("labels", {}).get(JOB_LABEL)
                what = f"the Job {job}" if job else f"the {obj['kind']} {metadata['name']}"
                problem = problem_at(
                    origin.source,
                    origin.file,
                    _loc(origin, metadata),
                    f"{what} in cluster {origin.cluster}: {refusal.message}",
                    _FLEET_HINT if origin.workflow is None else _WORKFLOW_HINTS[refusal.part],
                )
                found[problem] = None
    return list(found)


def _loc(origin: Origin, metadata: Manifest) -> Loc:
    workflow = origin.workflow
    if workflow is None:
        return origin.loc
    target = metadata.get("labels", {}).get(TARGET_LABEL)
    targets = [spec.key for spec in workflow.targets]
    if target in targets:
        return ("targets", targets.index(target))
    models = metadata.get("annotations", {}).get(MODELS_ANNOTATION, "").split(",")
    names = [model.name for model in workflow.models]
    # A stage's file is carried as `<model>.<stage>` (contract.config.program_name).
    model = models[0].partition(".")[0]
    if model in names:
        return ("models", names.index(model))
    return origin.loc
