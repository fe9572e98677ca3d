"""Re-synth reuses a workflow's file only when nothing it depends on changed."""

from pathlib import Path

import pytest

from synth.cache import RenderCache
from synth.load import load_specs
from synth.render import render
from tests.conftest import TEST_DATA
from tests.synth.conftest import WriteSpec

MINIMAL = (TEST_DATA / "specs" / "valid-minimal.yaml").read_text(encoding="utf-8")


@pytest.fixture
def cache(tmp_path: Path) -> RenderCache:
    return RenderCache(tmp_path / "cache")


def test_cached_render_equals_a_fresh_one(
    spec_repo: Path, write_spec: WriteSpec, cache: RenderCache
) -> None:
    write_spec("a.yaml", MINIMAL)
    write_spec("b.yaml", MINIMAL.replace("id: valid-minimal", "id: other"))
    first = render(load_specs(spec_repo), spec_repo, cache)
    assert len(list(cache.folder.glob("*.yaml"))) == 2
    assert render(load_specs(spec_repo), spec_repo, cache) == first
    assert render(load_specs(spec_repo), spec_repo) == first


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda repo: None, id="spec edit"),
        pytest.param(
            lambda repo: (repo / "specs" / "clusters.yaml").write_text(
                (repo / "specs" / "clusters.yaml")
                .read_text(encoding="utf-8")
                .replace("node-type: spot", "node-kind: spot"),
                encoding="utf-8",
            ),
            id="fleet edit",
        ),
    ],
)
def test_an_edit_is_rendered_anew(
    spec_repo: Path, write_spec: WriteSpec, cache: RenderCache, change: object
) -> None:
    write_spec("a.yaml", MINIMAL.replace("gpu_type: cpu", "gpu_type: cpu\n    spot: true"))
    render(load_specs(spec_repo), spec_repo, cache)
    write_spec(
        "a.yaml",
        MINIMAL.replace("gpu_type: cpu", "gpu_type: cpu\n    spot: true\n")
        + "scheduling: {retries: 5}\n",
    )
    change(spec_repo)  # type: ignore[operator]
    assert render(load_specs(spec_repo), spec_repo, cache) == render(
        load_specs(spec_repo), spec_repo
    )


def test_a_changed_model_file_is_rendered_anew(
    spec_repo: Path, write_spec: WriteSpec, cache: RenderCache
) -> None:
    model = spec_repo / "own" / "m.pt2"
    model.parent.mkdir()
    model.write_bytes(b"first")
    write_spec("a.yaml", MINIMAL.replace("models/examples/tiny-mlp.pt2", "own/m.pt2"))
    before = render(load_specs(spec_repo), spec_repo, cache)
    model.write_bytes(b"second")
    after = render(load_specs(spec_repo), spec_repo, cache)
    assert after != before
    assert after == render(load_specs(spec_repo), spec_repo)
