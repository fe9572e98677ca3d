"""Fixtures of the collector's end-to-end tests: the stand-in API server serving us-east, a
checkout holding the cpu-smoke workload, and the `collector` command run against both."""

import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from benchfleet.collector import cli
from standin import objects
from standin.api import FakeApiServer
from standin.fixture import fixture_root
from tests.collector.gathering import NAMESPACE, NAMESPACES, WORKLOAD, Collect, Obj, kubeconfig


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    """The stand-in, serving us-east's identity ConfigMap (what Flux applied there)."""
    with FakeApiServer() as server:
        server.add("configmaps", objects.cluster_identity("us-east", NAMESPACE))
        yield server


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A checkout holding the cpu-smoke workload and namespaces synth wrote for us-east."""
    for path in (WORKLOAD, NAMESPACES):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(fixture_root() / path, tmp_path / path)
    return tmp_path


@pytest.fixture
def job() -> Obj:
    return objects.job("cpu-smoke", cluster="us-east")


@pytest.fixture
def collector(repo: Path, api: FakeApiServer) -> Collect:
    """Runs `collector --root REPO COMMAND --workflow cpu-smoke ARGS` against the fake server
    (with `env` added to the process's: a lake's, say)."""

    def run(command: str, *arguments: str, env: Mapping[str, str] | None = None) -> Result:
        named = ("gather", "status", "clean", "samples")
        cluster = ["--cluster", "us-east"] if command in named else []
        workflow = ["--workflow", "cpu-smoke"] if command != "clean" else []
        return CliRunner().invoke(
            cli,
            ["--root", str(repo), command, *workflow, *cluster, *arguments],
            env={**(env or {}), "BENCHFLEET_K8S_KUBECONFIG": kubeconfig(api.url)},
        )

    return run
