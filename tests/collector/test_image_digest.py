"""The runner cannot read its own image's digest (the downward API has no field for it); the
pod's status names it (`containerStatuses[].imageID`), and the collector writes it into each
result's fingerprint as it stores the result."""

import sqlite3
from pathlib import Path

import pytest

from collector.harvest import harvest
from collector.indexes import index_states
from contract.fingerprint import Fingerprint, image_digest
from contract.options import DEFAULT_DATABASE
from contract.result import BenchResult, OkResult, parse_result
from standin import objects
from standin.api import FakeApiServer
from tests.collector.gathering import NAMESPACE, Collect, Obj, grouped_job

PINNED = "sha256:4f0b8c3a1d2e5f60718293a4b5c6d7e8f901122334455667788990aabbccddee"
"""The digest the stand-in's Jobs pin their runner image at (its pods' imageID)."""

DIGEST = "sha256:" + "4f0b8c3a" * 8


def _stored_fingerprint(result: BenchResult, image_id: str) -> Fingerprint | None:
    job, expected = grouped_job()
    pod = objects.group_pod(job, 0, [result])
    pod["status"]["containerStatuses"][0]["imageID"] = image_id
    (state, _) = index_states(job, [pod])
    (stored, *_) = harvest(state, expected.slots(0)[:1], None, lambda name: None).stored
    assert isinstance(stored.result, OkResult)
    return stored.result.fingerprint


def _measured(fingerprint: Fingerprint | None) -> BenchResult:
    job, _ = grouped_job()
    return objects.ok_result(job, 0).model_copy(update={"fingerprint": fingerprint})


def test_the_collector_adds_the_image_digest_from_the_pods_status() -> None:
    measured = _measured(Fingerprint(cpu_model="Intel Xeon", libraries={"torch": "2.7.0"}))
    stored = _stored_fingerprint(measured, f"registry.example.com/benchfleet/runner@{DIGEST}")
    assert stored == Fingerprint(
        cpu_model="Intel Xeon", libraries={"torch": "2.7.0"}, image_digest=DIGEST
    )


def test_a_result_without_a_fingerprint_gets_none() -> None:
    assert _stored_fingerprint(_measured(None), f"runner@{DIGEST}") is None


@pytest.mark.parametrize(
    ("image_id", "digest"),
    [
        (f"docker.io/library/runner@{DIGEST}", DIGEST),
        (f"docker-pullable://runner@{DIGEST}", DIGEST),
        (DIGEST, DIGEST),
        ("registry.example.com/benchfleet/runner:v1", None),
        ("", None),
        (None, None),
        (f"runner@{DIGEST}" + "0", None),
        ("x" * 5000 + f"@{DIGEST}", None),
    ],
)
def test_only_a_digest_is_taken_from_an_image_id(image_id: object, digest: str | None) -> None:
    assert image_digest(image_id) == digest


def test_the_digest_stays_when_the_logs_whole_result_replaces_the_stored_one(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """The log line, which has the samples, has no digest: the stored copy's is kept."""
    stack = Fingerprint(cpu_model="Intel Xeon", libraries={"torch": "2.7.0"})
    line = objects.ok_result(job, 0).model_copy(update={"fingerprint": stack})
    pod = objects.succeeded_pod(job, 0, line)
    api.add("pods", pod)
    for index in range(1, 6):
        api.add("pods", objects.succeeded_pod(job, index))
    api.add("jobs", objects.complete(job))
    assert collector("gather", "--keep").exit_code == 0
    api.set_log(NAMESPACE, pod["metadata"]["name"], "runner", objects.runner_log(job, 0, line))
    run = collector("samples")
    assert run.exit_code == 0, run.output
    with sqlite3.connect(repo / DEFAULT_DATABASE) as db:
        (text,) = db.execute("SELECT result_json FROM variant_runs WHERE job_index = 0").fetchone()
    stored = parse_result(text)
    assert isinstance(stored, OkResult) and stored.samples, "the log's whole result"
    assert stored.fingerprint == stack.model_copy(update={"image_digest": PINNED})
