"""Fixtures shared by every test package."""

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from localcluster.build import is_built
from models.large import LargeModel, export_all
from tests.model_server import (
    Authority,
    ModelServer,
    issue_server_certificate,
    make_authority,
    serving,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
TEST_DATA = REPO_ROOT / "tests" / "data"


def git(root: Path, *arguments: str) -> str:
    """Run git in `root` as a test's author; its output."""
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    done = subprocess.run(
        ["git", "-C", str(root), *identity, *arguments], capture_output=True, text=True, check=True
    )
    return done.stdout


def commit(root: Path, message: str) -> None:
    """Commit everything in `root` that git does not ignore."""
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The checkout the tests run in: its specs/, models/ and generated files."""
    return REPO_ROOT


@pytest.fixture(scope="session")
def company_ca(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    """A company's own CA, which issued the model server's certificate."""
    return make_authority(tmp_path_factory.mktemp("company-ca"), "company-ca")


@pytest.fixture(scope="session")
def server_certificate(
    company_ca: Authority, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """The model server's certificate (for localhost and 127.0.0.1) and key."""
    return issue_server_certificate(company_ca, tmp_path_factory.mktemp("server"))


@pytest.fixture
def model_server(server_certificate: tuple[Path, Path]) -> Iterator[ModelServer]:
    """A real https server on loopback whose certificate the company CA issued."""
    with serving(*server_certificate) as server:
        yield server


@pytest.fixture(scope="session")
def large_models(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, LargeModel]]:
    """ResNet-50 and BERT-base exported by `benchfleet export` once a session; deleted after
    it (half a gigabyte must not pile up in pytest's kept temporary folders)."""
    folder = tmp_path_factory.mktemp("large-models")
    yield export_all(folder)
    shutil.rmtree(folder, ignore_errors=True)


CLUSTER_SKIPPED = (
    "CLUSTER TESTS SKIPPED: the local cluster's binaries are not built for the committed "
    "versions; build them with `make cluster-build` (minutes cold), then run `make e2e`"
)


def _skip_marked(items: list[pytest.Item], marker: str, reason: str) -> int:
    skip = pytest.mark.skip(reason=reason)
    marked = [item for item in items if item.get_closest_marker(marker)]
    for item in marked:
        item.add_marker(skip)
    return len(marked)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip `gpu` tests where torch sees no CUDA device (they run on a GPU machine), and
    `cluster` tests, loudly, when the local cluster's binaries are not built."""
    if not torch.cuda.is_available():
        _skip_marked(items, "gpu", "needs a CUDA device")
    if not is_built() and _skip_marked(items, "cluster", "local cluster not built"):
        config.stash[_cluster_skipped] = True


_cluster_skipped = pytest.StashKey[bool]()


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    if config.stash.get(_cluster_skipped, False):
        terminalreporter.write_line(CLUSTER_SKIPPED, red=True)
