"""Proof 6: the content-hash lifecycle on a real API server and Job controller.

Re-applying an unchanged dist/ after its Job finished runs nothing again (the Job is the
same object, and a finished Job creates no pods); an edited spec is a new Job, and deleting
the old objects as Flux's prune does (every object of the old inventory that the new one
lacks, background propagation) leaves nothing of the old Job behind. The pods hand over
valid results at once (the executor's rules): what is proved is the API's side.
"""

import time

import pytest

from tests.cluster.conftest import (
    NAMESPACE,
    LiveCluster,
    Obj,
    PodObserver,
    Repo,
    job_condition,
    short_cpu_spec,
    succeed_quickly,
    wait_for,
)

pytestmark = pytest.mark.cluster


def _inventory(documents: list[Obj]) -> set[tuple[str, str, str]]:
    return {(d["kind"], d["metadata"]["namespace"], d["metadata"]["name"]) for d in documents}


def _exists(live: LiveCluster, kind: str, name: str) -> bool:
    found = live.run("get", kind, name, "-n", NAMESPACE, "--ignore-not-found", "-o", "name")
    return bool(found.stdout.strip())


def test_unchanged_dist_reruns_nothing_and_an_edit_replaces_the_job_cleanly(
    live: LiveCluster, repo: Repo
) -> None:
    repo.write_workflow("e2e-lifecycle", short_cpu_spec("e2e-lifecycle", "[1, 2]"))
    repo.synth()
    succeed_quickly(live, repo, "e2e-lifecycle")
    (old,) = repo.job_names("e2e-lifecycle")
    old_documents = repo.documents("e2e-lifecycle")
    with PodObserver(live, f"job={old}") as observer:
        live.kubectl("apply", "--server-side", "-f", str(repo.workload("e2e-lifecycle")))
        assert wait_for("the Job", lambda: job_condition(live, old)) == "Complete"
        uid = live.job(old)["metadata"]["uid"]
        for _ in range(3):  # what Flux's reconciles do to an unchanged dist/
            live.kubectl("apply", "--server-side", "-f", str(repo.workload("e2e-lifecycle")))
            time.sleep(2)
    assert len(observer.seen) == 2
    assert live.job(old)["metadata"]["uid"] == uid

    repo.write_workflow("e2e-lifecycle", short_cpu_spec("e2e-lifecycle", "[1, 2, 3]"))
    repo.synth()
    succeed_quickly(live, repo, "e2e-lifecycle")
    (new,) = repo.job_names("e2e-lifecycle")
    assert new != old
    new_documents = repo.documents("e2e-lifecycle")
    with PodObserver(live, f"job={new}") as renewed:
        live.kubectl("apply", "--server-side", "-f", str(repo.workload("e2e-lifecycle")))
        pruned = _inventory(old_documents) - _inventory(new_documents)
        for kind, namespace, name in sorted(pruned):
            live.kubectl("delete", kind, name, "-n", namespace, "--cascade=background")
        assert wait_for("the new Job", lambda: job_condition(live, new)) == "Complete"
    # Nothing was recorded before the edit: the new Job holds every variant again.
    assert len(renewed.seen) == 3

    assert ("Job", NAMESPACE, old) in pruned and ("ConfigMap", NAMESPACE, old) in pruned
    wait_for("the old Job's pods to be collected", lambda: not live.pods(f"job={old}"))
    assert not _exists(live, "job", old)
    assert not _exists(live, "configmap", old)
    shared = _inventory(old_documents) & _inventory(new_documents)
    assert shared, "the models' ConfigMap is the same content, so the same object"
    for kind, _, name in shared:
        assert _exists(live, kind.lower(), name)
