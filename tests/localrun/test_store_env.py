"""A Job of a cluster with a results store plans and runs here: its env from the downward API
(the Job's name from the Job controller's label) and its credentials' secretKeyRefs resolved
from the caller's own standard AWS variables, which go only into the pod's environment."""

import copy
from pathlib import Path
from typing import Any

import pytest

from contract.config import POD_NAME_ENV
from contract.dist import read_workload
from contract.lake import (
    ACCESS_KEY_ENV,
    CREDENTIAL_KEYS,
    JOB_NAME_ENV,
    RESULTS_URL_ENV,
    SECRET_KEY_ENV,
    sha256_of,
)
from localrun.pod import ContainerConfigError, PodPlan, PodSpecError, pod_plan
from localrun.podman import configure_podman, run_arguments, secret_environment
from localrun.process import process_environment, run_process
from localrun.workflow import read_outcome
from synth.store_env import store_env
from tests.lakeserver import EXAMPLE_STORE, Lake
from tests.localrun.conftest import SMOKE


def store_job(env: list[dict[str, Any]] | None = None) -> tuple[dict[str, Any], Any]:
    """cpu-smoke's Job with the env synth gives a runner of a cluster with `EXAMPLE_STORE`."""
    workload = read_workload(SMOKE)
    job = copy.deepcopy(workload.jobs[0])
    (container,) = job["spec"]["template"]["spec"]["containers"]
    container["env"] += (
        store_env(EXAMPLE_STORE, "us-east", "cpu-smoke", None) if env is None else env
    )
    return job, workload


def plan(tmp_path: Path, env: list[dict[str, Any]] | None = None) -> PodPlan:
    job, workload = store_job(env)
    return pod_plan(job, workload.configmaps, 1, tmp_path / "pod")


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    values = {ACCESS_KEY_ENV: "caller-key", SECRET_KEY_ENV: "caller-secret-value"}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return values


def test_a_store_jobs_pod_gets_its_job_pod_and_the_callers_credentials(
    tmp_path: Path, credentials: dict[str, str]
) -> None:
    planned = plan(tmp_path)
    assert planned.env[JOB_NAME_ENV] == planned.job_name
    assert planned.env[POD_NAME_ENV] == f"{planned.job_name}-1-local"
    assert planned.env[RESULTS_URL_ENV] == "s3://results/team"
    assert {name: planned.env[name] for name in CREDENTIAL_KEYS} == credentials
    assert planned.secret_env == frozenset(CREDENTIAL_KEYS)
    env, _ = process_environment(planned)
    assert {name: env[name] for name in CREDENTIAL_KEYS} == credentials


def test_without_the_callers_credentials_the_optional_refs_are_left_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in CREDENTIAL_KEYS:
        monkeypatch.delenv(name, raising=False)
    planned = plan(tmp_path)
    assert not set(CREDENTIAL_KEYS) & set(planned.env)
    assert planned.secret_env == frozenset()
    assert RESULTS_URL_ENV in planned.env  # the runner tries, is refused, and says so


def test_a_required_key_no_secret_holds_is_the_kubelets_config_error(
    tmp_path: Path, credentials: dict[str, str]
) -> None:
    del credentials

    def token(**optional: bool) -> list[dict[str, Any]]:
        reference = {"name": "vault", "key": "TOKEN", **optional}
        return [{"name": "TOKEN", "valueFrom": {"secretKeyRef": reference}}]

    with pytest.raises(ContainerConfigError, match="couldn't find key TOKEN in Secret vault"):
        plan(tmp_path, token())
    assert "TOKEN" not in plan(tmp_path, token(optional=True)).env


def test_a_whole_secret_as_env_is_refused_not_dropped(tmp_path: Path) -> None:
    job, workload = store_job([])
    (container,) = job["spec"]["template"]["spec"]["containers"]
    container["envFrom"] = [{"secretRef": {"name": "results-store"}}]
    with pytest.raises(PodSpecError, match="envFrom"):
        pod_plan(job, workload.configmaps, 0, tmp_path / "pod")


def test_podman_is_given_a_secrets_value_by_name_never_on_its_command_line(
    tmp_path: Path, credentials: dict[str, str]
) -> None:
    planned = plan(tmp_path)
    arguments = run_arguments(planned, tmp_path / "termination-log")
    assert not any(value in argument for value in credentials.values() for argument in arguments)
    given = [arguments[i + 1] for i, argument in enumerate(arguments) if argument == "-e"]
    assert set(CREDENTIAL_KEYS) <= set(given)
    assert f"{JOB_NAME_ENV}={planned.job_name}" in given
    environment = secret_environment(configure_podman(tmp_path), planned)
    assert {name: environment[name] for name in CREDENTIAL_KEYS} == credentials


@pytest.mark.slow
def test_a_local_run_writes_its_whole_result_to_the_store_with_the_callers_credentials(
    quick_root: Path, lake: Lake, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real runner, the real S3 server, the caller's credentials the workflow's writer's:
    the result names the object it was written to, whose bytes hash as it says."""
    workload = read_workload(quick_root / SMOKE.relative_to(SMOKE.parents[3]))
    job = copy.deepcopy(workload.jobs[0])
    store = EXAMPLE_STORE.model_copy(
        update={"url": str(lake.url), "endpoint": lake.server.endpoint}
    )
    (container,) = job["spec"]["template"]["spec"]["containers"]
    workflow = str(job["metadata"]["labels"]["workflow"])
    container["env"] += store_env(store, "us-east", workflow, None)
    writer = lake.server.env(lake.writer_for(workflow))
    for name in CREDENTIAL_KEYS:
        monkeypatch.setenv(name, writer[name])
    planned = pod_plan(job, workload.configmaps, 0, tmp_path / "pod")
    outcome = read_outcome(planned, run_process(planned, timeout_s=300))
    assert outcome.problem is None, outcome.run.stderr
    result = outcome.result
    assert result is not None and result.stored is not None, outcome.run.stderr
    assert result.variant is not None
    assert result.stored.key.endswith(f"/{planned.job_name}/{result.variant.id}/"
                                      f"{planned.job_name}-0-local.json")  # fmt: skip
    data = lake.store().get(result.stored.key, result.stored.bytes)
    assert sha256_of(data) == result.stored.sha256
