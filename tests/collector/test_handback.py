"""A grouped index whose pod ended mid-group: gather stores what it measured at once, and tells
the retry (a ConfigMap the Job owns, contract/reported.py) to skip those variants; the record
ends with every variant from the attempt that measured it. Against the stand-in API server,
Jobs and pods shaped as Kubernetes 1.33 returns them."""

import logging
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from collector.workload import ExpectedJob
from contract.reported import read_reported, reported_configmap, reported_text
from contract.result import BenchResult, Contention, OkResult, Paired, Rounds, result_line
from contract.samples import encode
from standin import objects
from standin.api import FakeApiServer
from store.database import Store, open_store
from tests.collector.gathering import (
    NAMESPACE,
    Obj,
    gather_once,
    grouped_job,
    stopped_mid_group,
)

_NOISE = random.Random(7)
LONG_SAMPLES = encode([_NOISE.randrange(800_000, 900_000) for _ in range(2000)])
"""Samples that do not compress to fit two whole results into one termination message."""


@pytest.fixture
def grouped() -> tuple[Obj, ExpectedJob]:
    return grouped_job()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(tmp_path / "results.sqlite") as opened:
        yield opened


def _stored(store: Store, expected: ExpectedJob) -> list[tuple[int, str, str | None]]:
    identity = expected.identity
    variants = store.variants(identity.cluster, identity.namespace, identity.job)
    return [(v.index, v.state, v.pod) for v in variants]


def _patches(api: FakeApiServer) -> int:
    return sum(request.method == "PATCH" for request in api.requests)


def _ids(job: Obj, *positions: int) -> list[str]:
    config = objects.run_config(job)
    return [config.variants[position].id for position in positions]


def test_what_a_failed_attempt_measured_is_stored_and_handed_to_its_retry(
    api: FakeApiServer, store: Store, tmp_path: Path, grouped: tuple[Obj, ExpectedJob]
) -> None:
    job, expected = grouped
    running, first = stopped_mid_group(api, job)

    outcome = gather_once(api, store, tmp_path, expected)
    assert outcome.unfinished, "index 0 still runs"
    first_name = first["metadata"]["name"]
    assert _stored(store, expected)[:2] == [
        (0, "succeeded", first_name),
        (1, "succeeded", first_name),
    ]
    handed = api.get("configmaps", NAMESPACE, reported_configmap(job["metadata"]["name"]))
    assert handed is not None
    assert handed["data"] == {"0": reported_text(_ids(job, 0, 1))}
    (owner,) = handed["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == (
        "Job",
        job["metadata"]["name"],
        running["metadata"]["uid"],
    ), "it goes when the Job does"
    assert _patches(api) == 1

    # The retry read the list and ran variant 2 alone.
    retry = objects.group_pod(job, 0, [objects.ok_result(job, 2)], failures=1)
    api.add("pods", retry)
    api.update("jobs", objects.complete(job))
    outcome = gather_once(api, store, tmp_path, expected)
    assert not outcome.unfinished
    assert _stored(store, expected)[:3] == [
        (0, "succeeded", first_name),
        (1, "succeeded", first_name),
        (2, "succeeded", retry["metadata"]["name"]),
    ]
    assert all(state == "succeeded" for _, state, _ in _stored(store, expected))
    assert _patches(api) == 1, "nothing new to tell: the index has ended"


def test_a_compacted_attempt_is_read_from_its_log_before_it_is_handed_back(
    api: FakeApiServer, store: Store, tmp_path: Path, grouped: tuple[Obj, ExpectedJob]
) -> None:
    """An interleaved pair's results, as the runner writes them (contention readings, round
    medians, every iteration), do not fit the termination message whole: the log has them,
    and what is stored is whole."""
    job, expected = grouped
    api.add("jobs", objects.job_status(job, active=2))
    rounds = Rounds(id="5f0c2a9d3e71", medians_ns=[843_211.5 + 977 * r for r in range(16)])
    contention = Contention(
        wall_s=1.0245, cpu_time_s=1.9876, threads=2, cpus_allowed=2.0, run_queue_wait_s=0.0123,
        steal_fraction=0.0, throttled_periods=0, throttled_s=0.0,
    )  # fmt: skip
    measured: list[BenchResult] = []
    for i in (0, 1):
        result = objects.ok_result(job, i)
        assert isinstance(result, OkResult) and result.validity is not None
        flags = {"contended": False, "cpu_throttled": False, "stopped_early": False}
        paired = Paired(against=_ids(job, 0)[0], rounds=16, ratio=1.0123, low=0.9987, high=1.0311)
        update = {"samples": LONG_SAMPLES, "rounds": rounds, "contention": contention}
        update |= {"validity": result.validity.model_copy(update=flags)}
        update |= {"paired": paired} if i else {}
        measured.append(result.model_copy(update=update))
    first = objects.group_pod(job, 0, measured, exit_code=137, reason="OOMKilled")
    message = first["status"]["containerStatuses"][0]["state"]["terminated"]["message"]
    assert '"compacted":true' in message
    api.add("pods", first)
    log = objects.starting_log(job, 0) + "".join(result_line(r) for r in measured)
    api.set_log(NAMESPACE, first["metadata"]["name"], "runner", log)
    api.add("pods", objects.running_pod(job, 1))

    gather_once(api, store, tmp_path, expected)
    identity = expected.identity
    stored = store.variants(identity.cluster, identity.namespace, identity.job)
    assert [(v.index, v.result_source) for v in stored] == [(0, "log"), (1, "log")]
    assert all(isinstance(v.result, OkResult) and v.result.samples for v in stored)
    handed = api.get("configmaps", NAMESPACE, reported_configmap(job["metadata"]["name"]))
    assert handed is not None and set(handed["data"]) == {"0"}


def test_a_refused_hand_back_costs_only_a_rerun(
    api: FakeApiServer,
    store: Store,
    tmp_path: Path,
    grouped: tuple[Obj, ExpectedJob],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A Role from before the hand-back may not write ConfigMaps: the measurements are stored
    all the same, and gather says why the retry will run them again."""
    job, expected = grouped
    api.add("jobs", objects.job_status(job, active=2))
    api.add(
        "pods",
        objects.group_pod(job, 0, [objects.ok_result(job, 0)], exit_code=137, reason="OOMKilled"),
    )
    api.add("pods", objects.running_pod(job, 1))
    api.fail_next(1, 403, path_contains="/configmaps/", message="forbidden")
    with caplog.at_level(logging.WARNING):
        gather_once(api, store, tmp_path, expected)
    assert _stored(store, expected)[0][:2] == (0, "succeeded")
    assert "so they run them again" in caplog.text
    assert _patches(api) == 1, "not asked again while nothing new is stored"


def test_the_runner_reads_what_the_collector_writes(tmp_path: Path) -> None:
    ids = ["vb2", "va1", "vb2"]
    (tmp_path / "3").write_text(reported_text(ids))
    assert read_reported(tmp_path, 3) == {"va1", "vb2"}
    assert read_reported(tmp_path, 4) == frozenset(), "no file: nothing was reported"
