"""`benchmark.repeats`: each repeat is an Indexed Job per target, running the same variants
in the same index order under the same variant ids, its pods kept off the nodes running the
same index of another repeat where the cluster allows; recorded repeats are reused one by
one (docs/synth.md)."""

from pathlib import Path
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]

from contract.config import CONFIG_FILE, RunConfig
from contract.dist import Workload, read_workload
from contract.layout import (
    COMPLETION_INDEX_KEY,
    HOSTNAME_LABEL,
    REPEAT_LABEL,
    REPEAT_SET_LABEL,
    TARGET_LABEL,
    WORKFLOW_LABEL,
    workload_file,
)
from synth.main import synth
from tests.synth.conftest import RecordJobs, WriteSpec
from tests.synth.manifests import KUBERNETES_VERSION, rule_violations

SPEC = """\
id: noise
description: repeated runs
owner: tests
clusters: [alpha]
models:
  - name: mlp
    file: models/examples/tiny-mlp.pt2
    inputs: [{shape: [64]}]
benchmark:
  measure: {min_iterations: 50, min_time: 1s, max_time: 20s}
  repeats: 3
targets:
  - gpu_type: cpu
  - name: gpu
    gpu_type: nvidia-t4
sweep:
  matrix: {batch_size: [1, 2]}
"""


def workload(root: Path) -> Workload:
    return read_workload(root / workload_file("alpha", "noise"))


def config_of(workload: Workload, job: dict[str, Any]) -> RunConfig:
    data = workload.configmaps[job["metadata"]["name"]]["data"][CONFIG_FILE]
    return RunConfig.model_validate_json(data)


def by_target(workload: Workload) -> dict[str, dict[str, dict[str, Any]]]:
    """target -> repeat label -> Job."""
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for job in workload.jobs:
        labels = job["metadata"]["labels"]
        found.setdefault(labels[TARGET_LABEL], {})[labels[REPEAT_LABEL]] = job
    return found


def running(root: Path) -> set[tuple[str, str, int]]:
    """(target, repeat, batch size) of every variant dist/ runs."""
    path = root / workload_file("alpha", "noise")
    if not path.is_file():
        return set()
    loaded = read_workload(path)
    return {
        (
            job["metadata"]["labels"][TARGET_LABEL],
            job["metadata"]["labels"][REPEAT_LABEL],
            v.batch_size,
        )
        for job in loaded.jobs
        for v in config_of(loaded, job).variants
    }


def test_each_repeat_is_a_job_per_target_measuring_the_same_variants(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec("noise.yaml", SPEC)
    synth(spec_repo)
    loaded = workload(spec_repo)
    jobs = by_target(loaded)
    assert {target: sorted(repeats) for target, repeats in jobs.items()} == {
        "cpu": ["0", "1", "2"],
        "gpu": ["0", "1", "2"],
    }
    assert len({job["metadata"]["name"] for job in loaded.jobs}) == 6
    for repeats in jobs.values():
        variants = [
            [(v.index, v.id) for v in config_of(loaded, job).variants] for job in repeats.values()
        ]
        assert variants[0] == variants[1] == variants[2]
        assert len({job["metadata"]["labels"][REPEAT_SET_LABEL] for job in repeats.values()}) == 1
    cpu, gpu = (jobs[target]["0"]["metadata"]["labels"] for target in ("cpu", "gpu"))
    assert cpu[REPEAT_SET_LABEL] != gpu[REPEAT_SET_LABEL]


def test_a_repeats_pods_prefer_nodes_without_the_same_index_of_another_repeat(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec("noise.yaml", SPEC)
    synth(spec_repo)
    for job in workload(spec_repo).jobs:
        template = job["spec"]["template"]
        labels = template["metadata"]["labels"]
        assert labels[REPEAT_LABEL] == job["metadata"]["labels"][REPEAT_LABEL]
        (preferred,) = template["spec"]["affinity"]["podAntiAffinity"][
            "preferredDuringSchedulingIgnoredDuringExecution"
        ]
        assert preferred["weight"] == 100
        assert preferred["podAffinityTerm"] == {
            "labelSelector": {
                "matchLabels": {
                    WORKFLOW_LABEL: "noise",
                    REPEAT_SET_LABEL: labels[REPEAT_SET_LABEL],
                }
            },
            "matchLabelKeys": [COMPLETION_INDEX_KEY],
            "mismatchLabelKeys": [REPEAT_LABEL],
            "topologyKey": HOSTNAME_LABEL,
        }
        # Three Jobs per target share max_parallel's default of 10 between two targets.
        assert job["spec"]["parallelism"] == 1
        kubernetes_validate.validate(job, KUBERNETES_VERSION, strict=True)
        assert rule_violations(job) == []


def test_one_repeat_is_the_same_output_as_none_asked_for(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    path = write_spec("noise.yaml", SPEC.replace("repeats: 3", "repeats: 1"))
    synth(spec_repo)
    once = [job["metadata"]["name"] for job in workload(spec_repo).jobs]
    path.write_text(SPEC.replace("  repeats: 3\n", ""), encoding="utf-8")
    synth(spec_repo)
    # A Job's name hashes its whole spec: the same names are the same Jobs.
    assert [job["metadata"]["name"] for job in workload(spec_repo).jobs] == once
    for job in workload(spec_repo).jobs:
        assert REPEAT_LABEL not in job["spec"]["template"]["metadata"]["labels"]
        assert "affinity" not in job["spec"]["template"]["spec"]


def test_only_the_repeats_without_a_recorded_run_run(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    path = write_spec("noise.yaml", SPEC)
    synth(spec_repo)
    record_jobs("noise")
    synth(spec_repo)
    assert running(spec_repo) == set()
    path.write_text(SPEC.replace("repeats: 3", "repeats: 4"), encoding="utf-8")
    synth(spec_repo)
    assert running(spec_repo) == {(t, "3", b) for t in ("cpu", "gpu") for b in (1, 2)}
    path.write_text(SPEC.replace("repeats: 3", "repeats: 2"), encoding="utf-8")
    synth(spec_repo)
    assert running(spec_repo) == set()


def test_a_repeat_that_failed_runs_again_alone_after_an_edit(
    spec_repo: Path, write_spec: WriteSpec, record_jobs: RecordJobs
) -> None:
    """Repeats that run different variants share no repeat set: the same index is not the
    same variant there."""
    path = write_spec("noise.yaml", SPEC)
    synth(spec_repo)
    first = workload(spec_repo)
    (repeat_1,) = [
        job
        for job in first.jobs
        if job["metadata"]["labels"][REPEAT_LABEL] == "1"
        and job["metadata"]["labels"][TARGET_LABEL] == "cpu"
    ]
    # Record everything, then take repeat 1 of the CPU target back out of results/.
    record_jobs("noise")
    (spec_repo / "results" / "noise" / "alpha" / f"{repeat_1['metadata']['name']}.json").unlink()
    path.write_text(SPEC.replace("batch_size: [1, 2]", "batch_size: [1, 2, 4]"))
    synth(spec_repo)
    assert running(spec_repo) == {
        *((t, r, 4) for t in ("cpu", "gpu") for r in ("0", "1", "2")),
        ("cpu", "1", 1),
        ("cpu", "1", 2),
    }
    cpu = by_target(workload(spec_repo))["cpu"]
    sets = {r: job["metadata"]["labels"][REPEAT_SET_LABEL] for r, job in cpu.items()}
    assert sets["0"] == sets["2"] != sets["1"]
