"""What `make image` builds from, and when podman's build cache must not be trusted."""

from pathlib import Path

import pytest

from localrun.image import local_image, official_base, project_version
from localrun.podman import requirements_digest
from localrun.reference import parse_reference, qualified


def test_the_official_base_names_its_registry_and_digest() -> None:
    """Debian's podman resolves no short names: `pytorch/pytorch` alone is never pulled."""
    base = parse_reference(official_base())
    assert base.registry == "docker.io"
    assert base.digest is not None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("ubuntu:24.04", "docker.io/library/ubuntu:24.04"),
        ("pytorch/pytorch:2", "docker.io/pytorch/pytorch:2"),
        ("quay.io/a/b:1", "quay.io/a/b:1"),
        ("localhost/benchfleet-base:bookworm", "localhost/benchfleet-base:bookworm"),
        ("127.0.0.1:5000/a:1", "127.0.0.1:5000/a:1"),
    ],
)
def test_short_names_are_qualified_as_docker_reads_them(name: str, expected: str) -> None:
    assert qualified(name) == expected


def test_the_local_tag_is_the_project_version() -> None:
    assert local_image() == f"localhost/benchfleet-runner:{project_version()}"


def test_changed_pins_or_wheels_change_the_build_argument(tmp_path: Path) -> None:
    """buildah 1.28 caches a RUN --mount=type=bind step whatever the mount holds."""
    (tmp_path / "wheels").mkdir()
    (tmp_path / "requirements.txt").write_text("torch==2.13.0\n", encoding="utf-8")
    (tmp_path / "wheels" / "torch-2.13.0-cp311.whl").write_bytes(b"x")
    first = requirements_digest(tmp_path)
    assert requirements_digest(tmp_path) == first
    (tmp_path / "wheels" / "numpy-2.4.6-cp311.whl").write_bytes(b"y")
    second = requirements_digest(tmp_path)
    (tmp_path / "requirements.txt").write_text("torch==2.14.0\n", encoding="utf-8")
    assert len({first, second, requirements_digest(tmp_path)}) == 3
