"""A service mesh's sidecar (an injected istio-proxy, not a native sidecar) keeps a runner's
pod Running after the runner has exited with its result: the runner's own end decides the
variant, never the pod's phase, before or after the Job's deadline kills the pod."""

import sqlite3
import threading
import time
from pathlib import Path

from collector.indexes import index_states
from collector.pods import pod_state
from standin import objects
from standin.api import FakeApiServer
from tests.collector.gathering import NAMESPACE, Collect, Obj, record_of


def stored(repo: Path) -> dict[int, tuple[str, str, bool]]:
    """index: (state, explanation, whether a result is kept) of every stored variant."""
    with sqlite3.connect(repo / ".benchfleet" / "results.sqlite") as db:
        query = "SELECT job_index, state, explanation, result_json IS NOT NULL FROM variant_runs"
        return {index: (state, why, bool(kept)) for index, state, why, kept in db.execute(query)}


def _stored_so_far(repo: Path) -> dict[int, tuple[str, str, bool]]:
    """What gather has stored, while it may still be creating the database."""
    try:
        return stored(repo) if (repo / ".benchfleet" / "results.sqlite").exists() else {}
    except sqlite3.OperationalError:
        return {}


def test_a_runner_that_exited_0_succeeded_while_its_sidecar_runs(job: Obj) -> None:
    held = objects.with_sidecar(objects.succeeded_pod(job, 3))
    state = pod_state(held)
    assert (state.phase, state.exit_code) == ("succeeded", 0)
    assert state.message.result is not None and state.message.result.status == "ok"
    assert state.explanation == "succeeded; the pod goes on running for istio-proxy (a sidecar)"
    (index,) = [s for s in index_states(job, [held]) if s.index == 3]
    assert index.phase == "succeeded", "the Job's status does not count it yet; the runner does"


def test_a_runner_that_failed_while_its_sidecar_runs_failed(job: Obj) -> None:
    held = objects.with_sidecar(objects.failed_pod(job, 3, "model_load", "tiny-mlp.pt2 is missing"))
    state = pod_state(held)
    assert (state.phase, state.exit_code) == ("failed", 3)
    assert state.explanation.startswith("runner error model_load (exit 3): tiny-mlp.pt2 is missing")


def test_gather_stores_a_sidecar_held_variant_when_its_runner_ends(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """The defect: gather showed the variant running until the deadline."""
    for index in range(6):
        pod = objects.succeeded_pod(job, index)
        api.add("pods", objects.with_sidecar(pod) if index == 3 else pod)
    api.add("jobs", objects.job_status(job, active=1, completed=[0, 1, 2, 4, 5]))
    run = collector("gather", "--no-wait")
    assert run.exit_code == 1, "the Job has not finished"
    state, explanation, kept = stored(repo)[3]
    assert (state, explanation, kept) == ("succeeded", "succeeded", True)


def test_the_deadline_killing_a_sidecar_held_pod_loses_nothing(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    """The defect: gather waited for the pod to end; at the deadline the Job controller
    deleted it, and the variant was recorded as failed, its result lost with the pod."""
    held = objects.with_sidecar(objects.succeeded_pod(job, 3))
    for index in range(6):
        api.add("pods", held if index == 3 else objects.succeeded_pod(job, index))
    api.add("jobs", objects.job_status(job, active=1, completed=[0, 1, 2, 4, 5]))

    def deadline() -> None:
        # Once gather has stored the variant (old code never did: then after a while anyway).
        give_up = time.monotonic() + 20
        while time.monotonic() < give_up and 3 not in _stored_so_far(repo):
            time.sleep(0.05)
        api.delete("pods", NAMESPACE, held["metadata"]["name"])
        api.update("jobs", objects.failed_job(job, "DeadlineExceeded", completed=[0, 1, 2, 4, 5]))

    threading.Thread(target=deadline, daemon=True).start()
    run = collector("gather", "--timeout", "1m")
    assert {index: (state, kept) for index, (state, _, kept) in stored(repo).items()} == {
        index: ("succeeded", True) for index in range(6)
    }
    assert record_of(repo, job).exists()
    assert "6 ok, 0 failed" in run.stdout
