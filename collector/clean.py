"""`collector clean`: delete benchfleet Jobs that git no longer holds and whose results are safe.

Flux prunes what leaves dist/, so this is for what it did not: a Job applied by hand, one left
by a Kustomization with `prune: false` or a suspended one, or a cluster moved to another
repository. A Job is deleted only when every one of these holds, and each decision is
printed with its reason:

- dist/ does not hold it: Flux would re-create a Job that git still holds, and run it again;
- it has finished: a running Job's results would be lost;
- its results are stored: every variant it runs, counted from the Job itself (a pod may run
  several), is in the database or its record in results/.

Every call names a namespace synth made for the cluster: nothing lists namespaces, or Jobs
across them. A namespace the credential may not list Jobs in (a collector whose Role is in
another one) is skipped, saying so; it is an error only when every namespace is.
"""

from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from collector.indexes import job_finished
from collector.kube import KubeClient, KubeError, Object
from collector.workload import expected_from
from contract.config import parse_groups
from contract.dist import job_names, namespaces
from contract.layout import (
    APP_SELECTOR,
    GROUPS_ANNOTATION,
    VARIANTS_ANNOTATION,
    WORKFLOW_LABEL,
    record_path,
)
from contract.records import read_record
from store.database import Store

Action = Literal["delete", "keep"]


@dataclass(frozen=True)
class Decision:
    """What clean does with one Job, and why."""

    namespace: str
    job: str
    action: Action
    why: str


@dataclass(frozen=True)
class Cleaned:
    """What clean decided in one cluster, and the namespaces it was not allowed to look in."""

    decisions: list[Decision]
    forbidden: dict[str, str]
    """Namespace: the API server's refusal."""


def _stored(root: Path, store: Store, cluster: str, job: Object) -> bool:
    metadata = job["metadata"]
    workflow = (metadata.get("labels") or {}).get(WORKFLOW_LABEL, "")
    stored = store.stored_indexes(cluster, metadata["namespace"], metadata["name"])
    path = record_path(root, workflow, cluster, metadata["name"])
    if path.is_file():
        # A record is no proof by itself: a gather that read a grouped Job one variant per
        # pod wrote one that looked complete.
        try:
            stored |= {variant.index for variant in read_record(path).variants}
        except ValidationError:
            return False
    return len(stored) >= _variants(job)


def _variants(job: Object) -> int:
    """How many variants the Job runs, as the Job itself says: synth's annotations (a pod may
    run a group of them, scheduling.variants_per_pod), or its completion indexes, whichever
    is more (a Job without them, applied by hand, runs one per index)."""
    annotations = job["metadata"].get("annotations") or {}
    annotated = annotations.get(VARIANTS_ANNOTATION, "")
    counts: list[int] = [job["spec"].get("completions", 1)]
    if annotated.isascii() and annotated.isdigit():
        counts.append(int(annotated))
    with suppress(ValueError):
        counts.append(sum(map(len, parse_groups(annotations.get(GROUPS_ANNOTATION, "")))))
    return max(counts)


def _unmapped(cluster: str, job: Object) -> bool:
    try:
        return expected_from(cluster, job).unmapped
    except (KeyError, TypeError, ValueError):
        # Not shaped as synth's (applied by hand): gather does not read it either.
        return False


def decide(
    root: Path, store: Store, cluster: str, jobs: Iterable[Object], in_dist: set[str]
) -> list[Decision]:
    """A decision for each benchfleet Job of the cluster that dist/ does not hold."""
    decisions = []
    for job in sorted(jobs, key=lambda j: (j["metadata"]["namespace"], j["metadata"]["name"])):
        namespace, name = job["metadata"]["namespace"], job["metadata"]["name"]
        workflow = (job["metadata"].get("labels") or {}).get(WORKFLOW_LABEL, "?")
        if name in in_dist:
            continue
        if not job_finished(job):
            why = "not in dist/, but still running: deleting it would lose its results"
            decisions.append(Decision(namespace, name, "keep", why))
        elif not _stored(root, store, cluster, job):
            why = "not in dist/ and finished, but its results are not stored: " + (
                "it runs groups of variants and says not which each pod ran, so gather cannot "
                "file them; its pods still hold them"
                if _unmapped(cluster, job)
                else f"run `collector gather --workflow {workflow} --cluster {cluster}` first"
            )
            decisions.append(Decision(namespace, name, "keep", why))
        else:
            why = "not in dist/, finished, results stored"
            decisions.append(Decision(namespace, name, "delete", why))
    return decisions


def clean(client: KubeClient, root: Path, store: Store, cluster: str, *, dry_run: bool) -> Cleaned:
    """Decide for every benchfleet Job in the cluster's namespaces the credential may list;
    delete unless `dry_run`. Raises KubeError when it may list none."""
    in_dist = job_names(root, cluster)
    decisions: list[Decision] = []
    forbidden: dict[str, str] = {}
    candidates = namespaces(root, cluster)
    for namespace in candidates:
        try:
            jobs = client.list_jobs(namespace, APP_SELECTOR).items
        except KubeError as error:
            if not error.forbidden:
                raise
            forbidden[namespace] = str(error)
            continue
        decisions += decide(root, store, cluster, jobs, in_dist)
    if forbidden and len(forbidden) == len(candidates):
        raise KubeError(
            f"{cluster}: the credential may not list Jobs in any benchfleet namespace "
            f"({', '.join(forbidden)}): {next(iter(forbidden.values()))}",
            status=HTTPStatus.FORBIDDEN,
        )
    if not dry_run:
        for decision in decisions:
            if decision.action == "delete":
                client.delete_job(decision.namespace, decision.job)
    return Cleaned(decisions, forbidden)
