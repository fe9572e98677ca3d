"""`make push-model` against Debian's docker-registry on loopback, and image volumes pulled
from it the way a node pulls them: by digest, verified, unpacked once, read-only; localrun
runs an `oci` model through the real runner."""

import hashlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from localrun.artifact import (
    CONFIG_TYPE,
    LAYER_TYPE,
    LAYERS,
    MANIFEST_TYPE,
    Blob,
    json_blob,
    pack_layer,
)
from localrun.images import ImageMount, ImagePullError, ImageStore
from localrun.loopback_registry import PROGRAM, loopback_registry
from localrun.oci_registry import OciClient
from localrun.oci_workflow import OCI_MODEL, oci_smoke_checkout
from localrun.pod import pod_plan
from localrun.process import run_process
from localrun.push_model import PushedModel, push_model
from localrun.reference import parse_pinned
from localrun.workflow import read_outcome
from tests.conftest import REPO_ROOT

MODEL = REPO_ROOT / "models" / "examples" / "tiny-cnn.pt2"
MOUNT_AT = "/oci-models/tiny-cnn"

pytestmark = pytest.mark.skipif(
    shutil.which(PROGRAM) is None, reason="needs Debian's docker-registry: apt-get install it"
)


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[str]:
    with loopback_registry(tmp_path / "registry") as address:
        yield address


def pushed_to(address: str, scratch: Path) -> PushedModel:
    scratch.mkdir(exist_ok=True)
    return push_model(MODEL, f"{address}/benchfleet", scratch, credentials="")


def volume(reference: str, policy: str = "IfNotPresent") -> ImageMount:
    return ImageMount(reference, policy, MOUNT_AT)


@pytest.mark.slow
def test_push_model_is_served_by_tag_and_digest_and_prints_the_spec(
    registry: str, tmp_path: Path
) -> None:
    pushed = pushed_to(registry, tmp_path / "push")
    check = OciClient(registry, insecure=True, credentials="")
    assert check.manifest(pushed.reference).digest == pushed.digest
    assert check.manifest(parse_pinned(pushed.pinned)).digest == pushed.digest
    sha256 = hashlib.sha256(MODEL.read_bytes()).hexdigest()
    assert pushed.spec_lines("tiny-cnn") == (
        f"  - name: tiny-cnn\n    oci: {registry}/benchfleet/tiny-cnn@{pushed.digest}\n"
        f"    sha256: {sha256}\n"
        "    layers: {linear: {10x64: 1}, parameters: 24346}\n"
    )
    # What the registry serves for a node's platform carries the program's layers.
    image = check.manifest(pushed.reference.with_digest(pushed.artifact.manifests[0].digest))
    annotations = json.loads(image.body)["annotations"]
    assert annotations[LAYERS] == '{"linear":{"10x64":1},"parameters":24346}'
    again = pushed_to(registry, tmp_path / "again")
    assert (again.digest, again.uploaded) == (pushed.digest, 0)


@pytest.mark.slow
def test_a_volume_is_pulled_once_unpacked_read_only_and_kept(tmp_path: Path) -> None:
    store = ImageStore(tmp_path / "store", credentials="")
    with loopback_registry(tmp_path / "registry") as address:
        pushed = pushed_to(address, tmp_path / "push")
        folder = store.mount(volume(pushed.pinned))
        assert [path.name for path in folder.iterdir()] == ["model.pt2"]
        assert (folder / "model.pt2").read_bytes() == MODEL.read_bytes()
        assert (folder / "model.pt2").stat().st_mode & 0o777 == 0o444
        assert folder.stat().st_mode & 0o777 == 0o555
    # The registry is gone: IfNotPresent needs nothing from it, Always does.
    assert store.mount(volume(pushed.pinned)) == folder
    with pytest.raises(ImagePullError, match=r"Connection refused|Failed to establish") as raised:
        store.mount(volume(pushed.pinned, "Always"))
    assert raised.value.reason == "ErrImagePull"


@pytest.mark.slow
def test_never_pulls_nothing(registry: str, tmp_path: Path) -> None:
    pushed = pushed_to(registry, tmp_path / "push")
    with pytest.raises(ImagePullError) as raised:
        ImageStore(tmp_path / "store").mount(volume(pushed.pinned, "Never"))
    assert raised.value.reason == "ErrImageNeverPull"


def _stored_blob(registry_folder: Path, digest: str) -> Path:
    hex_digest = digest.removeprefix("sha256:")
    (data,) = registry_folder.glob(f"storage/docker/registry/v2/blobs/sha256/*/{hex_digest}/data")
    return data


@pytest.mark.slow
def test_a_layer_the_registry_altered_is_refused(tmp_path: Path) -> None:
    with loopback_registry(tmp_path / "registry") as address:
        pushed = pushed_to(address, tmp_path / "push")
        stored = _stored_blob(tmp_path / "registry", pushed.artifact.layer.digest)
        data = bytearray(stored.read_bytes())
        data[-2000] ^= 0xFF
        stored.write_bytes(bytes(data))
        with pytest.raises(ImagePullError, match=r"the bytes' sha256 is sha256:[0-9a-f]{64}, not"):
            ImageStore(tmp_path / "store", credentials="").mount(volume(pushed.pinned))
    assert not list((tmp_path / "store").glob("unpacked/*"))


def _push_raw(address: str, config: Blob, layer: Blob, scratch: Path) -> str:
    """A manifest of `config` and `layer`, pushed by digest: its pinned reference."""
    client = OciClient(address, insecure=True, credentials="")
    for blob in (config, layer):
        client.push_blob("benchfleet/raw", blob, scratch)
    manifest = json_blob(
        MANIFEST_TYPE,
        {
            "schemaVersion": 2,
            "mediaType": MANIFEST_TYPE,
            "config": config.descriptor(),
            "layers": [layer.descriptor()],
        },
    )
    client.push_manifest("benchfleet/raw", manifest.digest, manifest)
    return f"{address}/benchfleet/raw@{manifest.digest}"


def _raw_layer(tmp_path: Path, media_type: str, data: bytes) -> Blob:
    path = tmp_path / "layer-blob"
    path.write_bytes(data)
    return Blob(media_type, "sha256:" + hashlib.sha256(data).hexdigest(), len(data), path=path)


def test_a_modelpack_typed_artifact_is_refused_as_containerd_would(
    registry: str, tmp_path: Path
) -> None:
    """ModelPack's own config type has no rootfs: containerd cannot mount it."""
    layer = _raw_layer(tmp_path, "application/vnd.cncf.model.weight.v1.raw", MODEL.read_bytes())
    config = json_blob("application/vnd.cncf.model.config.v1+json", {"descriptor": {}})
    reference = _push_raw(registry, config, layer, tmp_path)
    with pytest.raises(ImagePullError, match="containerd mounts only what it can unpack"):
        ImageStore(tmp_path / "store", credentials="").mount(volume(reference))


def test_diff_ids_that_do_not_match_the_layer_are_refused(registry: str, tmp_path: Path) -> None:
    layer_path = tmp_path / "layer.tar"
    shutil.copy(REPO_ROOT / "models" / "examples" / "tiny-mlp.pt2", tmp_path / "x.pt2")
    layer, _ = pack_layer(tmp_path / "x.pt2", "model.pt2", layer_path)
    config = json_blob(
        CONFIG_TYPE,
        {
            "os": "linux",
            "architecture": "amd64",
            "rootfs": {"type": "layers", "diff_ids": ["sha256:" + "0" * 64]},
        },
    )
    assert layer.media_type == LAYER_TYPE
    reference = _push_raw(registry, config, layer, tmp_path)
    with pytest.raises(ImagePullError, match=r"unpacks to sha256:.*, not sha256:0000"):
        ImageStore(tmp_path / "store", credentials="").mount(volume(reference))


@pytest.mark.slow
def test_localrun_runs_an_oci_model_from_the_registry(registry: str, tmp_path: Path) -> None:
    """The Job synth wrote for the artifact, run as `localrun` runs it: the runner reads the
    .pt2 from the image volume, checks its sha256 and measures it."""
    pushed = pushed_to(registry, tmp_path / "push")
    workload = oci_smoke_checkout(tmp_path / "checkout", pushed)
    (job,) = workload.jobs
    config = json.loads(workload.configmaps[job["metadata"]["name"]]["data"]["config.json"])
    index = next(v["index"] for v in config["variants"] if v["model"] == OCI_MODEL)
    plan = pod_plan(job, workload.configmaps, index, tmp_path / "pod")
    assert [(image.reference, image.container_path) for image in plan.images] == [
        (pushed.pinned, MOUNT_AT)
    ]
    store = ImageStore(tmp_path / "store", credentials="")
    outcome = read_outcome(plan, run_process(plan, 300, store))
    assert outcome.problem is None, outcome.run.stderr[-3000:]
    result = outcome.result
    assert result is not None and result.variant is not None
    assert (result.status, result.variant.model) == ("ok", OCI_MODEL)
    assert config["models"][OCI_MODEL] == {
        "source": "oci",
        "location": "tiny-cnn/model.pt2",
        "sha256": pushed.artifact.model_sha256,
    }
