"""Fixtures shared by every test package, and how the suite is scheduled: which tests skip here,
which must share one xdist worker (the Makefile's TEST_WORKERS says how many `make test` runs)."""

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from xdist import is_xdist_controller, is_xdist_worker
from xdist.remote import Producer
from xdist.scheduler import LoadGroupScheduling

from localcluster.build import is_built
from localcluster.lake import LakeServer
from tests.lakeserver import (
    FULL_BUCKET,
    LAKE_NOT_BUILT,
    Lake,
    fresh_lake,
    lake_server_built,
    restore,
    start_lake_server,
)
from tests.model_server import (
    Authority,
    ModelServer,
    issue_server_certificate,
    make_authority,
    serving,
)

REPO_ROOT = Path(__file__).resolve().parent.parent

# Idle OpenMP threads sleep rather than spin: read when torch loads its libgomp, which no
# test module has done yet. Two xdist workers and other work share this host's two cores,
# and a thread spinning at a barrier while its partner waits for a core multiplied the CPU
# time of ResNet-50's forward by 7-12 (docs/decisions/tests.md). Results are the same; pods
# get only their spec's env, so their specs ask for one CPU (tests/large_models.py).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
TEST_DATA = REPO_ROOT / "tests" / "data"

if TYPE_CHECKING:
    from models.large import LargeModel


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


def session_folder(factory: pytest.TempPathFactory, *, worker: bool) -> Path:
    """The temporary folder the whole session shares: under xdist each `worker`'s own is a
    folder in the controller's (xdist's `popen-<worker>`), so the workers meet in that."""
    base = factory.getbasetemp()
    return base.parent if worker else base


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """`path` held with an exclusive lock, which other processes wait for."""
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def lake_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LakeServer]:
    """The result lake's real S3 server (SeaweedFS) on loopback, one a session and xdist
    worker (seconds to start); skipped, naming `make cluster-build`, where it is not built."""
    if not lake_server_built():
        pytest.skip(LAKE_NOT_BUILT)
    server = start_lake_server(tmp_path_factory.mktemp("lake-server"))
    yield server
    server.stop()


@pytest.fixture
def lake(lake_server: LakeServer) -> Iterator[Lake]:
    """A fresh prefix of its own on the session's lake server (tests/lakeserver.py's Lake:
    url, env(), store(), writer_for(), stopped(), paused(), through()); the server is
    running and answering again after the test, whatever it did."""
    yield fresh_lake(lake_server)
    restore(lake_server)


@pytest.fixture(scope="session")
def full_bucket(lake_server: LakeServer) -> str:
    """A bucket over its quota, which refuses every write (made once a session)."""
    lake_server.create_bucket(FULL_BUCKET)
    lake_server.fill(FULL_BUCKET)
    return FULL_BUCKET


@pytest.fixture
def full_lake(lake_server: LakeServer, full_bucket: str) -> Lake:
    """A fresh prefix in the bucket over its quota."""
    return fresh_lake(lake_server, full_bucket)


LARGE_MODELS = "large-models"
_EXPORTED = "exported.json"


@pytest.fixture(scope="session")
def large_models(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, "LargeModel"]]:
    """ResNet-50 and BERT-base exported by `benchfleet export` once a session, by whichever
    xdist worker asks first while the other waits (an export is most of a minute of CPU);
    deleted when the session ends (half a gigabyte must not pile up in pytest's kept
    temporary folders): by the controller under xdist, as a worker cannot know whether the
    other still needs them."""
    # models.large imports torch: only the sessions that export pay for it.
    from models.large import LargeModel, export_all  # noqa: PLC0415

    worker = is_xdist_worker(request)
    folder = session_folder(tmp_path_factory, worker=worker) / LARGE_MODELS
    with _locked(folder.with_suffix(".lock")):
        exported = folder / _EXPORTED
        if not exported.exists():
            folder.mkdir(exist_ok=True)
            entries = {name: model.entry for name, model in export_all(folder).items()}
            # Written last: a worker that finds it finds every model whole.
            exported.write_text(json.dumps(entries), encoding="utf-8")
        entries = json.loads(exported.read_text(encoding="utf-8"))
    yield {name: LargeModel(folder / f"{name}.pt2", entry) for name, entry in entries.items()}
    if not worker:
        shutil.rmtree(folder, ignore_errors=True)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under xdist, the controller deletes what its workers shared (`large_models`) once
    every worker is done."""
    if is_xdist_controller(session):
        # pytest's own factory, as xdist reads it to give each worker its folder.
        factory: pytest.TempPathFactory = session.config._tmp_path_factory  # type: ignore[attr-defined]
        shutil.rmtree(session_folder(factory, worker=False) / LARGE_MODELS, ignore_errors=True)


CLUSTER_SKIPPED = (
    "CLUSTER TESTS SKIPPED: the local cluster's binaries are not built for the committed "
    "versions; build them with `make cluster-build` (minutes cold), then run `make e2e`"
)
CLUSTER_NOT_BUILT = "local cluster not built"

WORKER_GROUPS = {
    "tests/cluster/": "cluster",
    "tests/localrun/test_large_models.py": "large-models",
    "tests/localrun/test_image_registry.py": "podman",
    "tests/localrun/test_podman_build.py": "podman",
    "tests/localrun/test_podman_stop.py": "podman",
}
"""The tests under each path prefix run on one worker, one group at a time. The cluster
tests share one control plane a session; in `make test-large` the local large-model sweep
runs beside them on another worker (the two sweeps one after the other would be its longest
stretch), reading the models `large_models` exported once for both; podman's image store
and build cache belong to the host, not to a session."""


def _skip_marked(items: list[pytest.Item], marker: str, reason: str) -> None:
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if item.get_closest_marker(marker):
            item.add_marker(skip)


class WorkerGroups(LoadGroupScheduling):  # type: ignore[misc]  # xdist ships no types
    """xdist's loadgroup by WORKER_GROUPS: every other test goes to whichever worker is free.
    By path, as the controller sees node ids only; and xdist_group marks are lost with pytest
    9.2 (pytest-dev/pytest-xdist#1386)."""

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        for prefix, group in WORKER_GROUPS.items():
            if path.startswith(prefix):
                return group
        return str(super()._split_scope(nodeid))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> WorkerGroups | None:
    """`--dist loadgroup` schedules by WORKER_GROUPS."""
    return WorkerGroups(config, log) if config.getvalue("dist") == "loadgroup" else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Skip `gpu` tests where torch sees no CUDA device (they run on a GPU machine), and
    `cluster` tests when the local cluster's binaries are not built."""
    if any(item.get_closest_marker("gpu") for item in items):
        import torch  # noqa: PLC0415 - a session without gpu tests need not load it

        if not torch.cuda.is_available():
            _skip_marked(items, "gpu", "needs a CUDA device")
    if not is_built():
        _skip_marked(items, "cluster", CLUSTER_NOT_BUILT)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say loudly that the cluster tests were skipped: from the reports, which xdist's
    controller sees too (its workers collect, not it)."""
    skipped = terminalreporter.stats.get("skipped", [])
    if any(CLUSTER_NOT_BUILT in str(report.longrepr) for report in skipped):
        terminalreporter.write_line(CLUSTER_SKIPPED, red=True)
    if any(LAKE_NOT_BUILT in str(report.longrepr) for report in skipped):
        terminalreporter.write_line(f"LAKE TESTS SKIPPED: {LAKE_NOT_BUILT}", red=True)
