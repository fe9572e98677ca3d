"""An `oci` model through the real API server, Job controller and scheduler: the image volume
is admitted under PodSecurity restricted, the pod executor pulls the artifact from a real
registry by digest and mounts it read-only as a kubelet would, and the real runner measures
the model from it; an artifact that cannot be pulled leaves the pod waiting, explained."""

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from contract.layout import record_path
from contract.records import read_record
from localrun.loopback_registry import PROGRAM, loopback_registry
from localrun.oci_workflow import OCI_MODEL, SPEC, WORKFLOW
from localrun.push_model import PushedModel, push_model
from tests.cluster.conftest import LiveCluster, Repo, job_condition, wait_for
from tests.conftest import REPO_ROOT

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.skipif(shutil.which(PROGRAM) is None, reason="needs Debian's docker-registry"),
]


@pytest.fixture(scope="module")
def pushed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PushedModel]:
    folder = tmp_path_factory.mktemp("oci")
    with loopback_registry(folder / "registry") as address:
        (folder / "push").mkdir()
        model = REPO_ROOT / "models" / "examples" / "tiny-cnn.pt2"
        yield push_model(model, f"{address}/benchfleet", folder / "push", credentials="")


def test_an_oci_model_is_pulled_mounted_and_measured(
    live: LiveCluster, repo: Repo, pushed: PushedModel, collector_kubeconfig: str
) -> None:
    spec = SPEC.format(pinned=pushed.pinned, sha256=pushed.artifact.model_sha256)
    repo.write_workflow(WORKFLOW, spec)
    repo.synth()
    (job,) = repo.job_names(WORKFLOW)
    live.kubectl("apply", "--server-side", "-f", str(repo.workload(WORKFLOW)))
    gathered = repo.collector(
        "gather", "--workflow", WORKFLOW, "--cluster", "us-east", "--timeout", "5m",
        kubeconfig=collector_kubeconfig,
    )  # fmt: skip
    assert gathered.exit_code == 0, gathered.output
    assert job_condition(live, job) == "Complete"
    record = read_record(record_path(repo.root, WORKFLOW, "us-east", job))
    results = {v.variant.model: v.result for v in record.variants if v.variant}
    assert {model: r.status if r else None for model, r in results.items()} == {
        OCI_MODEL: "ok",
        "tiny-mlp": "ok",
    }
    # What the API server admitted, and what the node holds: the artifact unpacked once.
    template = live.job(job)["spec"]["template"]["spec"]
    (image,) = [v["image"] for v in template["volumes"] if "image" in v]
    assert image == {"reference": pushed.pinned, "pullPolicy": "IfNotPresent"}
    unpacked = live.executor.images.root / "unpacked" / pushed.digest.replace(":", "-")
    assert (unpacked / "model.pt2").read_bytes() == (
        REPO_ROOT / "models" / "examples" / "tiny-cnn.pt2"
    ).read_bytes()


def test_an_artifact_that_cannot_be_pulled_leaves_the_pod_waiting_explained(
    live: LiveCluster, repo: Repo, pushed: PushedModel
) -> None:
    missing = pushed.pinned.replace(pushed.digest, "sha256:" + "0" * 64)
    spec = SPEC.format(pinned=missing, sha256=pushed.artifact.model_sha256)
    repo.write_workflow(WORKFLOW, spec)
    repo.synth()
    live.kubectl("apply", "--server-side", "-f", str(repo.workload(WORKFLOW)))

    def waiting() -> dict[str, str] | None:
        for pod in live.pods(f"workflow={WORKFLOW}"):
            for status in pod.get("status", {}).get("containerStatuses", []):
                state = status.get("state", {}).get("waiting")
                if state and state.get("reason") == "ErrImagePull":
                    return dict(state)
        return None

    state = wait_for("a pod waiting on its image volume", waiting)
    assert missing.split("@")[0] in state["message"]
    assert "404" in state["message"] or "MANIFEST_UNKNOWN" in state["message"]
    assert not list(Path(live.executor.images.root).glob("unpacked/*0000000000*"))
