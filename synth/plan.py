"""`make plan`: what merging a change would do to each cluster's Jobs, for the reviewer.

Compares what synth would write with the committed dist/. Because Job names carry a content
hash, a Job whose name changed will be created anew (re-running its benchmark) and its old
self pruned by Flux; a Job whose name did not change will not run again.

A workload object that keeps its name but not its content (dist/ edited by hand, or stale)
is an error: a Job's pod template and an immutable ConfigMap cannot change in place, so the
API server would refuse it and Flux would stop applying the cluster's workloads.
"""

from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from contract.dist import documents
from contract.layout import (
    CLUSTERS,
    DIST,
    KUSTOMIZATION_FILE,
    TARGET_LABEL,
    WORKFLOW_LABEL,
    WORKLOADS,
    recorded_jobs,
)

Action = Literal["create", "replace", "prune"]


@dataclass(frozen=True)
class JobRef:
    """A Job as the plan needs it: which workflow and target, its name, its size."""

    workflow: str
    target: str
    name: str
    variants: int


@dataclass(frozen=True)
class Change:
    action: Action
    before: JobRef | None
    after: JobRef | None
    recorded: bool = False
    """A pruned Job whose results are recorded in results/: done, not dropped."""

    @property
    def job(self) -> JobRef:
        """The Job after the change, or before it for a prune."""
        job = self.after or self.before
        assert job is not None
        return job

    @property
    def key(self) -> str:
        return f"{self.job.workflow}/{self.job.target}"


@dataclass(frozen=True)
class Edited:
    """A workload object whose committed content is not what synth writes under its name."""

    path: PurePosixPath
    kind: str
    name: str


@dataclass
class ClusterPlan:
    cluster: str
    changes: list[Change] = field(default_factory=list)
    unchanged: int = 0
    other_files: list[PurePosixPath] = field(default_factory=list)
    """Changed files that hold no Jobs (infrastructure, Flux objects)."""
    edited: list[Edited] = field(default_factory=list)
    """Objects the API server would refuse: same name, other content."""


def _workload_objects(
    files: Mapping[PurePosixPath, str], cluster: str
) -> dict[tuple[str, str], tuple[PurePosixPath, Any]]:
    """(kind, name) -> (file, object) of every object in the cluster's workloads files."""
    found = {}
    for path, text in files.items():
        if path.parts[:3] != (DIST, cluster, WORKLOADS) or path.name == KUSTOMIZATION_FILE:
            continue
        for obj in documents(text):
            found[obj["kind"], obj["metadata"]["name"]] = (path, obj)
    return found


def _jobs(
    objects: Mapping[tuple[str, str], tuple[PurePosixPath, Any]],
) -> dict[tuple[str, str], JobRef]:
    jobs = {}
    for (kind, _), (_, obj) in objects.items():
        if kind == "Job":
            job = _ref(obj)
            jobs[job.workflow, job.target] = job
    return jobs


def _ref(job: Mapping[str, Any]) -> JobRef:
    meta = job["metadata"]
    return JobRef(
        workflow=meta["labels"][WORKFLOW_LABEL],
        target=meta["labels"][TARGET_LABEL],
        name=meta["name"],
        variants=int(job["spec"]["completions"]),
    )


def _clusters(files: Mapping[PurePosixPath, str]) -> set[str]:
    return {p.parts[1] for p in files if p.parts[0] in (DIST, CLUSTERS) and len(p.parts) > 2}


def plan(
    committed: Mapping[PurePosixPath, str],
    proposed: Mapping[PurePosixPath, str],
    root: Path | None = None,
) -> list[ClusterPlan]:
    """Per cluster, the Jobs `proposed` creates, replaces and prunes relative to `committed`;
    with the repository `root`, prunes whose results are recorded say so."""
    plans = []
    for cluster in sorted(_clusters(committed) | _clusters(proposed)):
        result = ClusterPlan(cluster)
        old_objects = _workload_objects(committed, cluster)
        new_objects = _workload_objects(proposed, cluster)
        result.edited = [
            Edited(old_objects[key][0], *key)
            for key in sorted(old_objects.keys() & new_objects.keys())
            if old_objects[key][1] != new_objects[key][1]
        ]
        before, after = _jobs(old_objects), _jobs(new_objects)
        for key in sorted(before.keys() | after.keys()):
            old, new = before.get(key), after.get(key)
            if old is not None and new is not None and old.name == new.name:
                result.unchanged += 1
            elif old is None:
                result.changes.append(Change("create", None, new))
            elif new is None:
                done = root is not None and old.name in recorded_jobs(root, old.workflow, cluster)
                result.changes.append(Change("prune", old, None, recorded=done))
            else:
                result.changes.append(Change("replace", old, new))
        result.other_files = sorted(
            path
            for path in committed.keys() | proposed.keys()
            if cluster in path.parts[1:2]
            and WORKLOADS not in path.parts
            and committed.get(path) != proposed.get(path)
        )
        plans.append(result)
    return plans


_SIGN = {"create": "+", "replace": "~", "prune": "-"}

EDITED_HINT = (
    "its name is its content's hash, and a Job's pod template and an immutable ConfigMap "
    "cannot change in place: the API server would refuse it and Flux would stop applying "
    "this cluster's workloads; run `make synth` and commit what it writes"
)


def format_plan(plans: list[ClusterPlan]) -> Iterator[str]:
    """The plan as lines for a terminal or a pull-request comment."""
    for cluster in plans:
        yield f"cluster {cluster.cluster}:"
        for change in cluster.changes:
            if change.action == "replace":
                assert change.before is not None and change.after is not None
                what = (
                    f"{change.before.name} -> {change.after.name} "
                    f"({change.before.variants} -> {change.after.variants} variants, all re-run)"
                )
            else:
                job = change.job
                verb = "will run" if change.action == "create" else "leave the cluster"
                if change.recorded:
                    verb = "done, results recorded: leave the cluster"
                what = f"{job.name} ({job.variants} variants {verb})"
            yield f"  {_SIGN[change.action]} {change.action:<8} {change.key:<32} {what}"
        for path in cluster.other_files:
            yield f"  * update   {path}"
        for edited in cluster.edited:
            yield (
                f"  ! edited   {edited.path}: {edited.kind} {edited.name} differs from what "
                f"synth writes under the same name (edited by hand, or stale)"
            )
        if cluster.edited:
            yield f"    {EDITED_HINT}"
        yield f"  {cluster.unchanged} Jobs unchanged (they will not run again)"


def plan_json(plans: list[ClusterPlan]) -> dict[str, Any]:
    """The plan as data, for a pull-request check that needs no scraping."""
    return {
        "clusters": [
            {
                "cluster": cluster.cluster,
                "changes": [
                    {
                        "action": change.action,
                        "workflow": change.job.workflow,
                        "target": change.job.target,
                        "before": asdict(change.before) if change.before else None,
                        "after": asdict(change.after) if change.after else None,
                        "recorded": change.recorded,
                    }
                    for change in cluster.changes
                ],
                "unchanged": cluster.unchanged,
                "other_files": [str(path) for path in cluster.other_files],
                "edited": [
                    {"file": str(e.path), "kind": e.kind, "name": e.name} for e in cluster.edited
                ],
            }
            for cluster in plans
        ],
        "edited": sum(len(cluster.edited) for cluster in plans),
    }
