"""`make plan`: what merging a change would do to each cluster's Jobs, for the reviewer.

Compares what synth would write with the committed dist/: git's HEAD, what Flux applies
once it is pushed, not the working tree's dist/, which the last `make synth` wrote whether
or not it is committed. Because Job names carry a content hash, a Job whose name changed
will be created anew (re-running its benchmark) and its old self pruned by Flux; a Job whose
name did not change will not run again.

A workload object that keeps its name but not its content (dist/ edited by hand, or stale)
is an error: a Job's pod template and an immutable ConfigMap cannot change in place, so the
API server would refuse it and Flux would stop applying the cluster's workloads. Labels and
annotations can change in place (an edited description changes only those), so they are
not compared.
"""

from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from contract.config import ModelConfig, RunConfig
from contract.dist import config_text, documents
from contract.estimate import (
    FIRST_COMPILE,
    LATER_COMPILE,
    REFERENCE_BYTES,
    STARTUP,
    Estimate,
    History,
    Loops,
    Planned,
    estimate,
    history_of,
)
from contract.instructions import Lack, Machine
from contract.layout import (
    CLUSTERS,
    DIST,
    KUSTOMIZATION_FILE,
    TARGET_LABEL,
    WORKFLOW_LABEL,
    WORKLOADS,
    record_path,
    recorded_jobs,
)
from contract.records import StoredVariant, read_record, repeat_of
from contract.result import OkResult
from contract.text import plural, shown
from synth.committed import Committed
from synth.object_budget import CONFIGMAP_DATA_BYTES
from synth.write import generated

Action = Literal["create", "replace", "prune"]


@dataclass(frozen=True)
class JobRef:
    """A Job as the plan needs it: which workflow and target, its name, its size, and what
    its variants measure and may cost."""

    workflow: str
    target: str
    name: str
    variants: int
    pods: int
    """Completion indexes: one per group of variants (scheduling.variants_per_pod)."""
    repeat: int | None = None
    """Which run of its variants, where the workflow repeats them (`benchmark.repeats`)."""
    gpus: int = 0
    """Per pod."""
    max_pod_seconds: float = 0.0
    """The measurement bounds' maxima (warmup and measure) summed over the variants: what the
    runner may spend measuring, before start-up and retries."""
    planned: Planned | None = field(default=None, compare=False)
    """Its variants, pods, model loads and bounds, as the estimate needs them; None for a Job
    without synth's config.json."""
    ids: Mapping[str, str] = field(default_factory=dict, compare=False)
    """Variant id -> its setting (model, precision, quantization, batch)."""
    setup: Mapping[str, object] = field(default_factory=dict, compare=False)
    """What the variants are measured in, by field, to name what changed."""


@dataclass(frozen=True)
class Why:
    """Why a created Job's variants run, counted."""

    new: int = 0
    """Settings the Job before it did not have."""
    changed: int = 0
    """Settings it had, measured differently now."""
    changed_fields: tuple[str, ...] = ()
    again: int = 0
    """The same measurement again: its earlier Job has no record (yet), or it failed."""

    def words(self) -> str:
        parts = []
        if self.new:
            parts.append(f"{self.new} new")
        if self.changed:
            parts.append(f"{self.changed} changed ({', '.join(self.changed_fields)})")
        if self.again:
            parts.append(f"{self.again} without a reusable result")
        return ", ".join(parts)


def why(before: JobRef | None, after: JobRef) -> Why:
    """Why `after`'s variants run, against the Job of the same workflow and target before."""
    old_ids = dict(before.ids) if before else {}
    old_settings = set(old_ids.values())
    new = changed = again = 0
    for variant_id, setting in after.ids.items():
        if variant_id in old_ids:
            again += 1
        elif setting in old_settings:
            changed += 1
        else:
            new += 1
    fields: tuple[str, ...] = ()
    if changed and before is not None:
        keys = sorted(before.setup.keys() | after.setup.keys())
        fields = tuple(k for k in keys if before.setup.get(k) != after.setup.get(k))
    return Why(new, changed, fields, again)


@dataclass(frozen=True)
class Change:
    action: Action
    before: JobRef | None
    after: JobRef | None
    recorded: bool = False
    """A pruned Job whose results are recorded in results/: done, not dropped."""
    estimate: Estimate | None = None
    """What the Job's pods will take: by earlier runs of the same settings where results/
    holds them, else by their loops and allowances, as a range (contract/estimate.py)."""
    lacks: tuple[tuple[str, Lack], ...] = ()
    """(the machine's name, what it lacks): what the machines its target ran on before lack
    of what its variants need (contract/instructions.py)."""

    @property
    def job(self) -> JobRef:
        """The Job after the change, or before it for a prune."""
        job = self.after or self.before
        assert job is not None
        return job

    @property
    def key(self) -> str:
        job = self.job
        repeat = "" if job.repeat is None else f" repeat {job.repeat}"
        return f"{job.workflow}/{job.target}{repeat}"


@dataclass(frozen=True)
class Earlier:
    """What a workflow's records in one cluster say of its targets."""

    history: History
    machines: dict[str, frozenset[Machine]]
    """Target -> the machines its successful runs were measured on, as far as they say."""


def earlier(root: Path, workflow: str, cluster: str) -> Earlier:
    """What the recorded runs of `workflow` in `cluster` took and ran on, by target."""
    runs: list[tuple[str, StoredVariant]] = [
        (record.target or "", stored)
        for job in recorded_jobs(root, workflow, cluster)
        for record in (read_record(record_path(root, workflow, cluster, job)),)
        for stored in record.variants
    ]
    machines: dict[str, set[Machine]] = {}
    for target, stored in runs:
        result = stored.result
        if isinstance(result, OkResult) and result.environment is not None:
            machine = Machine.of(result.environment)
            if machine is not None:
                machines.setdefault(target, set()).add(machine)
    return Earlier(
        history_of(runs), {target: frozenset(found) for target, found in machines.items()}
    )


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


def _fixed(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What of an object cannot change in place: all but its labels and annotations."""
    mutable = ("labels", "annotations")
    metadata = {k: v for k, v in obj["metadata"].items() if k not in mutable}
    return {**obj, "metadata": metadata}


def planned_against(root: Path, committed: Committed) -> tuple[Mapping[PurePosixPath, str], str]:
    """synth's files to plan against, and which they are, in words: git's HEAD where `root`
    is in a git repository (none before the first commit), else the working tree's."""
    if committed.commit is not None:
        return committed.files, f"the committed dist/ of {committed.source}"
    if committed.in_git:
        return {}, f"an empty dist/: {committed.source}"
    return generated(root), f"dist/ in the working tree: {committed.source}"


JobSlot = tuple[str, str, int]
"""What a Job replaces: the Job of the same workflow, target and repeat before."""


def _jobs(
    objects: Mapping[tuple[str, str], tuple[PurePosixPath, Any]],
) -> dict[JobSlot, JobRef]:
    configmaps = {name: obj for (kind, name), (_, obj) in objects.items() if kind == "ConfigMap"}
    jobs = {}
    for (kind, name), (_, obj) in objects.items():
        if kind == "Job":
            job = _ref(obj, config_text(configmaps, name))
            jobs[job.workflow, job.target, job.repeat or 0] = job
    return jobs


def _ref(job: Mapping[str, Any], config_json: str | None) -> JobRef:
    meta = job["metadata"]
    completions = int(job["spec"]["completions"])
    ref = JobRef(
        workflow=meta["labels"][WORKFLOW_LABEL],
        target=meta["labels"][TARGET_LABEL],
        name=meta["name"],
        variants=completions,
        pods=completions,
        repeat=repeat_of(meta["labels"]),
    )
    if config_json is None:
        return ref  # a Job without synth's config.json (hand-written): counted, not costed
    config = RunConfig.model_validate_json(config_json)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    pod = job["spec"]["template"]["spec"]
    per_variant = config.warmup.max_time_s + config.measure.max_time_s
    return replace(
        ref,
        variants=len(config.variants),
        gpus=config.gpus,
        max_pod_seconds=per_variant * len(config.variants),
        planned=planned_of(ref.target, config, range(config.completions)),
        ids={v.id: v.describe() for v in config.variants},
        setup={
            "image": container["image"],
            "warmup": config.warmup,
            "measure": config.measure,
            "device": (config.device_type, config.gpus),
            "resources": container["resources"],
            "nodes": pod.get("nodeSelector"),
            "models": {name: model.sha256 for name, model in config.models.items()},
        },
    )


PARAMETER_BYTES = 4
"""A recorded `layers:` counts parameters, not bytes: taken as fp32's."""


def planned_of(
    target: str, config: RunConfig, indexes: Iterable[int], skip: Collection[str] = ()
) -> Planned:
    """What completion indexes `indexes` of a Job of `target` with config.json `config` run,
    as the estimate needs it: their variants but those whose ids are in `skip` (a local
    try's, measured before), the models each pod loads, the loops' rules and bounds, and
    each model's size as known before its pod."""
    runs = {
        index: group
        for index in indexes
        if (group := [v for v in config.group(index) if v.id not in skip])
    }
    return Planned(
        target=target,
        variants=tuple(variant for group in runs.values() for variant in group),
        pods=len(runs),
        loads=tuple(
            config.models[model].sha256
            for group in runs.values()
            for model in dict.fromkeys(variant.model for variant in group)
        ),
        bound_s=config.warmup.max_time_s + config.measure.max_time_s,
        loops=Loops(
            warmup=config.warmup,
            measure=config.measure,
            scenario=config.scenario,
            on_cpu=not config.gpus,
        ),
        sizes={
            model.sha256: size
            for model in config.models.values()
            if (size := known_bytes(model)) is not None
        },
        models={name: model.sha256 for name, model in config.models.items()},
    )


def known_bytes(model: ModelConfig) -> int | None:
    """A model's size as known before its pod: a `file` model travels in a ConfigMap (at most
    its limit), a `url` one within its `size`, and an entry that records `layers:` says its
    parameters; None for the rest (an `oci` or `image_path` model recording none)."""
    if model.source == "file":
        return CONFIGMAP_DATA_BYTES
    if model.size_bytes is not None:
        return model.size_bytes
    if model.layers is not None:
        return model.layers.parameters * PARAMETER_BYTES
    return None


def _clusters(files: Mapping[PurePosixPath, str]) -> set[str]:
    return {p.parts[1] for p in files if p.parts[0] in (DIST, CLUSTERS) and len(p.parts) > 2}


def plan(
    committed: Mapping[PurePosixPath, str],
    proposed: Mapping[PurePosixPath, str],
    root: Path | None = None,
) -> list[ClusterPlan]:
    """Per cluster, the Jobs `proposed` creates, replaces and prunes relative to `committed`;
    with the repository `root`, prunes whose results are recorded say so, and created Jobs
    are estimated from the recorded runs of the same settings, and their variants held to
    what the machines their target ran on have."""
    plans = []
    found: dict[tuple[str, str], Earlier] = {}

    def created(action: Action, old: JobRef | None, new: JobRef, cluster: str) -> Change:
        if new.planned is None:
            return Change(action, old, new)
        key = (new.workflow, cluster)
        if key not in found:
            found[key] = earlier(root, *key) if root is not None else Earlier(History(), {})
        known = found[key]
        return Change(
            action,
            old,
            new,
            estimate=estimate(new.planned, known.history),
            lacks=tuple(
                (machine.name, lack)
                for machine in sorted(known.machines.get(new.target, ()), key=str)
                for lack in machine.lacks(new.planned.variants)
            ),
        )

    for cluster in sorted(_clusters(committed) | _clusters(proposed)):
        result = ClusterPlan(cluster)
        old_objects = _workload_objects(committed, cluster)
        new_objects = _workload_objects(proposed, cluster)
        result.edited = [
            Edited(old_objects[key][0], *key)
            for key in sorted(old_objects.keys() & new_objects.keys())
            if _fixed(old_objects[key][1]) != _fixed(new_objects[key][1])
        ]
        before, after = _jobs(old_objects), _jobs(new_objects)
        for key in sorted(before.keys() | after.keys()):
            old, new = before.get(key), after.get(key)
            if old is not None and new is not None and old.name == new.name:
                result.unchanged += 1
            elif old is None:
                assert new is not None  # the key is in one of the two
                result.changes.append(created("create", None, new, cluster))
            elif new is None:
                done = root is not None and old.name in recorded_jobs(root, old.workflow, cluster)
                result.changes.append(Change("prune", old, None, recorded=done))
            else:
                result.changes.append(created("replace", old, new, cluster))
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


def _cost(job: JobRef) -> str:
    """The most the Job's variants may spend measuring, in pod time and GPU time."""
    minutes = job.max_pod_seconds / 60
    cost = f"at most {minutes:.1f} pod-minutes measuring"
    if job.gpus:
        cost += f", {minutes * job.gpus / 60:.2f} GPU-hours"
    return cost


def _runs(change: Change) -> str:
    """What a created or replacing Job runs, why, and what it may cost."""
    job = change.job
    plural = "s" * (job.variants != 1)
    reasons = why(change.before, job).words() if job.ids else ""
    because = f": {reasons}" if reasons else ""
    cost = _cost(job)
    if change.estimate is not None:
        cost = f"{estimate_words(change.estimate, len(job.ids), job.gpus)} ({cost})"
    pods = f" in {job.pods} pods" if job.pods != job.variants else ""
    return f"{job.variants} variant{plural} will run{pods}{because}; {cost}"


def estimate_words(estimate: Estimate, variants: int, gpus: int) -> str:
    """The estimate of `variants` variants of pods of `gpus` GPUs each, in words, saying
    what each part of it goes by."""
    minutes = estimate.seconds / 60
    words = f"about {minutes:.1f} pod-minutes"
    if estimate.low_s != estimate.high_s:
        words += f" (between {estimate.low_s / 60:.1f} and {estimate.high_s / 60:.1f})"
    if gpus:
        words += f", {minutes * gpus / 60:.2f} GPU-hours"
    measured = estimate.from_history - estimate.allocated
    bounds = variants - estimate.from_history
    compiling = (
        f" ({estimate.compiled} compiling, likely {FIRST_COMPILE.likely_s:.0f} s the first in "
        f"a pod and {LATER_COMPILE.likely_s:.0f} s a later one)"
        if estimate.compiled
        else ""
    )
    unsized = (
        f", {estimate.unsized} of a model of unknown size (taken as {REFERENCE_BYTES / 1e6:.0f} MB)"
        if estimate.unsized
        else ""
    )
    parts = [
        f"{count} {how}"
        for count, how in (
            (estimate.allocated, "by the time earlier runs were allocated"),
            (measured, "by earlier runs' own time (retries not recorded)"),
            (bounds, f"by their loops' minimums and the allowances{compiling}{unsized}"),
        )
        if count
    ]
    words = f"{words}: {', '.join(parts)}"
    if estimate.allocated < variants:
        # Each allocation holds its share of its pod's start-up and loads; the rest add them.
        startup = (
            f"start-up {estimate.startup_s:.0f} s a pod by {estimate.startup_pods} earlier pods"
            if estimate.startup_s is not None
            else (
                f"start-up allowed {STARTUP.likely_s:.0f}-{STARTUP.high_s:.0f} s a pod "
                "(none recorded)"
            )
        )
        others = estimate.loads - estimate.loads_known
        loads = (
            f", {estimate.loads_known} of {estimate.loads} model loads recorded"
            + (" (the others allowed by the model's size)" if others else "")
            if estimate.loads
            else ""
        )
        words = f"{words}; {startup}{loads}"
    if estimate.allowed_s:
        words += f"; {estimate.allowed_s / 60:.1f} pod-minutes of it by allowances"
    return words


def _lack_lines(change: Change) -> Iterator[str]:
    """A note per rule of contract/instructions.py the machines the Job's target ran on
    before miss for its variants."""
    for machine, lack in change.lacks:
        yield (
            f"    note: {change.job.target} ran on {machine} before, which lacks {lack.missing} "
            f"({lack.need.name}, {plural(lack.variants, 'variant')} here): {lack.need.without}"
        )


def format_plan(plans: list[ClusterPlan]) -> Iterator[str]:
    """The plan as lines for a terminal or a pull-request comment; names come from dist/,
    which a pull request may have edited by hand, so each line is shown escaped."""
    return (shown(line) for line in _plan_lines(plans))


def _plan_lines(plans: list[ClusterPlan]) -> Iterator[str]:
    for cluster in plans:
        yield f"cluster {cluster.cluster}:"
        for change in cluster.changes:
            if change.action == "replace":
                assert change.before is not None and change.after is not None
                what = f"{change.before.name} -> {change.after.name} ({_runs(change)})"
            elif change.action == "create":
                what = f"{change.job.name} ({_runs(change)})"
            else:
                job = change.job
                verb = "leave the cluster"
                if change.recorded:
                    verb = "done, results recorded: leave the cluster"
                what = f"{job.name} ({job.variants} variants {verb})"
            yield f"  {_SIGN[change.action]} {change.action:<8} {change.key:<32} {what}"
            yield from _lack_lines(change)
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
                        "repeat": change.job.repeat,
                        "before": _job_json(change.before),
                        "after": _job_json(change.after),
                        "recorded": change.recorded,
                        "estimate": asdict(change.estimate) if change.estimate else None,
                        "lacks": [
                            {
                                "machine": machine,
                                "need": lack.need.name,
                                "lacks": lack.missing,
                                "variants": lack.variants,
                                "without": lack.need.without,
                            }
                            for machine, lack in change.lacks
                        ],
                        "why": asdict(why(change.before, change.after))
                        if change.after is not None and change.after.ids
                        else None,
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


def _job_json(job: JobRef | None) -> dict[str, Any] | None:
    """A Job of the plan as JSON: its size and cost, not the per-variant detail."""
    if job is None:
        return None
    return {
        "name": job.name,
        "workflow": job.workflow,
        "target": job.target,
        "variants": job.variants,
        "pods": job.pods,
        "gpus": job.gpus,
        "max_pod_seconds": job.max_pod_seconds,
    }
