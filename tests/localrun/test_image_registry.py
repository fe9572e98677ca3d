"""`make image`, `make push`, `make pin-image`, `make synth` against a real registry on loopback.

The registry is Debian's docker-registry, the reference implementation of the protocol nodes
pull with. The pull at the end goes into an empty podman storage, so every layer comes from
the registry. Minutes: it builds the runner image (cached after the first time) and moves
about 2.7 GB through the registry twice.
"""

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest
import yaml

from contract.layout import FLEET_FILE
from localrun.e2e_container import Timings
from localrun.image import REMOTE_NAME, Pushed, build, local_image, project_version, push
from localrun.loopback_registry import loopback_registry
from localrun.oci_registry import OciClient
from localrun.pin import pin_file
from localrun.podman import Podman, PodmanError, configure_podman
from localrun.reference import in_registry, parse_pinned, parse_registry
from synth.main import synth
from tests.conftest import REPO_ROOT

REQUIRED: Final = ("podman", "/usr/sbin/runc", "debootstrap", "/usr/bin/docker-registry")
FREE_DISK_GB: Final = 24
"""Measured: 20 GB more in use at the peak, during the push (podman's compressed copies of the
5.3 GB image and the registry's), after the build context's 2.7 GB are gone."""


def _missing() -> list[str]:
    missing = [program for program in REQUIRED if shutil.which(program) is None]
    if os.geteuid() != 0:
        missing.append("root (podman builds and registry pushes here run as root)")
    for folder in ("/var/lib/containers", tempfile.gettempdir()):
        free_gb = shutil.disk_usage(_existing(Path(folder))).free / 1e9
        if free_gb < FREE_DISK_GB:
            # The registry would answer the push with a bare HTTP 500.
            missing.append(f"{FREE_DISK_GB} GB free under {folder} ({free_gb:.1f} GB)")
    return missing


def _existing(path: Path) -> Path:
    while not path.exists():
        path = path.parent
    return path


pytestmark = pytest.mark.skipif(
    bool(_missing()),
    reason="needs "
    + ", ".join(_missing())
    + ": apt-get install -y podman runc debootstrap docker-registry, as root",
)


@pytest.fixture(scope="module")
def registry_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("registry")


@pytest.fixture(scope="module")
def registry(registry_folder: Path) -> Iterator[str]:
    """host:port of a docker-registry serving plain HTTP on loopback, storing in a temp dir."""
    with loopback_registry(registry_folder) as address:
        yield address


@dataclass(frozen=True)
class Run:
    podman: Podman
    pushed: Pushed
    timings: Timings


@pytest.fixture(scope="module")
def pushed(registry: str, registry_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    """`make image` then `make push REGISTRY=<registry>/benchfleet`, as their code runs them."""
    podman = configure_podman(tmp_path_factory.mktemp("podman"))
    timings = Timings()
    target = in_registry(parse_registry(f"{registry}/benchfleet"), REMOTE_NAME, project_version())
    assert target.is_loopback
    # Not under pytest's kept temp dirs: the context holds 2.7 GB of wheels.
    with tempfile.TemporaryDirectory(prefix="benchfleet-test-image-") as scratch:
        built = build(podman, Path(scratch), timings, "local")
        assert built.image == local_image()
        with timings.step("push"):
            try:
                result = push(podman, built.image, target, Path(scratch), insecure=True)
            except PodmanError as error:
                # podman sees only the status code; the registry's log says why.
                log = (registry_folder / "registry.log").read_text(encoding="utf-8")
                raise AssertionError(f"{error}\nregistry.log:\n{log[-3000:]}") from error
    print(timings.table())
    print(f"pushed {result.reference}: the registry serves {result.pinned}")
    return Run(podman, result, timings)


@pytest.mark.slow
def test_push_digest_is_what_the_registry_serves_for_the_tag(registry: str, pushed: Run) -> None:
    """push() already compares podman's --digestfile with the registry; ask again here."""
    tag = in_registry(parse_registry(f"{registry}/benchfleet"), REMOTE_NAME, project_version())
    assert str(pushed.pushed.reference) == str(tag)
    assert OciClient(registry, insecure=True, credentials="").manifest(tag).digest == (
        pushed.pushed.digest
    )


@pytest.mark.slow
def test_pin_then_synth_puts_that_digest_into_every_job(pushed: Run, tmp_path: Path) -> None:
    for folder in ("specs", "dist", "clusters", "models"):
        shutil.copytree(REPO_ROOT / folder, tmp_path / folder)
    before = (tmp_path / FLEET_FILE).read_text(encoding="utf-8")
    old, new = pin_file(tmp_path, parse_pinned(pushed.pushed.pinned))
    after = (tmp_path / FLEET_FILE).read_text(encoding="utf-8")
    assert new == pushed.pushed.pinned
    assert after == before.replace(f"image: {old}\n", f"image: {new}\n")
    synth(tmp_path)
    jobs = [
        document
        for path in sorted((tmp_path / "dist").glob("*/workloads/*.yaml"))
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if document and document["kind"] == "Job"
    ]
    assert jobs
    images = {c["image"] for job in jobs for c in job["spec"]["template"]["spec"]["containers"]}
    assert images == {pushed.pushed.pinned}


@pytest.mark.slow
def test_a_pull_by_that_digest_fetches_the_image_from_the_registry(pushed: Run) -> None:
    """Into an empty storage, so nothing can come from the image built here."""
    scratch = Path(tempfile.mkdtemp(prefix="benchfleet-test-pull-"))
    storage = ("--root", str(scratch / "root"), "--runroot", str(scratch / "runroot"))
    podman, pinned = pushed.podman, pushed.pushed.pinned

    def run(*arguments: str) -> str:
        completed = subprocess.run(
            podman.command(*storage, *arguments),
            env=podman.environment(),
            capture_output=True,
            text=True,
            check=False,
        )
        assert completed.returncode == 0, completed.stderr[-3000:]
        return completed.stdout.strip()

    try:
        start = time.monotonic()
        run("pull", "--quiet", "--tls-verify=false", pinned)
        print(f"pull by digest into empty storage: {time.monotonic() - start:.1f} s")
        assert run("image", "inspect", "--format", "{{.Digest}}", pinned) == pushed.pushed.digest
        versions = run(
            "run",
            "--rm",
            "--network",
            "none",
            "--entrypoint",
            "python",
            pinned,
            "-c",
            "import onnxruntime, runner, torch; print(torch.__version__); "
            "print(onnxruntime.__version__, *onnxruntime.get_available_providers())",
        )
        torch_version, onnxruntime = versions.splitlines()
        assert torch_version.startswith("2.13.0")
        # PyPI's torch, so ONNX Runtime's GPU build, with its CPU provider too.
        assert onnxruntime.split() == [
            "1.31.1",
            "TensorrtExecutionProvider",
            "CUDAExecutionProvider",
            "CPUExecutionProvider",
        ]
    finally:
        subprocess.run(
            podman.command(*storage, "rmi", "--all", "--force"),
            env=podman.environment(),
            capture_output=True,
            check=False,
        )
        # What rmi leaves of the storage (its layer folders, 0.3 GB) must not pile up in /tmp.
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
