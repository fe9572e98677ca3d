"""Every object synth writes within the API server's limits (synth/object_budget.py), and a
config.json too large for one ConfigMap carried in several, which the runner reads joined.
The limits themselves are held to a real API server in tests/cluster/test_object_budget.py."""

import base64
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from contract.config import CONFIG_DIR, CONFIG_FILE, RunConfig, read_config_bytes
from contract.dist import config_text, read_workload_text
from contract.layout import JOB_LABEL, MODELS_ANNOTATION, TARGET_LABEL, workload_file
from localrun.pod import pod_plan
from synth.load import load_specs
from synth.object_budget import (
    ANNOTATION_BYTES,
    CONFIGMAP_DATA_BYTES,
    OBJECT_BYTES,
    refusals,
    stored_bytes,
)
from synth.object_checks import Origin, refused
from synth.render import render
from synth.run_config import config_parts
from synth.spec import Workflow
from synth.yaml_source import parse_yaml
from tests.synth.conftest import WriteSpec

SHA = "cd" * 32

SWEEP = f"""\
id: big-sweep
description: a sweep of every batch size
owner: ml-platform@example.com
clusters: [alpha]
models:
  - name: baked
    image_path: /opt/models/baked.pt2
    sha256: {SHA}
benchmark:
  inputs: [{{shape: [64]}}]
  warmup: {{min_time: 0}}
  measure: {{min_time: 0}}
targets:
  - gpu_type: cpu
sweep:
  matrix: {{batch_size: [%s]}}
scheduling: {{max_variants: 10000}}
"""


def configmap(data: dict[str, str] | None = None, **fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "m", "namespace": "n", **fields.pop("metadata", {})},
        "data": data or {},
        **fields,
    }


def test_a_configmap_may_hold_1_mib_of_values_whatever_its_keys() -> None:
    """The API server counts the values alone, binaryData as the bytes it decodes to."""
    at_limit = configmap({"k" * 200: "x" * CONFIGMAP_DATA_BYTES})
    assert refusals(at_limit) == []
    half = base64.b64encode(b"\0" * (CONFIGMAP_DATA_BYTES // 2)).decode()
    assert (
        refusals(configmap({"a": "x" * (CONFIGMAP_DATA_BYTES // 2)}, binaryData={"b": half})) == []
    )
    (over,) = refusals(configmap({"a": "é" * (CONFIGMAP_DATA_BYTES // 2) + "x"}))
    assert over.part == "data"
    assert over.message.startswith("its data adds up to 1,048,577 bytes; Kubernetes refuses")


def test_annotations_are_held_to_256_kib_keys_and_values() -> None:
    fits = {"annotations": {"a": "x" * (ANNOTATION_BYTES - 1)}}
    assert refusals(configmap(metadata=fits)) == []
    over = {"annotations": {"ab": "x" * (ANNOTATION_BYTES - 1)}}
    assert [r.part for r in refusals(configmap(metadata=over))] == ["annotations"]


def test_labels_are_held_to_the_api_servers_form() -> None:
    labels = {"fine": "x" * 63, "long": "x" * 64, "bad key!": "v"}
    found = refusals(configmap(metadata={"labels": labels}))
    assert [r.part for r in found] == ["labels", "labels"]
    assert "label long's value" in found[0].message and "'bad key!'" in found[1].message


def test_stored_size_counts_strings_unescaped_and_binary_data_decoded() -> None:
    text = '"quoted"\n' * 1000
    payload = base64.b64encode(b"\xff" * 3000).decode()
    obj = configmap({"config.json": text}, binaryData={"m.pt2": payload})
    assert (
        stored_bytes(obj)
        == stored_bytes(configmap({"config.json": ""}))
        + len(text)
        + len(',"binaryData":{"m.pt2":""}')
        + 3000
    )
    (too_large,) = refusals(configmap(metadata={"labels": {"x": "y"}}, spec="x" * OBJECT_BYTES))
    assert too_large.part == "object"


def test_a_full_configmap_with_full_annotations_still_fits_etcd() -> None:
    """What lets synth split config.json by the data limit alone: a part holding 1 MiB, with
    the most annotations an object may carry, is under the stored-size budget."""
    obj = configmap(
        {"config.json.1-of-2": '"' * CONFIGMAP_DATA_BYTES},
        metadata={"annotations": {"a": "x" * (ANNOTATION_BYTES - 1)}, "labels": {"k": "v"}},
        immutable=True,
    )
    assert refusals(obj) == []


def test_parts_are_cut_at_line_ends_and_join_to_the_whole() -> None:
    line = '    "name": "ünïcode",\n'
    text = line * (3 * (CONFIGMAP_DATA_BYTES // len(line.encode())) + 1)
    parts = config_parts(text)
    assert len(parts) == 4
    assert "".join(parts) == text
    assert all(len(part.encode()) <= CONFIGMAP_DATA_BYTES for part in parts)
    assert all(part.endswith("\n") for part in parts)
    assert config_parts("{}\n") == ("{}\n",)


@pytest.mark.parametrize(("count", "parts"), [(4200, 2), (10_000, 3)])
def test_a_sweep_too_large_for_one_configmap_travels_in_parts_the_runner_joins(
    spec_repo: Path, write_spec: WriteSpec, tmp_path: Path, count: int, parts: int
) -> None:
    """config.json of 4,200 variants is 1.2 MB, of 10,000 (MAX_VARIANTS) 2.9 MB: one
    ConfigMap each used to be refused by the API server, and Flux then stopped applying every
    workflow of the cluster."""
    write_spec("w.yaml", SWEEP % ", ".join(map(str, range(1, count + 1))))
    files = render(load_specs(spec_repo))
    workload = read_workload_text(files[workload_file("alpha", "big-sweep")])
    (job,) = workload.jobs
    name = job["metadata"]["name"]
    for obj in [*workload.jobs, *workload.configmaps.values()]:
        assert refusals(obj) == [], obj["metadata"]["name"]
    held = [c for c in workload.configmaps.values() if c["metadata"]["labels"][JOB_LABEL] == name]
    assert [c["metadata"]["name"] for c in held] == [
        f"{name}-config-{n}" for n in range(1, parts + 1)
    ]
    assert [list(c["data"]) for c in held] == [
        [f"{CONFIG_FILE}.{n}-of-{parts}"] for n in range(1, parts + 1)
    ]
    text = config_text(workload.configmaps, name)
    assert text is not None and len(RunConfig.model_validate_json(text).variants) == count
    # The pod as a kubelet lays it out: every part beside where config.json would be.
    plan = pod_plan(job, workload.configmaps, count - 1, tmp_path / "pod")
    (mount,) = [m for m in plan.mounts if m.container_path == CONFIG_DIR]
    assert plan.env["CONFIG_PATH"] == f"{CONFIG_DIR}/{CONFIG_FILE}"
    assert read_config_bytes(mount.host_path / CONFIG_FILE).decode() == text


def test_a_refused_object_is_located_at_the_spec_that_made_it() -> None:
    """A Job (and its config ConfigMaps, which carry its annotations: said once) at its
    target, a model bundle at its first model, a cluster's own object at the cluster."""
    source = parse_yaml((SWEEP % "1").encode())
    fleet = parse_yaml(b"clusters:\n  - name: alpha\n")
    annotations = {"a": "x" * ANNOTATION_BYTES}
    job_labels = {TARGET_LABEL: "cpu", JOB_LABEL: "big-sweep-cpu-0123456789"}
    objects = {
        PurePosixPath("dist/alpha/workloads/big-sweep.yaml"): [
            configmap(metadata={"labels": job_labels, "annotations": annotations}),
            {**configmap(), "kind": "Job", "metadata": {"name": "j", "labels": job_labels,
                                                       "annotations": annotations}},
            configmap(metadata={"annotations": {MODELS_ANNOTATION: "baked", **annotations}}),
        ],
        PurePosixPath("dist/alpha/infrastructure/namespaces.yaml"): [
            configmap(metadata={"annotations": annotations}),
        ],
    }  # fmt: skip
    workflow = Workflow.model_validate(source.data)
    origins = {
        path: Origin(source, "specs/workflows/w.yaml", "alpha", ("id",), workflow)
        if "workloads" in path.parts
        else Origin(fleet, "specs/clusters.yaml", "alpha", ("clusters", 0))
        for path in objects
    }
    found = refused(objects, origins)
    assert [(p.file, p.line, p.path, p.message.split(":")[0]) for p in found] == [
        (
            "specs/workflows/w.yaml",
            14,
            "targets[0]",
            "the Job big-sweep-cpu-0123456789 in cluster alpha",
        ),
        ("specs/workflows/w.yaml", 6, "models[0]", "the ConfigMap m in cluster alpha"),
        ("specs/clusters.yaml", 2, "clusters[0]", "the ConfigMap m in cluster alpha"),
    ]
    assert all("Flux would stop applying the cluster" in p.message for p in found)
