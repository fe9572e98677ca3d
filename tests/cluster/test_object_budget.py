"""The API server's limits on one object, as synth/object_budget.py states them, held to a real
kube-apiserver and etcd: each at its limit created, one byte over refused; and a Job of
10,000 variants (MAX_VARIANTS), whose config.json is 2.9 MB, applied as Flux applies it and
its first pod run by the real runner from the parts the API server holds."""

import base64
import copy
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from collector.pods import runner_terminated
from contract.config import RunConfig
from contract.dist import config_text, read_workload
from synth.object_budget import (
    ANNOTATION_BYTES,
    CONFIGMAP_DATA_BYTES,
    ETCD_REQUEST_BYTES,
    refusals,
    stored_bytes,
)
from tests.cluster.conftest import NAMESPACE, LiveCluster, PodObserver, Repo, wait_for

pytestmark = pytest.mark.cluster

BUDGET_LABEL = "benchfleet.io/budget-test"


def _configmap(name: str, **fields: Any) -> dict[str, Any]:
    metadata = fields.pop("metadata", {})
    labels = {BUDGET_LABEL: "yes", **metadata.pop("labels", {})}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels, **metadata},
        **fields,
    }


@pytest.fixture
def apply(live: LiveCluster) -> Iterator[Any]:
    """Server-side apply of one object, as Flux applies; the objects go afterwards."""

    def applied(obj: dict[str, Any]) -> tuple[bool, str]:
        done = live.run("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(obj))
        return done.returncode == 0, done.stderr

    yield applied
    live.run("delete", "configmaps", "-n", NAMESPACE, "-l", BUDGET_LABEL, "--wait=true")


def test_a_configmap_holds_1_mib_of_values_its_keys_not_counted(apply: Any) -> None:
    key = "k" * 250
    accepted, why = apply(_configmap("at-limit", data={key: "x" * CONFIGMAP_DATA_BYTES}))
    assert accepted, why
    binary = base64.b64encode(b"\xff" * CONFIGMAP_DATA_BYTES).decode()
    accepted, why = apply(_configmap("binary-at-limit", binaryData={key: binary}))
    assert accepted, why
    half = CONFIGMAP_DATA_BYTES // 2
    over = _configmap("over", data={"a": "x" * half, "b": "x" * (half + 1)})
    assert [r.part for r in refusals(over)] == ["data"]
    accepted, why = apply(over)
    assert not accepted and f"Too long: may not be more than {CONFIGMAP_DATA_BYTES} bytes" in why


def test_annotations_hold_256_kib_keys_and_values(apply: Any) -> None:
    annotations = {"benchfleet.io/a": "x" * (ANNOTATION_BYTES - len("benchfleet.io/a"))}
    accepted, why = apply(_configmap("annotated", metadata={"annotations": annotations}))
    assert accepted, why
    annotations["benchfleet.io/a"] += "x"
    over = _configmap("annotated-over", metadata={"annotations": annotations})
    assert [r.part for r in refusals(over)] == ["annotations"]
    accepted, why = apply(over)
    assert not accepted and f"may not be more than {ANNOTATION_BYTES} bytes" in why


def test_etcd_takes_the_fullest_configmap_but_not_one_past_its_request_limit(
    apply: Any,
) -> None:
    """Each within the API server's own limits: 1 MiB of data and 256 KiB of annotations
    (what a config part with the most annotations holds) is stored; past etcd's 1.5 MiB,
    with labels no limit of the API server bounds in number, it is not."""
    full = _configmap(
        "fullest",
        data={"config.json.1-of-2": '"' * CONFIGMAP_DATA_BYTES},
        metadata={"annotations": {"a": "x" * (ANNOTATION_BYTES - 1)}},
    )
    assert refusals(full) == []
    accepted, why = apply(full)
    assert accepted, why
    past = copy.deepcopy(full)
    past["metadata"]["name"] = "past-etcd"
    past["metadata"]["labels"] |= {f"l{n:04d}": "x" * 63 for n in range(4000)}
    assert stored_bytes(past) > ETCD_REQUEST_BYTES
    assert [r.part for r in refusals(past)] == ["object"]
    accepted, why = apply(past)
    assert not accepted and "request is too large" in why


SWEEP_MODELS = 10


def _sweep(workflow: str) -> str:
    """10,000 one-second CPU variants: tiny-mlp under ten names, at 1,000 batch sizes."""
    models = "\n".join(
        f"  - {{name: mlp-{n}, file: models/examples/tiny-mlp.pt2}}" for n in range(SWEEP_MODELS)
    )
    batches = ", ".join(str(size) for size in range(1, 1001))
    return f"""\
id: {workflow}
description: every batch size of ten models
owner: ml-platform@example.com
clusters: [us-east]
models:
{models}
benchmark:
  inputs: [{{shape: [64]}}]
  warmup: {{min_iterations: 1, min_time: 0s}}
  measure: {{min_iterations: 5, min_time: 0s, max_time: 1s}}
targets:
  - gpu_type: cpu
    resources: {{requests: {{cpu: 1, memory: 1Gi}}, limits: {{cpu: 1, memory: 1Gi}}}}
sweep:
  matrix:
    batch_size: [{batches}]
scheduling: {{max_variants: 10000, max_parallel: 1}}
"""


def test_a_job_of_10000_variants_is_applied_and_its_pod_reads_the_parts(
    live: LiveCluster, repo: Repo
) -> None:
    workflow = "e2e-ten-thousand"
    repo.write_workflow(workflow, _sweep(workflow))
    repo.synth()
    workload = read_workload(repo.workload(workflow))
    (job,) = workload.jobs
    name = job["metadata"]["name"]
    text = config_text(workload.configmaps, name)
    assert text is not None and len(text.encode()) > 2 * CONFIGMAP_DATA_BYTES
    config = RunConfig.model_validate_json(text)
    assert len(config.variants) == 10_000
    assert f"{name}-config-3" in workload.configmaps
    with PodObserver(live, f"job={name}") as observer:
        applied = live.run("apply", "--server-side", "-f", str(repo.workload(workflow)))
        assert applied.returncode == 0, applied.stderr
        assert applied.stderr == ""
        first = wait_for(
            "index 0 to end", lambda: runner_terminated(observer.by_index().get(0, [{}])[0])
        )
    assert first["exitCode"] == 0, first
    assert config.variants[0].id in first["message"]
    for part in range(1, 4):
        held = live.get("configmap", f"{name}-config-{part}", "-n", NAMESPACE)
        assert held["data"] == workload.configmaps[f"{name}-config-{part}"]["data"]
