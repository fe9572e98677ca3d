"""Unpack an image's tar layers into a folder, as a runtime does for an image volume.

The layers come from a registry a spec names, so they are untrusted: only regular files and
folders are written, each at a plain relative path inside the folder (no `..`, no absolute
path, nothing through a link), and the bytes written are bounded. A runtime confines links
to the mount; this stand-in writes on the host, so it refuses them, and whiteouts (a layer
deleting a file below it), which a model artifact has no use for.
"""

import gzip
import os
import shutil
import tarfile
from pathlib import Path, PurePosixPath
from typing import Final

from localrun.artifact import LAYER_TYPE, Hashing

LAYER_TYPES: Final = {
    LAYER_TYPE: False,
    "application/vnd.oci.image.layer.v1.tar+gzip": True,
    "application/vnd.docker.image.rootfs.diff.tar": False,
    "application/vnd.docker.image.rootfs.diff.tar.gzip": True,
}
"""The layer media types unpacked here, each with whether it is gzip-compressed."""
MAX_ENTRIES: Final = 100_000
"""Files and folders of one layer: a model's are a handful."""
_CHUNK: Final = 1 << 20


class UnpackError(ValueError):
    """A layer this stand-in (or a runtime) would not unpack; says which entry and why."""


def _target(root: Path, name: str) -> Path:
    path = PurePosixPath(name)
    parts = [part for part in path.parts if part != "."]
    if path.is_absolute() or not parts or ".." in parts:
        raise UnpackError(f"entry {name!r} is not a plain path inside the layer")
    if any(part.startswith(".wh.") for part in parts):
        raise UnpackError(f"entry {name!r} is a whiteout (deletes a file of a lower layer)")
    return root.joinpath(*parts)


def _inside(root: Path, path: Path) -> None:
    """Refuse a path whose existing parents leave `root` (a link from an earlier entry)."""
    for parent in [path, *path.parents]:
        if parent == root:
            return
        if parent.is_symlink():
            raise UnpackError(f"{path.relative_to(root)} would be written through a link")


def unpack_layer(blob: Path, media_type: str, root: Path, budget: int) -> tuple[str, int]:
    """Unpack layer `blob` into `root`, later layers overwriting earlier files; returns its
    diff_id (the sha256 of the uncompressed tar) and the bytes written, at most `budget`."""
    if media_type not in LAYER_TYPES:
        raise UnpackError(
            f"layer media type {media_type!r} is not one a runtime unpacks into an image "
            f"volume ({', '.join(sorted(LAYER_TYPES))})"
        )
    written = 0
    with blob.open("rb") as raw:
        stream = gzip.GzipFile(fileobj=raw) if LAYER_TYPES[media_type] else raw
        hashing = Hashing(stream)  # the layer's diff_id
        try:
            with tarfile.open(fileobj=hashing, mode="r|") as tar:  # type: ignore[call-overload]
                for count, member in enumerate(tar, 1):
                    if count > MAX_ENTRIES:
                        raise UnpackError(f"the layer has more than {MAX_ENTRIES:,} entries")
                    target = _target(root, member.name)
                    _inside(root, target)
                    if member.isdir():
                        target.mkdir(parents=True, exist_ok=True)
                        continue
                    if not member.isreg():
                        raise UnpackError(
                            f"entry {member.name!r} is not a regular file or folder (a link or "
                            "device): a model artifact holds files"
                        )
                    written += member.size
                    if written > budget:
                        raise UnpackError(f"the layers unpack to more than {budget:,} bytes")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    if target.is_dir() and not target.is_symlink():
                        shutil.rmtree(target)
                    source = tar.extractfile(member)
                    assert source is not None  # a regular file always has content
                    with target.open("wb") as file:
                        shutil.copyfileobj(source, file, _CHUNK)
            # The tar's end blocks and any padding after them belong to the diff_id too.
            while hashing.read(_CHUNK):
                pass
        except (tarfile.TarError, OSError, EOFError) as error:
            raise UnpackError(f"the layer is not a readable tar: {error}") from error
    return "sha256:" + hashing.hexdigest(), written


def make_read_only(root: Path) -> None:
    """Files 0444 and folders 0555, as the mount is read-only."""
    for folder, folders, files in os.walk(root):
        for name in files:
            os.chmod(os.path.join(folder, name), 0o444)
        for name in folders:
            os.chmod(os.path.join(folder, name), 0o555)
    os.chmod(root, 0o555)
