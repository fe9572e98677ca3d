"""The committed model files a render reads: each read, hashed and its archive checked once,
whichever step asks first (validating a pinned sha256 or the inputs, keying the render cache,
filling a model ConfigMap, warning about a thin quantization); and the CA bundles the models'
downloads trust, each read and checked once too."""

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from contract.archive import Program, UnsafeArchive, check_archive
from synth.ca_bundles import CaBundle, check_ca_bundle
from synth.limits import MAX_CA_BUNDLE_BYTES
from synth.object_budget import CONFIGMAP_DATA_BYTES
from synth.repo_files import RepoFileError, read_inside


@dataclass(frozen=True)
class ModelBytes:
    """One model file's bytes and their sha256."""

    path: Path
    sha256: str
    data: bytes = field(repr=False)

    @property
    def size(self) -> int:
        return len(self.data)


class ModelFiles:
    """The model files under one repository root, read on first use and kept for the render."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._read: dict[str, ModelBytes] = {}
        self._programs: dict[str, Program | UnsafeArchive] = {}
        self._bundles: dict[str, CaBundle | RepoFileError] = {}

    def read(self, file: str) -> ModelBytes:
        """The file at `file` (relative to the root). Raises RepoFileError for a path that
        leaves the repository, is not a regular file, or is over what a ConfigMap holds."""
        if file not in self._read:
            data = read_inside(self.root, file, CONFIGMAP_DATA_BYTES)
            self._read[file] = ModelBytes(self.root / file, hashlib.sha256(data).hexdigest(), data)
        return self._read[file]

    def program(self, file: str) -> Program:
        """What the archive at `file` declares (contract.archive.check_archive). Raises
        UnsafeArchive, every time it is asked, for an archive torch could not load safely."""
        if file not in self._programs:
            try:
                self._programs[file] = check_archive(self.read(file).data)
            except UnsafeArchive as error:
                self._programs[file] = error
        checked = self._programs[file]
        if isinstance(checked, UnsafeArchive):
            raise checked
        return checked

    def ca_bundle(self, file: str) -> CaBundle:
        """The CA bundle at `file` (relative to the root). Raises RepoFileError, every time
        it is asked, for a path synth does not read, a file over MAX_CA_BUNDLE_BYTES, or one
        that is not PEM certificates (BadBundle)."""
        if file not in self._bundles:
            try:
                data = read_inside(self.root, file, MAX_CA_BUNDLE_BYTES)
                self._bundles[file] = check_ca_bundle(file, data)
            except RepoFileError as error:
                self._bundles[file] = error
        checked = self._bundles[file]
        if isinstance(checked, RepoFileError):
            raise checked
        return checked
