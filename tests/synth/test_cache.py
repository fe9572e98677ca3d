"""Re-synth reuses a workflow's file only when nothing it depends on changed."""

import subprocess
import sys
from pathlib import Path

import pytest

from synth.cache import RenderCache, rendering_sources
from synth.load import load_specs
from synth.render import render
from tests.conftest import REPO_ROOT, TEST_DATA
from tests.synth.conftest import WriteSpec

MINIMAL = (TEST_DATA / "specs" / "valid-minimal.yaml").read_text(encoding="utf-8")


@pytest.fixture
def cache(tmp_path: Path) -> RenderCache:
    return RenderCache(tmp_path / "cache")


class Unbuildable:
    def __init__(self) -> None:
        raise AssertionError("a file was built although the cache held it")


def test_cached_render_equals_a_fresh_one_and_builds_nothing(
    spec_repo: Path, write_spec: WriteSpec, cache: RenderCache, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_spec("a.yaml", MINIMAL)
    write_spec("b.yaml", MINIMAL.replace("id: valid-minimal", "id: other"))
    first = render(load_specs(spec_repo), cache)
    assert render(load_specs(spec_repo)) == first
    monkeypatch.setattr("synth.build.Build", Unbuildable)
    assert render(load_specs(spec_repo), cache) == first


def test_a_workflow_edit_leaves_the_other_workflows_and_the_infrastructure_cached(
    spec_repo: Path, write_spec: WriteSpec, cache: RenderCache
) -> None:
    write_spec("a.yaml", MINIMAL)
    write_spec("b.yaml", MINIMAL.replace("id: valid-minimal", "id: other"))
    render(load_specs(spec_repo), cache)
    entries = set(cache.folder.iterdir())
    write_spec("b.yaml", MINIMAL.replace("id: valid-minimal", "id: other").replace("tests", "me"))
    render(load_specs(spec_repo), cache)
    assert len(set(cache.folder.iterdir()) - entries) == 1


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
    render(load_specs(spec_repo), cache)
    write_spec(
        "a.yaml",
        MINIMAL.replace("gpu_type: cpu", "gpu_type: cpu\n    spot: true\n")
        + "scheduling: {retries: 5}\n",
    )
    change(spec_repo)  # type: ignore[operator]
    assert render(load_specs(spec_repo), cache) == render(load_specs(spec_repo))


def test_a_changed_model_file_is_rendered_anew(
    spec_repo: Path, write_spec: WriteSpec, cache: RenderCache
) -> None:
    model = spec_repo / "own" / "m.pt2"
    model.parent.mkdir()
    # Two different programs that take the same inputs, so the spec stays valid.
    zoo = REPO_ROOT / "models" / "zoo"
    model.write_bytes((zoo / "cnn-c10-b1.pt2").read_bytes())
    spec = MINIMAL.replace("models/examples/tiny-mlp.pt2", "own/m.pt2")
    write_spec("a.yaml", spec.replace("shape: [64]", "shape: [3, 32, 32]"))
    before = render(load_specs(spec_repo), cache)
    model.write_bytes((zoo / "cnn-c12-b1.pt2").read_bytes())
    after = render(load_specs(spec_repo), cache)
    assert after != before
    assert after == render(load_specs(spec_repo))


def test_the_cache_key_covers_every_module_synth_renders_from() -> None:
    # synth renders from all of contract/ (a default accuracy gate ends up in every Job's
    # annotation): hashing config.py alone left renders stale after such an edit.
    hashed = {path.relative_to(REPO_ROOT).as_posix() for path in rendering_sources()}
    every = {
        path.relative_to(REPO_ROOT).as_posix()
        for folder in ("synth", "contract")
        for path in (REPO_ROOT / folder).rglob("*.py")
    }
    assert every <= hashed
    assert "contract/accuracy.py" in hashed and "runner/errors.py" in hashed


@pytest.mark.slow
def test_the_command_line_starts_without_cdk8s() -> None:
    """Importing cdk8s starts Node.js; a synth that the cache fully serves must not pay it."""
    probe = "import sys, benchfleet.cli; print(sorted(m for m in sys.modules if 'cdk8s' in m))"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert loaded.strip() == "[]"
