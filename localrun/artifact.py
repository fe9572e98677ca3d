"""A `.pt2` packed as an OCI artifact that a Kubernetes image volume mounts on any runtime.

What the runtimes need (KEP-4639 leaves artifact formats to them):
- containerd (2.1 and later) mounts only what it can unpack as an image: a config of media
  type `application/vnd.oci.image.config.v1+json` whose `rootfs.diff_ids` name the layers,
  layers of the image layer media types, and a platform it unpacks for (the node's);
  ModelPack's own config and layer media types are not mounted there;
- CRI-O (1.31 and later) mounts images the same way, and takes a manifest with an
  `artifactType` down its artifact path, which reads each layer into memory.

So the artifact is an image in form: one uncompressed tar layer (`application/vnd.oci.
image.layer.v1.tar`; ModelPack asks for weights uncompressed: they do not compress and the
node would spend the time) holding the file read-only at its path, an image config per
platform, and an index over linux/amd64 and linux/arm64 that share the one layer, with no
`artifactType`. ModelPack's vocabulary goes where it fits: the layer's
`org.cncf.model.filepath` and `org.cncf.model.file.metadata+json` annotations. The program's
layers, which a spec's `layers:` records (contract/weights.py), are the manifests'
`io.benchfleet.model.layers`, as JSON: a registry's reader learns from the artifact what synth
judges the model's quantizations by (no pod sees an annotation: the runner holds the spec's
record to the program itself).

Everything is deterministic (no timestamps, fixed owner and mode): the same file gives the
same digests, so pushing it again changes nothing.
"""

import gzip
import hashlib
import json
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from contract.config import OCI_DEFAULT_FILE
from contract.weights import LayerRecord

INDEX_TYPE: Final = "application/vnd.oci.image.index.v1+json"
MANIFEST_TYPE: Final = "application/vnd.oci.image.manifest.v1+json"
CONFIG_TYPE: Final = "application/vnd.oci.image.config.v1+json"
LAYER_TYPE: Final = "application/vnd.oci.image.layer.v1.tar"
TITLE: Final = "org.opencontainers.image.title"
DESCRIPTION: Final = "org.opencontainers.image.description"
MODELPACK_FILEPATH: Final = "org.cncf.model.filepath"
MODELPACK_METADATA: Final = "org.cncf.model.file.metadata+json"
LAYERS: Final = "io.benchfleet.model.layers"
PLATFORMS: Final = (("linux", "amd64"), ("linux", "arm64"))
"""A model runs on any node; containerd unpacks an image only for its node's platform."""
FILE_MODE: Final = 0o444
EPOCH: Final = "1970-01-01T00:00:00Z"


@dataclass(frozen=True)
class Blob:
    """Content the registry stores by digest: a file, or bytes held here (configs,
    manifests)."""

    media_type: str
    digest: str
    size: int
    path: Path | None = None
    data: bytes | None = None

    def descriptor(self, **extra: object) -> dict[str, object]:
        return {"mediaType": self.media_type, "digest": self.digest, "size": self.size, **extra}


def json_blob(media_type: str, value: object) -> Blob:
    """`value` as compact, key-sorted JSON: the same value, the same digest."""
    data = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    return Blob(media_type, "sha256:" + hashlib.sha256(data).hexdigest(), len(data), data=data)


class Hashing:
    """A file whose reads or writes are hashed and counted as they pass through."""

    def __init__(self, file: IO[bytes] | gzip.GzipFile) -> None:
        self.file = file
        self.digest = hashlib.sha256()
        self.size = 0

    def read(self, size: int = -1) -> bytes:
        data = self.file.read(size)
        self.digest.update(data)
        self.size += len(data)
        return data

    def write(self, data: bytes) -> int:
        self.digest.update(data)
        self.size += len(data)
        return self.file.write(data)

    def hexdigest(self) -> str:
        return self.digest.hexdigest()


def pack_layer(model: Path, inside: str, into: Path) -> tuple[Blob, str]:
    """A tar of `model` alone, at `inside`, root-owned, read-only, dated 1970, written to
    `into`, and the model's own sha256: one streamed pass, so a large model is never held
    in memory nor read twice."""
    info = tarfile.TarInfo(inside)
    info.size = model.stat().st_size
    info.mode = FILE_MODE
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    with into.open("wb") as raw, model.open("rb") as source:
        layer, content = Hashing(raw), Hashing(source)
        with tarfile.open(fileobj=layer, mode="w|", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]
            tar.addfile(info, content)
    blob = Blob(LAYER_TYPE, "sha256:" + layer.hexdigest(), layer.size, path=into)
    return blob, content.hexdigest()


@dataclass(frozen=True)
class Artifact:
    """Every blob of a packed model, in the order a push must send them, and its index."""

    model_sha256: str
    """The `.pt2`'s own sha256: the spec's `sha256`."""
    inside: str
    """The file's path inside the artifact: the spec's `oci_file` (left out at the
    default)."""
    layer: Blob
    configs: tuple[Blob, ...]
    manifests: tuple[Blob, ...]
    index: Blob
    layers: LayerRecord | None = None
    """The program's layers, as its manifests' LAYERS annotation says them."""

    def blobs(self) -> Iterator[Blob]:
        """What the registry must hold before the manifests that name it."""
        yield self.layer
        yield from self.configs


def pack(
    model: Path, scratch: Path, inside: str = OCI_DEFAULT_FILE, layers: LayerRecord | None = None
) -> Artifact:
    """`model` (a `.pt2`) as an artifact whose layer file is written under `scratch`, its
    manifests annotated with the program's `layers` where given."""
    layer, sha256 = pack_layer(model, inside, scratch / "layer.tar")
    metadata = {
        "name": inside,
        "mode": FILE_MODE,
        "uid": 0,
        "gid": 0,
        "size": model.stat().st_size,
        "mtime": EPOCH,
        "typeflag": ord(tarfile.REGTYPE),
    }
    annotations = {
        TITLE: inside,
        MODELPACK_FILEPATH: inside,
        MODELPACK_METADATA: json.dumps(metadata, sort_keys=True, separators=(",", ":")),
    }
    configs, manifests, entries = [], [], []
    for os_name, architecture in PLATFORMS:
        config = json_blob(
            CONFIG_TYPE,
            {
                "architecture": architecture,
                "os": os_name,
                "rootfs": {"type": "layers", "diff_ids": [layer.digest]},
                "config": {},
            },
        )
        manifest = json_blob(
            MANIFEST_TYPE,
            {
                "schemaVersion": 2,
                "mediaType": MANIFEST_TYPE,
                "config": config.descriptor(),
                "layers": [layer.descriptor(annotations=annotations)],
                "annotations": {
                    TITLE: model.name,
                    DESCRIPTION: f"torch.export program {inside}, sha256 {sha256}",
                    **({LAYERS: layers.model_dump_json()} if layers is not None else {}),
                },
            },
        )
        configs.append(config)
        manifests.append(manifest)
        entries.append(manifest.descriptor(platform={"os": os_name, "architecture": architecture}))
    index = json_blob(
        INDEX_TYPE, {"schemaVersion": 2, "mediaType": INDEX_TYPE, "manifests": entries}
    )
    return Artifact(sha256, inside, layer, tuple(configs), tuple(manifests), index, layers)
