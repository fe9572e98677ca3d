"""Fixtures for the spec language and synth tests."""

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT, TEST_DATA

WriteSpec = Callable[[str, str], Path]
LinkModels = Callable[[Path], None]

OVERSIZE_BYTES = 1024 * 1024 + 4096


@pytest.fixture(scope="session")
def example_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the committed example models, for every test's repository to link to."""
    copy = tmp_path_factory.mktemp("models") / "examples"
    shutil.copytree(REPO_ROOT / "models" / "examples", copy)
    return copy


@pytest.fixture
def link_models(example_models: Path) -> LinkModels:
    """Put the example models into a test's repository root as models/examples/: hard links to
    one copy, as synth reads nothing that a symlink leads to outside the repository."""

    def link(root: Path) -> None:
        shutil.copytree(example_models, root / "models" / "examples", copy_function=os.link)

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
def write_spec(spec_repo: Path) -> WriteSpec:
    """Write a workflow spec file into `spec_repo`; returns its path."""

    def write(name: str, text: str) -> Path:
        path = spec_repo / "specs" / "workflows" / name
        path.write_text(text, encoding="utf-8")
        return path

    return write
