"""Content hashes: of canonical JSON, and of files."""

import hashlib
import json
from pathlib import Path


def digest(content: object) -> str:
    """sha256 of the canonical JSON of `content`."""
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of a file's bytes (read anew each time: a model may change between renders)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()
