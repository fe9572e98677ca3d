"""Layers from a registry a spec names are untrusted: only files and folders at plain paths
inside the volume are written, bounded, and the diff_id is the uncompressed tar's."""

import gzip
import hashlib
import io
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest

from localrun.artifact import LAYER_TYPE
from localrun.unpack import UnpackError, make_read_only, unpack_layer

GZIP_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"
Member = Callable[[tarfile.TarFile], None]


def _file(name: str, data: bytes = b"data") -> Member:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))

    return add


def _special(name: str, kind: bytes, target: str = "") -> Member:
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type = kind
        info.linkname = target
        tar.addfile(info)

    return add


def layer(tmp_path: Path, *members: Member, compress: bool = False) -> Path:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for add in members:
            add(tar)
    data = buffer.getvalue()
    path = tmp_path / "layer"
    path.write_bytes(gzip.compress(data, mtime=0) if compress else data)
    return path


@pytest.mark.parametrize("compress", [False, True])
def test_files_and_folders_unpack_with_the_uncompressed_digest(
    tmp_path: Path, compress: bool
) -> None:
    blob = layer(tmp_path, _file("model.pt2", b"weights"), _file("dir/b.txt"), compress=compress)
    uncompressed = gzip.decompress(blob.read_bytes()) if compress else blob.read_bytes()
    root = tmp_path / "root"
    root.mkdir()
    diff_id, written = unpack_layer(blob, GZIP_TYPE if compress else LAYER_TYPE, root, 100)
    assert diff_id == "sha256:" + hashlib.sha256(uncompressed).hexdigest()
    assert written == len(b"weights") + len(b"data")
    assert (root / "model.pt2").read_bytes() == b"weights"
    assert (root / "dir" / "b.txt").read_bytes() == b"data"
    make_read_only(root)
    assert (root / "model.pt2").stat().st_mode & 0o777 == 0o444
    assert (root / "dir").stat().st_mode & 0o777 == 0o555


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ((_file("/etc/cron.d/x"),), "is not a plain path"),
        ((_file("../../outside"),), "is not a plain path"),
        ((_file("a/../../outside"),), "is not a plain path"),
        ((_special("link", tarfile.SYMTYPE, "/etc/passwd"),), "not a regular file or folder"),
        ((_special("hard", tarfile.LNKTYPE, "model.pt2"),), "not a regular file or folder"),
        ((_special("dev", tarfile.CHRTYPE),), "not a regular file or folder"),
        ((_special("fifo", tarfile.FIFOTYPE),), "not a regular file or folder"),
        ((_file("dir/.wh.model.pt2"),), "is a whiteout"),
        ((_file("a", b"x" * 60), _file("b", b"x" * 60)), "more than 100 bytes"),
    ],
)
def test_a_hostile_layer_is_refused_naming_the_entry(
    tmp_path: Path, members: tuple[Member, ...], message: str
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(UnpackError, match=message):
        unpack_layer(layer(tmp_path, *members), LAYER_TYPE, root, 100)
    assert not (tmp_path / "outside").exists()


def test_nothing_is_written_through_a_link_already_there(tmp_path: Path) -> None:
    """A later layer cannot use a link an earlier one (or anything) left in the volume."""
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (root / "dir").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnpackError, match="through a link"):
        unpack_layer(layer(tmp_path, _file("dir/x")), LAYER_TYPE, root, 100)
    assert list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.parametrize(
    ("content", "media_type", "message"),
    [
        (b"not a tar at all" * 64, LAYER_TYPE, "not a readable tar"),
        (b"\x1f\x8b broken gzip", GZIP_TYPE, "not a readable tar"),
        (b"", "application/vnd.cncf.model.weight.v1.raw", "is not one a runtime unpacks"),
        (b"", "application/vnd.oci.image.layer.v1.tar+zstd", "is not one a runtime unpacks"),
    ],
)
def test_what_is_not_an_unpackable_layer_is_refused(
    tmp_path: Path, content: bytes, media_type: str, message: str
) -> None:
    (tmp_path / "blob").write_bytes(content)
    with pytest.raises(UnpackError, match=message):
        unpack_layer(tmp_path / "blob", media_type, tmp_path, 1 << 20)


def test_a_gzip_bomb_stops_at_the_budget(tmp_path: Path) -> None:
    """64 MiB of zeros compress to ~64 KiB; unpacking stops at the budget, not the disk."""
    blob = layer(tmp_path, _file("zeros", bytes(64 << 20)), compress=True)
    assert blob.stat().st_size < 1 << 20
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(UnpackError, match="more than 1,048,576 bytes"):
        unpack_layer(blob, GZIP_TYPE, root, 1 << 20)
    assert not (root / "zeros").exists()
