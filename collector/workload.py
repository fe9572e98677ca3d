"""What dist/ says a workflow runs: its Jobs per cluster, as Flux applies them.

Gather follows what git holds rather than whatever the cluster happens to have: a Job that
dist/ names but the cluster lacks is reported (Flux has not applied it yet), and a Job the
cluster has but dist/ does not is left to `collector clean`.
"""

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

from collector.harvest import Slot
from contract.accuracy import AccuracyGate, parse_gates
from contract.allocation import CAPACITIES, Capacity
from contract.config import Groups, RunConfig, parse_groups
from contract.dist import Workload, config_text, dist_clusters, read_workload
from contract.layout import (
    APP_SELECTOR,
    CAPACITY_ANNOTATION,
    DESCRIPTION_ANNOTATION,
    DEVICE_TYPE_ANNOTATION,
    DIST,
    GATES_ANNOTATION,
    GROUPS_ANNOTATION,
    OWNER_ANNOTATION,
    REUSES_ANNOTATION,
    SCHEDULED_AT_ANNOTATION,
    SPEC_FILE_ANNOTATION,
    SPEC_SHA256_ANNOTATION,
    TARGET_LABEL,
    VARIANTS_ANNOTATION,
    WORKFLOW_LABEL,
    cluster_of,
    workload_file,
    workload_files,
)
from contract.records import (
    JobIdentity,
    Reuses,
    StoredVariant,
    parse_reuses,
    repeat_of,
    scheduled_at_of,
    scheduled_run_of,
)
from contract.variant import VariantRef


class WorkloadError(ValueError):
    """dist/ holds nothing for the workflow, or a file there is not what synth writes."""


log = logging.getLogger(__name__)
Parsed = TypeVar("Parsed")


@dataclass(frozen=True)
class ExpectedJob:
    """A Job of the workflow: as dist/ holds it for one cluster, or as the cluster does."""

    identity: JobIdentity
    completions: int
    variants: dict[int, VariantRef]
    """The Job's variants by their index (position in config.json), from its ConfigMap."""
    groups: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """The variant indexes each completion index runs, from config.json or else the Job's
    GROUPS_ANNOTATION; empty where neither says (one variant per index)."""
    declared: int | None = None
    """How many variants the Job says it runs (VARIANTS_ANNOTATION), where it says."""
    description: str | None = None
    owner: str | None = None
    reuses: Reuses = field(default_factory=dict)
    """The recorded variants of earlier Jobs its spec revision reuses (synth's annotation)."""
    gates: dict[int, AccuracyGate] = field(default_factory=dict)
    """Each variant's accuracy gate by its index, as the Job says (GATES_ANNOTATION); empty
    for a Job that says none (a synth before gates): its variants get their defaults."""
    device_type: str | None = None
    """Its target's device type (DEVICE_TYPE_ANNOTATION, else config.json's)."""
    capacity: Capacity | None = None
    """Spot or on-demand (CAPACITY_ANNOTATION); None for a Job that does not say."""

    def judged(self, variants: Iterable[StoredVariant]) -> list[StoredVariant]:
        """`variants` of this Job as they are stored: each judged by the gate the Job says
        for it, or its default."""
        return [variant.judged(self.gates.get(variant.index)) for variant in variants]

    def positions(self, index: int) -> tuple[int, ...]:
        """The variant indexes completion index `index` runs (itself without config.json)."""
        return self.groups.get(index, (index,))

    def slots(self, index: int) -> tuple[Slot, ...]:
        """The variants completion index `index` runs, in order: their positions, with what
        config.json says of each where it is known."""
        return tuple(Slot(p, self.variants.get(p)) for p in self.positions(index))

    def group(self, index: int) -> tuple[VariantRef, ...]:
        """The variants completion index `index` runs, in order, as far as config.json is
        known (none without it)."""
        return tuple(self.variants[p] for p in self.positions(index) if p in self.variants)

    @property
    def variant_count(self) -> int:
        """How many variants the Job runs (its completions without config.json)."""
        return sum(len(self.positions(index)) for index in range(self.completions))

    @property
    def unmapped(self) -> bool:
        """The Job runs more variants than its completion indexes but says not which each
        runs (a Job of a synth before GROUPS_ANNOTATION, read from the cluster): read one
        variant per pod, it would lose the rest."""
        return self.declared is not None and self.declared != self.variant_count


_DEVICE_TYPE = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
"""The shape of the device catalogue's names: what a Job edited by hand may not bend."""


def _device_type(text: str) -> str:
    if not _DEVICE_TYPE.fullmatch(text):
        raise ValueError(f"{text[:80]!r} is not a device type")
    return text


def _capacity(text: str) -> Capacity:
    for capacity in CAPACITIES:
        if text == capacity:
            return capacity
    raise ValueError(f"{text[:80]!r} is not one of {', '.join(CAPACITIES)}")


def label_selector(workflow: str) -> str:
    """The labels synth puts on every object of a workflow."""
    return f"{APP_SELECTOR},{WORKFLOW_LABEL}={workflow}"


def expected_from(cluster: str, job: dict[str, Any], config_json: str | None = None) -> ExpectedJob:
    """The ExpectedJob of a Job manifest (from dist/, or as the cluster returns it), with
    its variants when its config.json is given."""
    metadata = job["metadata"]
    annotations = metadata.get("annotations", {})
    (container,) = job["spec"]["template"]["spec"]["containers"]
    scheduled_run = scheduled_run_of(metadata["labels"])
    identity = JobIdentity(
        workflow=metadata["labels"][WORKFLOW_LABEL],
        cluster=cluster,
        namespace=metadata["namespace"],
        job=metadata["name"],
        target=metadata["labels"].get(TARGET_LABEL),
        spec_file=annotations.get(SPEC_FILE_ANNOTATION),
        spec_sha256=annotations.get(SPEC_SHA256_ANNOTATION),
        image=container["image"],
        repeat=repeat_of(metadata["labels"]),
        scheduled_run=scheduled_run,
        scheduled_at=_from_annotation(
            metadata["name"], annotations, SCHEDULED_AT_ANNOTATION, scheduled_at_of, None
        )
        if scheduled_run is not None
        else None,
    )
    config = RunConfig.model_validate_json(config_json) if config_json is not None else None
    completions = job["spec"].get("completions", 1)
    groups = config.groups if config else _groups(metadata["name"], annotations, completions)
    declared = annotations.get(VARIANTS_ANNOTATION, "")
    return ExpectedJob(
        identity=identity,
        completions=completions,
        variants={v.index: VariantRef.of(v) for v in config.variants} if config else {},
        groups=dict(enumerate(groups or ())),
        declared=int(declared) if declared.isascii() and declared.isdigit() else None,
        description=annotations.get(DESCRIPTION_ANNOTATION),
        owner=annotations.get(OWNER_ANNOTATION),
        # A Job whose annotations are not synth's keeps its own results: the report only
        # misses what its revision reused, and its variants are judged by default gates.
        reuses=_from_annotation(metadata["name"], annotations, REUSES_ANNOTATION, parse_reuses, {}),
        gates=_from_annotation(metadata["name"], annotations, GATES_ANNOTATION, parse_gates, {}),
        device_type=_from_annotation(
            metadata["name"],
            annotations,
            DEVICE_TYPE_ANNOTATION,
            _device_type,
            config.device_type if config else None,
        ),
        capacity=_from_annotation(
            metadata["name"], annotations, CAPACITY_ANNOTATION, _capacity, None
        ),
    )


def _groups(job: str, annotations: dict[str, str], completions: int) -> Groups | None:
    text = annotations.get(GROUPS_ANNOTATION)
    if text is None:
        return None
    try:
        groups = parse_groups(text)
        if len(groups) != completions:
            raise ValueError(f"{len(groups)} groups for {completions} completion indexes")
        return groups
    except ValueError as error:
        # Not synth's (edited by hand): the Job counts as unmapped if it runs groups.
        log.warning(
            "Job %s: annotation %s is not synth's, ignored: %s", job, GROUPS_ANNOTATION, error
        )
        return None


def _from_annotation(
    job: str,
    annotations: Mapping[str, str],
    key: str,
    parse: Callable[[str], Parsed],
    fallback: Parsed,
) -> Parsed:
    """The Job's annotation `key` as `parse` reads it; `fallback` without one, or where it is
    not synth's (edited by hand), with a warning."""
    text = annotations.get(key)
    if text is None:
        return fallback
    try:
        return parse(text)
    except ValueError as error:
        log.warning("Job %s: annotation %s is not synth's, ignored: %s", job, key, error)
        return fallback


def clusters_with(root: Path, workflow: str) -> list[str]:
    """Clusters whose dist/ folder runs `workflow`, sorted."""
    return sorted(cluster_of(path) for path in workload_files(root, workflow))


def expected_jobs(root: Path, workflow: str, cluster: str) -> list[ExpectedJob]:
    """The Jobs of `workflow` in `cluster`'s dist/ folder ([] when it has none left)."""
    path = root / workload_file(cluster, workflow)
    known = dist_clusters(root)
    if cluster not in known:
        raise WorkloadError(f"{DIST}/ has no cluster {cluster!r}; it has {', '.join(known)}")
    if not path.is_file():
        return []
    return read_expected(path, cluster)[1]


def read_expected(path: Path, cluster: str) -> tuple[Workload, list[ExpectedJob]]:
    """A workloads file of `cluster`, and the ExpectedJob of each of its Jobs."""
    try:
        workload = read_workload(path)
        return workload, [
            expected_from(cluster, job, config_text(workload.configmaps, job["metadata"]["name"]))
            for job in workload.jobs
        ]
    except (yaml.YAMLError, KeyError, TypeError, ValueError) as error:
        raise WorkloadError(f"{path} is not what `make synth` writes: {error}") from error
