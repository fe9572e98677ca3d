"""A `.pt2` packed as an artifact that image volumes mount on containerd and CRI-O: an image
in form (image config with diff_ids, one uncompressed tar layer, an index per platform),
ModelPack's annotations on the layer, the same digests for the same file."""

import json
import tarfile
from pathlib import Path

import pytest

from contract.weights import LayerRecord
from localrun.artifact import (
    CONFIG_TYPE,
    INDEX_TYPE,
    LAYER_TYPE,
    LAYERS,
    MANIFEST_TYPE,
    MODELPACK_FILEPATH,
    MODELPACK_METADATA,
    PLATFORMS,
    Artifact,
    pack,
)
from localrun.push_model import PushModelError, check_model, model_name, repository_name
from tests.conftest import REPO_ROOT

MODEL = REPO_ROOT / "models" / "examples" / "tiny-cnn.pt2"


def packed(tmp_path: Path, inside: str = "model.pt2") -> Artifact:
    folder = tmp_path / f"pack-{len(list(tmp_path.iterdir()))}"
    folder.mkdir()
    return pack(MODEL, folder, inside)


def test_the_same_file_packs_to_the_same_digests(tmp_path: Path) -> None:
    first, second = packed(tmp_path), packed(tmp_path)
    assert first.index == second.index
    assert first.layer.digest == second.layer.digest


def test_the_layer_holds_the_file_alone_read_only_and_root_owned(tmp_path: Path) -> None:
    artifact = packed(tmp_path, "weights/cnn.pt2")
    assert artifact.layer.path is not None
    with tarfile.open(artifact.layer.path) as tar:
        (member,) = tar.getmembers()
        content = tar.extractfile(member)
        assert content is not None
        assert content.read() == MODEL.read_bytes()
    assert (member.name, member.mode, member.uid, member.gid, member.mtime) == (
        "weights/cnn.pt2",
        0o444,
        0,
        0,
        0,
    )


def test_each_platform_has_an_image_manifest_over_the_one_layer(tmp_path: Path) -> None:
    artifact = packed(tmp_path)
    index = json.loads(artifact.index.data or b"")
    assert index["mediaType"] == INDEX_TYPE
    assert "artifactType" not in index
    platforms = [(e["platform"]["os"], e["platform"]["architecture"]) for e in index["manifests"]]
    assert platforms == list(PLATFORMS)
    for entry, manifest_blob, config_blob in zip(
        index["manifests"], artifact.manifests, artifact.configs, strict=True
    ):
        assert entry["digest"] == manifest_blob.digest
        manifest = json.loads(manifest_blob.data or b"")
        # An artifactType would send CRI-O down its artifact path, which reads layers into
        # memory; containerd mounts nothing but an image config with diff_ids.
        assert "artifactType" not in manifest
        assert manifest["mediaType"] == MANIFEST_TYPE
        assert manifest["config"] == config_blob.descriptor()
        config = json.loads(config_blob.data or b"")
        assert config_blob.media_type == CONFIG_TYPE
        assert config["rootfs"] == {"type": "layers", "diff_ids": [artifact.layer.digest]}
        assert config["os"] == entry["platform"]["os"]
        assert config["architecture"] == entry["platform"]["architecture"]
        (layer,) = manifest["layers"]
        assert layer["mediaType"] == LAYER_TYPE
        assert layer["annotations"][MODELPACK_FILEPATH] == "model.pt2"
        metadata = json.loads(layer["annotations"][MODELPACK_METADATA])
        assert metadata["size"] == MODEL.stat().st_size
        assert metadata["mode"] == 0o444


def test_the_manifests_carry_the_programs_layers_where_given(tmp_path: Path) -> None:
    """A registry's reader learns from the artifact what synth judges its quantizations by;
    an artifact packed without them keeps the digests it had before they were recorded."""
    linear = check_model(MODEL).linear
    assert linear is not None
    layers = LayerRecord.of(linear)
    assert layers.flow() == "{linear: {10x64: 1}, parameters: 24346}"
    folder = tmp_path / "with-layers"
    folder.mkdir()
    recorded = pack(MODEL, folder, layers=layers)
    plain = packed(tmp_path)
    assert recorded.layer.digest == plain.layer.digest
    for with_layers, without in zip(recorded.manifests, plain.manifests, strict=True):
        annotations = json.loads(with_layers.data or b"")["annotations"]
        assert LayerRecord.model_validate_json(annotations.pop(LAYERS)) == layers
        assert annotations == json.loads(without.data or b"")["annotations"]
    assert recorded.index != plain.index


@pytest.mark.slow
@pytest.mark.parametrize(
    ("content", "name", "message"),
    [
        (b"PK\x03\x04 not really", "model.pt2", "would be refused by synth and the runner"),
        (b"x", "model.onnx", "is not a .pt2 file"),
    ],
)
def test_a_file_synth_would_refuse_is_not_pushed(
    tmp_path: Path, content: bytes, name: str, message: str
) -> None:
    (tmp_path / name).write_bytes(content)
    with pytest.raises(PushModelError, match=message):
        check_model(tmp_path / name)


@pytest.mark.parametrize(
    ("stem", "repository", "name"),
    [
        ("tiny-cnn", "tiny-cnn", "tiny-cnn"),
        ("ResNet_50.v2", "resnet_50.v2", "resnet-50-v2"),
        ("2024 BERT base!", "2024-bert-base", "m-2024-bert-base"),
        ("x" * 40, "x" * 40, "x" * 30),
    ],
)
def test_names_follow_the_registry_and_the_spec_rules(
    stem: str, repository: str, name: str
) -> None:
    assert repository_name(Path(f"{stem}.pt2")) == repository
    assert model_name(Path(f"{stem}.pt2")) == name


def test_pack_streams_the_file(tmp_path: Path) -> None:
    """The layer is written to disk, never held: its Blob carries a path, not bytes."""
    artifact = packed(tmp_path)
    assert artifact.layer.data is None
    assert artifact.layer.path is not None
    assert artifact.layer.path.stat().st_size == artifact.layer.size
    assert all(blob.data is not None for blob in (*artifact.configs, *artifact.manifests))
