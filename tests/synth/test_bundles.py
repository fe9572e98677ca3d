"""Committed models travel in as few ConfigMaps as the 1 MiB limit allows, named by content."""

from pathlib import Path

from synth.model_sources import ModelFile, bundle_models
from synth.modelfiles import ModelBytes
from synth.object_budget import CONFIGMAP_DATA_BYTES


def model(name: str, size: int, sha256: str = "a" * 64) -> ModelFile:
    return ModelFile(model=name, content=ModelBytes(Path(f"{name}.pt2"), sha256, bytes(size)))


def test_small_models_share_one_configmap() -> None:
    (bundle,) = bundle_models("zoo", [model(f"m{i}", 4096) for i in range(50)])
    assert [f.model for f in bundle.files] == sorted(f"m{i}" for i in range(50))
    assert bundle.name.startswith("zoo-models-")


def test_no_bundle_exceeds_the_configmap_limit() -> None:
    files = [model(f"m{i:02d}", 300 * 1024) for i in range(10)]
    bundles = bundle_models("zoo", files)
    assert len(bundles) == 4  # three of 300 KiB fit in 1 MiB, a fourth does not
    for bundle in bundles:
        assert sum(f.size + len(f.key) for f in bundle.files) <= CONFIGMAP_DATA_BYTES
    assert sorted(f.model for b in bundles for f in b.files) == [f.model for f in files]


def test_a_model_of_a_whole_mebibyte_gets_a_configmap_of_its_own() -> None:
    bundles = bundle_models("zoo", [model("big", CONFIGMAP_DATA_BYTES - 7), model("small", 10)])
    assert [[f.model for f in b.files] for b in bundles] == [["big"], ["small"]]


def test_bundles_are_the_same_in_any_order_and_renamed_only_where_content_changed() -> None:
    files = [model(f"m{i:02d}", 300 * 1024) for i in range(6)]
    before = bundle_models("zoo", files)
    assert bundle_models("zoo", list(reversed(files))) == before
    changed = [*files[:5], model("m05", 300 * 1024, sha256="b" * 64)]
    after = bundle_models("zoo", changed)
    assert after[0].name == before[0].name
    assert after[1].name != before[1].name
