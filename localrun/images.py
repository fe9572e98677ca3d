"""A node's store of image volumes: pull an artifact by digest, unpack it once, mount it
read-only. The one implementation behind `localrun` and the local cluster's pod executor,
standing in for what the kubelet asks of containerd or CRI-O for an `image` volume.

As a runtime does: an index is resolved to this machine's platform; the config must be an
image config whose `rootfs.diff_ids` match the layers as unpacked (containerd mounts nothing
else); every blob is checked against its digest as it streams in; the unpacked tree is
shared by every pod that mounts the same digest (`pullPolicy: IfNotPresent`), and is made
read-only. A process cannot be kept from writing to it as a container's read-only mount
would keep it: `make e2e-container` runs the pod in podman with the image mounted there.
"""

import fcntl
import json
import platform
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from localrun.artifact import CONFIG_TYPE, INDEX_TYPE
from localrun.oci_registry import DOCKER_INDEX_TYPE, OciClient, OciError
from localrun.reference import BadReference, ImageReference, parse_reference
from localrun.unpack import UnpackError, make_read_only, unpack_layer

DEFAULT_STORE: Final = Path.home() / ".cache" / "benchfleet" / "images"
"""Shared by every checkout on this machine, like a node's image store."""
MAX_CONFIG_BYTES: Final = 1 << 20
MAX_UNPACKED_BYTES: Final = 64 << 30
"""The most an artifact may unpack to here (the largest open models' weights are ~40 GB)."""
_ARCHITECTURES: Final = {"x86_64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
_INDEX_TYPES: Final = (INDEX_TYPE, DOCKER_INDEX_TYPE)
_CONFIG_TYPES: Final = (CONFIG_TYPE, "application/vnd.docker.container.image.v1+json")
_PULL_POLICIES: Final = ("IfNotPresent", "Always", "Never")


class ImagePullError(RuntimeError):
    """An image volume could not be pulled or unpacked; `reason` as a kubelet reports it."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class ImageMount:
    """An `image` volume as a container mounts it."""

    reference: str
    pull_policy: str
    container_path: str


def node_platform() -> tuple[str, str]:
    """(os, architecture) as OCI names them, for this machine."""
    machine = platform.machine()
    return "linux", _ARCHITECTURES.get(machine, machine)


class ImageStore:
    """Pulled and unpacked image volumes under `root`, one folder per manifest digest."""

    def __init__(self, root: Path = DEFAULT_STORE, credentials: str | None = None) -> None:
        self.root = root
        self.credentials = credentials

    def mount(self, volume: ImageMount) -> Path:
        """The read-only folder holding `volume`'s files, pulled first where its policy says
        so; raises ImagePullError."""
        if volume.pull_policy not in _PULL_POLICIES:
            raise ImagePullError("ErrImagePull", f"pullPolicy {volume.pull_policy!r}")
        try:
            reference = parse_reference(volume.reference)
        except BadReference as error:
            raise ImagePullError("InvalidImageName", str(error)) from error
        known = self._unpacked(reference.digest) if reference.digest else None
        if known is not None and known.is_dir() and volume.pull_policy != "Always":
            return known
        if volume.pull_policy == "Never":
            raise ImagePullError(
                "ErrImageNeverPull", f"{reference} is not on this node and pullPolicy is Never"
            )
        self.root.mkdir(parents=True, exist_ok=True)
        try:
            with self._locked():
                return self._pull(reference)
        except (OciError, UnpackError, OSError, ValueError) as error:
            raise ImagePullError("ErrImagePull", f"{reference}: {error}") from error

    def mount_all(self, volumes: tuple[ImageMount, ...]) -> dict[str, Path]:
        """Each volume's folder by the container path it is mounted at."""
        return {volume.container_path: self.mount(volume) for volume in volumes}

    def _unpacked(self, digest: str) -> Path:
        return self.root / "unpacked" / digest.replace(":", "-")

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """One pull at a time per store, across the processes sharing it."""
        with (self.root / ".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _client(self, reference: ImageReference) -> OciClient:
        return OciClient(reference.registry, reference.is_loopback, self.credentials)

    def _pull(self, reference: ImageReference) -> Path:
        client = self._client(reference)
        repository = reference.repository
        wanted = reference if reference.digest or reference.tag else reference.with_tag("latest")
        served = client.manifest(wanted)
        target = self._unpacked(served.digest)
        if target.is_dir():
            return target
        manifest = _json(served.body, f"{reference}'s manifest")
        if served.media_type in _INDEX_TYPES or manifest.get("mediaType") in _INDEX_TYPES:
            entry = _for_this_node(manifest, reference)
            body = client.manifest(reference.with_digest(entry)).body
            manifest = _json(body, f"{reference}'s manifest for this platform")
        config_descriptor = manifest.get("config", {})
        if config_descriptor.get("mediaType") not in _CONFIG_TYPES:
            raise UnpackError(
                f"config media type {config_descriptor.get('mediaType')!r}: containerd mounts "
                f"only what it can unpack as an image ({CONFIG_TYPE} with rootfs.diff_ids); "
                "`make push-model` packs a model so"
            )
        blobs = self.root / "blobs"
        blobs.mkdir(exist_ok=True)
        config_blob = self._blob(client, repository, config_descriptor, blobs, MAX_CONFIG_BYTES)
        config = _json(config_blob.read_bytes(), "the config")
        diff_ids = config.get("rootfs", {}).get("diff_ids")
        layers = manifest.get("layers", [])
        if not isinstance(diff_ids, list) or len(diff_ids) != len(layers):
            raise UnpackError(f"the config's rootfs.diff_ids do not list the {len(layers)} layers")
        scratch = target.with_name(target.name + ".unpacking")
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        try:
            budget = MAX_UNPACKED_BYTES
            for layer, diff_id in zip(layers, diff_ids, strict=True):
                blob = self._blob(client, repository, layer, blobs, MAX_UNPACKED_BYTES)
                found, written = unpack_layer(blob, str(layer.get("mediaType")), scratch, budget)
                # Unlike containerd's content store, the tree is all a mount needs.
                blob.unlink()
                budget -= written
                if found != diff_id:
                    raise UnpackError(
                        f"layer {layer.get('digest')} unpacks to {found}, not {diff_id}"
                    )
            make_read_only(scratch)
            scratch.rename(target)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        return target

    def _blob(
        self,
        client: OciClient,
        repository: str,
        descriptor: Mapping[str, Any],
        folder: Path,
        limit: int,
    ) -> Path:
        digest, size = descriptor.get("digest"), descriptor.get("size")
        if not isinstance(digest, str) or not isinstance(size, int) or not 0 <= size <= limit:
            raise UnpackError(f"a descriptor with digest {digest!r} and size {size!r}")
        path = folder / digest.replace(":", "-").replace("/", "_")
        if not path.is_file():
            client.fetch_blob(repository, digest, size, path)
        return path


def _json(body: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(body)
    except ValueError as error:
        raise UnpackError(f"{what} is not JSON: {error}") from error
    if not isinstance(value, dict):
        raise UnpackError(f"{what} is not a JSON object")
    return value


def _for_this_node(index: Mapping[str, Any], reference: ImageReference) -> str:
    """The digest of the index's manifest for this machine's platform."""
    os_name, architecture = node_platform()
    for entry in index.get("manifests", []):
        found = entry.get("platform", {})
        if found.get("os") == os_name and found.get("architecture") == architecture:
            return str(entry["digest"])
    raise UnpackError(f"{reference} has no manifest for {os_name}/{architecture}")
