"""Fixtures for the spec language and synth tests."""

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, TEST_DATA

WriteSpec = Callable[[str, str], Path]

OVERSIZE_BYTES = 1024 * 1024 + 4096


@pytest.fixture
def spec_repo(tmp_path: Path) -> Path:
    """A repository root holding the test fleet, the example models and an oversize model.

    The models folder is a symlink to the checkout's, so tests see the real committed files;
    the oversize model is sparse, so it costs no disk.
    """
    (tmp_path / "specs" / "workflows").mkdir(parents=True)
    shutil.copy(TEST_DATA / "specs" / "clusters.yaml", tmp_path / "specs" / "clusters.yaml")
    (tmp_path / "models").symlink_to(REPO_ROOT / "models", target_is_directory=True)
    (tmp_path / "big").mkdir()
    with (tmp_path / "big" / "oversize.pt2").open("wb") as big:
        big.truncate(OVERSIZE_BYTES)
    return tmp_path


@pytest.fixture
def write_spec(spec_repo: Path) -> WriteSpec:
    """Write a workflow spec file into `spec_repo`; returns its path."""

    def write(name: str, text: str) -> Path:
        path = spec_repo / "specs" / "workflows" / name
        path.write_text(text, encoding="utf-8")
        return path

    return write
