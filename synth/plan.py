"""`make plan`: what merging a change would do to each cluster's Jobs, for the reviewer.

Compares what synth would write with the committed dist/. Because Job names carry a content
hash, a Job whose name changed will be created anew (re-running its benchmark) and its old
self pruned by Flux; a Job whose name did not change will not run again.
"""

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import yaml

from synth.recorded import recorded_jobs

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
    def key(self) -> str:
        job = self.after or self.before
        assert job is not None
        return f"{job.workflow}/{job.target}"


@dataclass
class ClusterPlan:
    cluster: str
    changes: list[Change] = field(default_factory=list)
    unchanged: int = 0
    other_files: list[PurePosixPath] = field(default_factory=list)
    """Changed files that hold no Jobs (infrastructure, Flux objects)."""


def _jobs(files: Mapping[PurePosixPath, str], cluster: str) -> dict[tuple[str, str], JobRef]:
    jobs = {}
    for path, text in files.items():
        if path.parts[:3] != ("dist", cluster, "workloads") or path.name == "kustomization.yaml":
            continue
        for obj in yaml.load_all(text, Loader=yaml.CSafeLoader):
            if obj.get("kind") == "Job":
                job = _ref(obj)
                jobs[job.workflow, job.target] = job
    return jobs


def _ref(job: Mapping[str, Any]) -> JobRef:
    meta = job["metadata"]
    return JobRef(
        workflow=meta["labels"]["workflow"],
        target=meta["labels"]["benchfleet.io/target"],
        name=meta["name"],
        variants=int(job["spec"]["completions"]),
    )


def _clusters(files: Mapping[PurePosixPath, str]) -> set[str]:
    return {p.parts[1] for p in files if p.parts[0] in ("dist", "clusters") and len(p.parts) > 2}


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
        before, after = _jobs(committed, cluster), _jobs(proposed, cluster)
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
            and "workloads" not in path.parts
            and committed.get(path) != proposed.get(path)
        )
        plans.append(result)
    return plans


_SIGN = {"create": "+", "replace": "~", "prune": "-"}


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
                job = change.after or change.before
                assert job is not None
                verb = "will run" if change.action == "create" else "leave the cluster"
                if change.recorded:
                    verb = "done, results recorded: leave the cluster"
                what = f"{job.name} ({job.variants} variants {verb})"
            yield f"  {_SIGN[change.action]} {change.action:<8} {change.key:<32} {what}"
        for path in cluster.other_files:
            yield f"  * update   {path}"
        yield f"  {cluster.unchanged} Jobs unchanged (they will not run again)"
