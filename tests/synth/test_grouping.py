"""`scheduling.variants_per_pod`: a Job's completion indexes run groups of variants, listed
in config.json's `groups`; the variants, their positions and their ids stay what they were."""

from pathlib import Path

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from contract.config import CONFIG_FILE, MAX_VARIANTS_PER_POD, RunConfig, parse_groups
from contract.dist import read_workload
from contract.layout import GROUPS_ANNOTATION, VARIANTS_ANNOTATION, workload_file
from contract.reported import REPORTED_DIR, REPORTED_ENV, REPORTED_VOLUME, reported_configmap
from synth.cli import cli
from synth.load import load_specs
from synth.main import synth
from synth.problems import SpecProblems
from synth.run_config import pod_groups
from tests.synth.conftest import WriteSpec

SPEC = """\
id: grouped
description: several variants per pod
owner: tests
clusters: [alpha]
models:
  - name: mlp
    file: models/examples/tiny-mlp.pt2
    inputs: [{shape: [64]}]
  - name: cnn
    file: models/examples/tiny-cnn.pt2
    inputs: [{shape: [3, 64, 64]}]
benchmark:
  warmup: {min_iterations: 5, min_time: 1s}
  measure: {min_iterations: 50, min_time: 2s, max_time: 20s}
targets:
  - gpu_type: cpu
sweep:
  matrix: {batch_size: [1, 2, 4]}
scheduling:
  deadline: 30m
"""


def _job(root: Path) -> tuple[dict[str, object], RunConfig]:
    workload = read_workload(root / workload_file("alpha", "grouped"))
    (job,) = workload.jobs
    data = workload.configmaps[job["metadata"]["name"]]["data"][CONFIG_FILE]
    return job["spec"], RunConfig.model_validate_json(data)


def _with(per_pod: int) -> str:
    return SPEC.replace("deadline: 30m", f"deadline: 30m\n  variants_per_pod: {per_pod}")


def test_one_variant_per_pod_writes_no_groups(spec_repo: Path, write_spec: WriteSpec) -> None:
    write_spec("grouped.yaml", SPEC)
    synth(spec_repo)
    spec, config = _job(spec_repo)
    assert config.groups is None
    assert spec["completions"] == len(config.variants) == 6


def test_groups_hold_one_model_together_in_sweep_order(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec("grouped.yaml", SPEC)
    synth(spec_repo)
    _, alone = _job(spec_repo)
    write_spec("grouped.yaml", _with(2))
    synth(spec_repo)
    spec, config = _job(spec_repo)
    assert config.variants == alone.variants, "positions and ids do not depend on grouping"
    assert spec["completions"] == config.completions == 3
    models = [[config.variants[p].model for p in group] for group in config.groups or ()]
    assert models == [["cnn", "cnn"], ["cnn", "mlp"], ["mlp", "mlp"]]
    batches = [config.variants[p].batch_size for group in config.groups or () for p in group]
    assert batches == [1, 2, 4, 1, 2, 4]
    assert [len(config.group(i)) for i in range(3)] == [2, 2, 2]


def test_only_grouped_pods_mount_what_the_collector_hands_back(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    """The retry of a group reads which of its variants an earlier attempt reported from a
    ConfigMap named after its Job, which need not exist (contract/reported.py)."""
    write_spec("grouped.yaml", SPEC)
    synth(spec_repo)
    alone, _ = _job(spec_repo)
    assert REPORTED_VOLUME not in str(alone)
    write_spec("grouped.yaml", _with(2))
    synth(spec_repo)
    workload = read_workload(spec_repo / workload_file("alpha", "grouped"))
    (job,) = workload.jobs
    pod = job["spec"]["template"]["spec"]
    (volume,) = [v for v in pod["volumes"] if v["name"] == REPORTED_VOLUME]
    name = reported_configmap(job["metadata"]["name"])
    assert volume["configMap"] == {"name": name, "optional": True}
    assert name not in workload.configmaps, "the collector writes it, not synth"
    (container,) = pod["containers"]
    assert {"name": REPORTED_VOLUME, "mountPath": REPORTED_DIR, "readOnly": True} in container[
        "volumeMounts"
    ]
    assert {"name": REPORTED_ENV, "value": REPORTED_DIR} in container["env"]


def test_pod_groups_chunk_a_stable_sort_by_model() -> None:
    assert pod_groups(["b", "a", "b", "a", "c"], 1) is None
    assert pod_groups(["b", "a", "b", "a", "c"], 3) == ((1, 3, 0), (2, 4))
    assert pod_groups(["a"] * 3, 32) == ((0, 1, 2),)


@pytest.mark.parametrize("per_pod", [0, MAX_VARIANTS_PER_POD + 1])
def test_variants_per_pod_out_of_bounds_is_a_located_error(
    spec_repo: Path, write_spec: WriteSpec, per_pod: int
) -> None:
    path = write_spec("grouped.yaml", _with(per_pod))
    with pytest.raises(SpecProblems) as raised:
        load_specs(spec_repo, [path])
    (problem,) = raised.value.problems
    located = "specs/workflows/grouped.yaml:21:21: scheduling.variants_per_pod: "
    assert str(problem).startswith(located)


def test_the_deadline_check_counts_a_group_in_sequence(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    # 6 variants of 3 s each: 10 pods at a time need 3 s alone, 18 s as one group of 6.
    path = write_spec("grouped.yaml", _with(6).replace("deadline: 30m", "deadline: 10s"))
    with pytest.raises(SpecProblems) as raised:
        load_specs(spec_repo, [path])
    (problem,) = raised.value.problems
    assert "needs at least 18s (6 variants, 6 per pod, 10 pods at a time" in str(problem)
    write_spec("grouped.yaml", _with(1).replace("deadline: 30m", "deadline: 10s"))
    load_specs(spec_repo)


def _interleaved(per_pod: int) -> str:
    measure = "max_time: 20s}\n"
    return _with(per_pod).replace(measure, f"{measure}  interleave: true\n")


def test_interleave_without_groups_is_a_located_error(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    path = write_spec("grouped.yaml", _interleaved(1))
    with pytest.raises(SpecProblems) as raised:
        load_specs(spec_repo, [path])
    (problem,) = raised.value.problems
    located = "specs/workflows/grouped.yaml:15:15: benchmark.interleave: "
    assert str(problem).startswith(located)
    assert "variants_per_pod" in str(problem)


def test_interleave_reaches_config_json_and_every_variant_id(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec("grouped.yaml", _with(3))
    synth(spec_repo)
    _, sequential = _job(spec_repo)
    workload = read_workload(spec_repo / workload_file("alpha", "grouped"))
    (job,) = workload.jobs
    assert '"interleave"' not in workload.configmaps[job["metadata"]["name"]]["data"][CONFIG_FILE]
    write_spec("grouped.yaml", _interleaved(3))
    synth(spec_repo)
    _, interleaved = _job(spec_repo)
    assert not sequential.interleave and interleaved.interleave
    assert interleaved.groups == sequential.groups
    before = {v.id for v in sequential.variants}
    assert before.isdisjoint(v.id for v in interleaved.variants), "it changes the numbers"


def test_config_json_groups_must_list_every_variant_once() -> None:
    base = {
        "workflow": "w",
        "target": "cpu",
        "device_type": "cpu",
        "gpus": 0,
        "warmup": {"min_iterations": 0, "min_time_s": 0, "max_iterations": 1, "max_time_s": 1},
        "measure": {"min_iterations": 0, "min_time_s": 0, "max_iterations": 1, "max_time_s": 1},
        "models": {},
        "variants": [
            {
                "index": i,
                "id": f"v{i:012x}",
                "model": "m",
                "precision": "fp32",
                "quantization": "none",
                "batch_size": 1,
                "inputs": [],
            }
            for i in range(3)
        ],
    }
    assert RunConfig.model_validate({**base, "groups": [[2, 0], [1]]}).completions == 2
    for groups in ([[0, 1]], [[0, 1, 1], [2]], [[0, 1, 2], []], [[0, 1, 2, 3]]):
        with pytest.raises(ValidationError, match="exactly once"):
            RunConfig.model_validate({**base, "groups": groups})


def test_plan_and_variants_name_the_pods(spec_repo: Path, write_spec: WriteSpec) -> None:
    write_spec("grouped.yaml", _with(4))
    runner = CliRunner()
    planned = runner.invoke(cli, ["--root", str(spec_repo), "plan"])
    assert planned.exit_code == 0, planned.output
    assert "(6 variants will run in 2 pods: 6 new;" in planned.stdout
    listed = runner.invoke(cli, ["--root", str(spec_repo), "variants", "grouped"])
    assert listed.exit_code == 0, listed.output
    pods = [line.split()[-1] for line in listed.stdout.splitlines()[1:-1]]
    assert sorted(pods) == ["0", "0", "0", "0", "1", "1"]
    assert listed.stdout.splitlines()[-1].endswith(": 6 run, 0 recorded")


def test_a_grouped_job_says_its_groups_itself(spec_repo: Path, write_spec: WriteSpec) -> None:
    """The collector reads a Job that dist/ no longer holds from the cluster, where its
    config.json may be gone: the Job carries its groups, outside its name's hash."""
    write_spec("grouped.yaml", SPEC)
    synth(spec_repo)
    (alone,) = read_workload(spec_repo / workload_file("alpha", "grouped")).jobs
    assert GROUPS_ANNOTATION not in alone["metadata"]["annotations"]
    write_spec("grouped.yaml", _with(4))
    synth(spec_repo)
    (job,) = read_workload(spec_repo / workload_file("alpha", "grouped")).jobs
    _, config = _job(spec_repo)
    annotations = job["metadata"]["annotations"]
    assert config.groups is not None
    assert parse_groups(annotations[GROUPS_ANNOTATION]) == config.groups
    assert annotations[VARIANTS_ANNOTATION] == str(len(config.variants))


@pytest.mark.parametrize(
    "text",
    ["[[0,1],[1]]", "[[0],[2]]", "[[0],[]]", '[["0"]]', "{}", "[[0", "[[-1,0]]"],
)
def test_a_groups_annotation_that_is_not_synths_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"groups must list|not a list of lists"):
        parse_groups(text)
