"""The committed model files a render reads: each read and hashed once, whichever step asks
first (validating a pinned sha256, keying the render cache, filling a model ConfigMap)."""

import hashlib
from dataclasses import dataclass, field
from pathlib import Path


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

    def read(self, file: str) -> ModelBytes:
        """The file at `file` (relative to the root)."""
        if file not in self._read:
            path = self.root / file
            data = path.read_bytes()
            self._read[file] = ModelBytes(path, hashlib.sha256(data).hexdigest(), data)
        return self._read[file]
