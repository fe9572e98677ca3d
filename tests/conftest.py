"""Fixtures shared by every test package."""

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
TEST_DATA = REPO_ROOT / "tests" / "data"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The checkout the tests run in: its specs/, models/ and generated files."""
    return REPO_ROOT
