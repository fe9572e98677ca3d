"""`collector samples`: read the per-iteration samples that gather left in the pods' logs.

A termination message holds a result's every field but its samples (contract/result.py), so
gather stores results without a log read and marks them `samples_in_log`. The report needs
no samples: the runner summarises them in `latency.p50_interval`. Whoever wants the
durations themselves asks for them here, while the pods are still in the cluster: one log
read per pod (a grouped pod's log has its whole group), each line checked to be the very
run that is stored before its samples are added to it.
"""

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import groupby

from pydantic import ValidationError

from collector.kube import KubeClient, KubeError
from collector.pods import RUNNER
from contract.fingerprint import with_image_digest
from contract.result import OkResult, find_result_texts, parse_result
from store.database import Store, StoredRun

log = logging.getLogger(__name__)


@dataclass
class SamplesRead:
    """What one cluster's reads did: runs that got their samples, and those that did not, with
    why."""

    added: int = 0
    missing: dict[str, str] = field(default_factory=dict)
    """Why a pod's runs are still without samples, by pod."""


def read_samples(client: KubeClient, store: Store, runs: Sequence[StoredRun]) -> SamplesRead:
    """Read the samples of `runs` (one cluster's runs that have them unread) from their pods'
    logs and store each run whole; a pod that is gone or whose log has another run leaves its
    runs as they were."""
    outcome = SamplesRead()
    by_pod = sorted((r for r in runs if r.variant.pod), key=lambda r: (r.job.namespace, _pod(r)))
    for (namespace, pod), grouped in groupby(by_pod, key=lambda r: (r.job.namespace, _pod(r))):
        own = list(grouped)
        try:
            text = client.pod_log(namespace, pod, RUNNER)
        except KubeError as error:
            outcome.missing[pod] = f"its log cannot be read: {error}"
            continue
        whole = _whole_results(text)
        for run in own:
            found = next((r for r in whole if _same_run(r, run)), None)
            if found is None:
                outcome.missing[pod] = "its log has no result line matching the stored run"
            elif store.add_samples(run.job, run.variant.index, _digest_kept(found, run)):
                outcome.added += 1
    for run in runs:
        if not run.variant.pod:
            outcome.missing[f"index {run.variant.index} of {run.job.job}"] = "no pod is named"
    return outcome


def _digest_kept(line: OkResult, run: StoredRun) -> OkResult:
    """The log's result with the image digest the collector added to the stored copy from
    its pod's status (no log line has it)."""
    stored = run.variant.result
    digest = stored.fingerprint.image_digest if stored and stored.fingerprint else None
    return line.model_copy(update={"fingerprint": with_image_digest(line.fingerprint, digest)})


def _same_run(line: OkResult, run: StoredRun) -> bool:
    """Whether a log line is the stored run's own result: its variant, its statistics to the
    last digit (a stored copy may have been compacted as well)."""
    stored = run.variant.result
    return (
        isinstance(stored, OkResult)
        and line.variant == stored.variant
        and line.latency == stored.latency
    )


def _pod(run: StoredRun) -> str:
    return run.variant.pod or ""


def _whole_results(text: str) -> list[OkResult]:
    """The successful results of a log's BENCH_RESULT lines that carry their samples."""
    found = []
    for line in find_result_texts(text):
        try:
            result = parse_result(line, strict=True)
        except ValidationError as error:
            log.warning("a result line of a log is not a result: %s", error)
            continue
        if isinstance(result, OkResult) and result.samples is not None:
            found.append(result)
    return found
