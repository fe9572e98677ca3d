"""build_image with real podman, on a context of a few bytes: a rebuild leaves no image behind."""

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from localrun.podman import Podman, build_image, check_call, configure_podman, image_id

pytestmark = pytest.mark.skipif(
    shutil.which("podman") is None or os.geteuid() != 0,
    reason="needs podman, as root: apt-get install -y podman runc",
)

DOCKERFILE = """\
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG REQUIREMENTS_SHA256
COPY stamp /stamp
"""


@pytest.fixture
def podman(tmp_path: Path) -> Podman:
    return configure_podman(tmp_path)


@pytest.fixture
def tag(podman: Podman) -> Iterator[str]:
    name = f"localhost/benchfleet-test-rebuild-{uuid.uuid4().hex[:8]}"
    yield f"{name}:1"
    for image in (f"{name}:1", f"{name}:kept"):
        check_call(podman.command("image", "rm", "--ignore", image), podman.environment())


def build(podman: Podman, folder: Path, tag: str, stamp: str) -> str:
    """Build an image holding `stamp` as `tag`; its ID."""
    folder.mkdir()
    (folder / "wheels").mkdir()
    (folder / "requirements.txt").write_text("", encoding="utf-8")
    (folder / "Dockerfile").write_text(DOCKERFILE, encoding="utf-8")
    (folder / "stamp").write_text(stamp, encoding="utf-8")
    build_image(podman, folder, image=tag, base="scratch")
    built = image_id(podman, tag)
    assert built is not None
    return built


def test_a_rebuild_removes_the_image_the_tag_named_before(
    podman: Podman, tag: str, tmp_path: Path
) -> None:
    first = build(podman, tmp_path / "one", tag, "one")
    second = build(podman, tmp_path / "two", tag, "two")
    assert second != first
    assert image_id(podman, first) is None, "the replaced image is gone"
    assert image_id(podman, tag) == second


def test_an_image_another_tag_holds_is_kept(podman: Podman, tag: str, tmp_path: Path) -> None:
    first = build(podman, tmp_path / "one", tag, "one")
    kept = tag.replace(":1", ":kept")
    check_call(podman.command("tag", first, kept), podman.environment())
    build(podman, tmp_path / "two", tag, "two")
    assert image_id(podman, kept) == first


def test_a_rebuild_of_the_same_context_keeps_its_image(
    podman: Podman, tag: str, tmp_path: Path
) -> None:
    first = build(podman, tmp_path / "one", tag, "same")
    assert build(podman, tmp_path / "two", tag, "same") == first
