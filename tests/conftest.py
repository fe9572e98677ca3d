"""Fixtures shared by every test package."""

from pathlib import Path

import pytest
import torch

REPO_ROOT = Path(__file__).resolve().parent.parent
TEST_DATA = REPO_ROOT / "tests" / "data"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The checkout the tests run in: its specs/, models/ and generated files."""
    return REPO_ROOT


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip `gpu` tests where torch sees no CUDA device (they run on a GPU machine)."""
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
