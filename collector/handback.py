"""Tell a grouped Job's retries what not to run again: the variants an ended attempt of
their index measured and gather has stored (contract/reported.py says how the pod reads it).

This only saves the node's time: the ids are written after their measurements are stored,
so a retry that skips one loses nothing; where the ConfigMap cannot be written (a Role from
before this, an API server that refuses), the retry runs every variant again, as it would
with no gather running.
"""

import logging
from typing import Final

from collector.harvest import settled
from collector.job_progress import JobProgress
from collector.kube import KubeClient, KubeError, Object
from contract.layout import APP, JOB_LABEL, MANAGED_BY, WORKFLOW_LABEL
from contract.reported import reported_configmap, reported_text

log = logging.getLogger(__name__)

FIELD_MANAGER: Final = "benchfleet-collector"


def _reported_by_index(progress: JobProgress) -> dict[str, str]:
    """What the Job's pods are to be told now: for each grouped index that has not ended, the
    ids of its variants stored as succeeded (as contract.reported writes them), on top of
    what they were told before (an index whose variants are all stored leaves the states
    gather follows, and its retry must still be told)."""
    told = dict(progress.handed_back)
    for state in progress.states:
        # Checked first and cheaply: gather asks at every step, for every index of every Job.
        if len(progress.expected.positions(state.index)) <= 1 or settled(state):
            continue
        group = progress.expected.group(state.index)
        done = [v.id for v in group if progress.stored.get(v.index) == "succeeded"]
        if done:
            told[str(state.index)] = reported_text(done)
    return told


def hand_back(client: KubeClient, progress: JobProgress) -> None:
    """Apply the Job's reported-variants ConfigMap where what its pods are to be told changed."""
    job = progress.job
    if job is None:
        return
    told = _reported_by_index(progress)
    if told == progress.handed_back:
        return
    # Remembered whether or not it is written: a refusal is not asked again at every step.
    progress.handed_back = told
    try:
        client.apply_configmap(_configmap(job, told), FIELD_MANAGER)
    except KubeError as error:
        log.warning(
            "cannot tell the retries of Job %s which variants are stored, so they run them "
            "again: %s",
            job["metadata"]["name"],
            error,
        )


def _configmap(job: Object, data: dict[str, str]) -> Object:
    """The ConfigMap, owned by `job` so that it goes when the Job does (pruned by Flux, or
    deleted by `collector clean`), whoever deletes it."""
    metadata = job["metadata"]
    name = metadata["name"]
    labels = metadata.get("labels") or {}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": reported_configmap(name),
            "namespace": metadata["namespace"],
            "labels": {
                MANAGED_BY: APP,
                WORKFLOW_LABEL: labels.get(WORKFLOW_LABEL, ""),
                JOB_LABEL: name,
            },
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": metadata["uid"]}
            ],
        },
        "data": dict(sorted(data.items())),
    }
