"""The example models are what models/make_models.py builds, byte for byte."""

import pytest

from models.make_models import (
    EXAMPLES,
    ModelRecipe,
    export_bytes,
    policy_bytes,
    zoo,
    zoo_spec,
)
from tests.conftest import REPO_ROOT


@pytest.mark.parametrize("recipe", EXAMPLES, ids=lambda recipe: recipe.name)
def test_committed_model_is_reproducible(recipe: ModelRecipe) -> None:
    committed = (REPO_ROOT / "models" / "examples" / f"{recipe.name}.pt2").read_bytes()
    assert export_bytes(recipe) == committed


def test_committed_policy_is_reproducible() -> None:
    for name, content in policy_bytes().items():
        assert (REPO_ROOT / "models" / "policy" / name).read_bytes() == content, name


def test_committed_zoo_spec_matches_the_zoo_table() -> None:
    spec = (REPO_ROOT / "specs" / "workflows" / "model-zoo.yaml").read_text(encoding="utf-8")
    assert spec == zoo_spec(zoo())


def test_every_model_fits_a_configmap() -> None:
    sizes = {p.name: p.stat().st_size for p in (REPO_ROOT / "models").rglob("*.pt2")}
    assert len(sizes) == 56
    assert max(sizes.values()) < 1024 * 1024
