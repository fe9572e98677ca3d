"""Fixtures for the spec language and synth tests."""

import os
import shutil
from collections.abc import Callable, Collection
from pathlib import Path

import pytest

from contract.allocation import Allocation
from contract.config import CONFIG_FILE, RunConfig
from contract.dist import read_workload
from contract.layout import (
    REUSES_ANNOTATION,
    SCHEDULED_AT_ANNOTATION,
    SPEC_SHA256_ANNOTATION,
    workload_file,
)
from contract.records import (
    JobRecord,
    StoredVariant,
    parse_reuses,
    repeat_of,
    scheduled_at_of,
    scheduled_run_of,
    write_record,
)
from contract.result import RESULT_ADAPTER, BenchResult
from contract.variant import VariantRef
from localcluster.results import ok_result
from synth.load import load_specs
from synth.problems import Problem, SpecProblems
from tests.conftest import REPO_ROOT, TEST_DATA, git

WriteSpec = Callable[[str, str], Path]


def problems_in(root: Path) -> list[Problem]:
    """Every problem of the specs under `root`, which must have some."""
    with pytest.raises(SpecProblems) as raised:
        load_specs(root)
    return raised.value.problems


LinkModels = Callable[[Path], None]

OVERSIZE_BYTES = 1024 * 1024 + 4096


@pytest.fixture(scope="session")
def example_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the committed example models (the policy's stages beside them, in
    ../policy), for every test's repository to link to."""
    copy = tmp_path_factory.mktemp("models") / "examples"
    shutil.copytree(REPO_ROOT / "models" / "examples", copy)
    shutil.copytree(REPO_ROOT / "models" / "policy", copy.parent / "policy")
    return copy


@pytest.fixture
def link_models(example_models: Path) -> LinkModels:
    """Put the example models into a test's repository root as models/examples/: hard links to
    one copy, as synth reads nothing that a symlink leads to outside the repository."""

    def link(root: Path) -> None:
        shutil.copytree(example_models, root / "models" / "examples", copy_function=os.link)
        policy = example_models.parent / "policy"
        shutil.copytree(policy, root / "models" / "policy", copy_function=os.link)

    return link


@pytest.fixture
def spec_repo(tmp_path: Path, link_models: LinkModels) -> Path:
    """A repository root holding the test fleet, the example models and an oversize model.

    The oversize model is sparse, so it costs no disk.
    """
    (tmp_path / "specs" / "workflows").mkdir(parents=True)
    shutil.copy(TEST_DATA / "specs" / "clusters.yaml", tmp_path / "specs" / "clusters.yaml")
    link_models(tmp_path)
    (tmp_path / "big").mkdir()
    with (tmp_path / "big" / "oversize.pt2").open("wb") as big:
        big.truncate(OVERSIZE_BYTES)
    return tmp_path


@pytest.fixture
def git_repo(spec_repo: Path) -> Path:
    """`spec_repo` as a git repository with no commit yet, its render cache ignored as in a
    real checkout."""
    (spec_repo / ".gitignore").write_text(".cache/\n")
    git(spec_repo, "init", "-q", "-b", "main")
    return spec_repo


@pytest.fixture
def write_spec(spec_repo: Path) -> WriteSpec:
    """Write a workflow spec file into `spec_repo`; returns its path."""

    def write(name: str, text: str) -> Path:
        path = spec_repo / "specs" / "workflows" / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


RecordJobs = Callable[..., list[str]]


def _took(config: RunConfig, index: int, seconds: float) -> BenchResult:
    """A successful result of variant `index` whose load and loops took `seconds`."""
    result = ok_result(config.model_dump(mode="json"), index)
    phase = {"iterations": 10, "seconds": seconds / 2, "stopped_by": "minimums"}
    timings = {"load_s": 0, "prepare_s": 0, "first_iteration_ms": 0, "warmup": phase}
    return RESULT_ADAPTER.validate_python(
        {**result.model_dump(mode="json"), "timings": {**timings, "measure": phase}}
    )


def _held(config: RunConfig, seconds: float) -> Allocation:
    """What gather records of a variant of `config` whose pod held its node `seconds`."""
    return Allocation(
        seconds=seconds,
        pod_seconds=seconds,
        share=1,
        devices=config.gpus or 1,
        unit="gpu" if config.gpus else "cpu",
        device_type=config.device_type,
        capacity="on-demand",
        attempts=1,
    )


def record_jobs_in(
    root: Path,
    workflow: str,
    cluster: str = "alpha",
    failed: Collection[int] = (),
    seconds: float | None = None,
    finished_at: str | None = None,
    allocated: float | None = None,
) -> list[str]:
    """Record every Job dist/ holds of a workflow in a cluster under `root`, as gather would
    once they finished (at `finished_at`, when given): each variant succeeded (having taken
    `seconds`, when given, and held its pod for `allocated` seconds, when given), except
    those whose batch size is in `failed`; what each Job reuses copied from its annotation.
    Returns the Job names."""
    workload = read_workload(root / workload_file(cluster, workflow))
    names = []
    for job in workload.jobs:
        meta = job["metadata"]
        scheduled_run = scheduled_run_of(meta["labels"])
        at = meta["annotations"].get(SCHEDULED_AT_ANNOTATION)
        config = RunConfig.model_validate_json(
            workload.configmaps[meta["name"]]["data"][CONFIG_FILE]
        )
        variants = tuple(
            StoredVariant(
                index=variant.index,
                state="failed" if variant.batch_size in failed else "succeeded",
                variant=VariantRef.of(variant),
                explanation="recorded by the test",
                finished_at=finished_at,
                result=_took(config, variant.index, seconds) if seconds else None,
                allocation=_held(config, allocated) if allocated else None,
            )
            for variant in config.variants
        )
        write_record(
            root,
            JobRecord(
                workflow=workflow,
                cluster=cluster,
                namespace=meta["namespace"],
                job=meta["name"],
                target=config.target,
                spec_sha256=meta["annotations"][SPEC_SHA256_ANNOTATION],
                repeat=repeat_of(meta["labels"]),
                scheduled_run=scheduled_run,
                scheduled_at=scheduled_at_of(at) if at is not None else None,
                outcome="failed" if failed else "complete",
                variants=variants,
                reuses=parse_reuses(meta["annotations"].get(REUSES_ANNOTATION)) or None,
            ),
        )
        names.append(meta["name"])
    return names


@pytest.fixture
def record_jobs(spec_repo: Path) -> RecordJobs:
    """`record_jobs_in` the test's repository."""

    def record(
        workflow: str,
        cluster: str = "alpha",
        failed: Collection[int] = (),
        seconds: float | None = None,
        allocated: float | None = None,
    ) -> list[str]:
        return record_jobs_in(spec_repo, workflow, cluster, failed, seconds, allocated=allocated)

    return record
