"""Find a model's .pt2, check its bytes against config.json, and load the exported program.

Only plain `torch.export` archives are accepted: a pickle, and any archive field torch's loader
would unpickle or turn into code, is refused (contract.archive) before torch sees the file.
"""

import hashlib
import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import torch
from torch.export import ExportedProgram

from contract.archive import UnsafeArchive, check_archive
from contract.config import OCI_MODELS_DIR, ModelConfig
from runner.errors import ModelLoadError

_CHUNK: Final = 1 << 20
_FORCE_WEIGHTS_ONLY: Final = "TORCH_FORCE_WEIGHTS_ONLY_LOAD"
DOWNLOAD_TIMEOUT_S: Final = 60.0


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _download(url: str, folder: Path, sha256: str) -> Path:
    target = folder / f"{sha256}.pt2"
    if target.exists():
        return target
    partial = target.with_suffix(".part")
    try:
        # The spec admits only https URLs, and the sha256 check follows.
        with (
            urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response,
            partial.open("wb") as file,
        ):
            shutil.copyfileobj(response, file, _CHUNK)
    except (urllib.error.URLError, TimeoutError, OSError) as error:
        partial.unlink(missing_ok=True)
        raise ModelLoadError(f"cannot download {url}: {error}") from error
    partial.rename(target)
    return target


def model_file(
    model: ModelConfig, models_dir: Path, download_dir: Path, oci_dir: Path = Path(OCI_MODELS_DIR)
) -> Path:
    """The local path of a model's .pt2, downloading a `url` model into `download_dir`; an
    `oci` model is in its image volume under `oci_dir`."""
    if model.source == "url":
        return _download(model.location, download_dir, model.sha256)
    roots = {"file": models_dir, "oci": oci_dir}
    path = roots[model.source] / model.location if model.source in roots else Path(model.location)
    try:
        found = path.is_file()
    except OSError as error:  # e.g. a name longer than the file system allows
        raise ModelLoadError(f"cannot open {path}: {error.strerror}") from error
    if not found:
        where = {
            "file": "the model ConfigMap's mount",
            "oci": "the model's image volume (the files of its oci artifact)",
        }.get(model.source, "the image")
        raise ModelLoadError(f"{path} does not exist: it should come from {where}")
    return path


def verify_sha256(path: Path, expected: str) -> None:
    """Raise ModelLoadError unless the file's sha256 is `expected`."""
    actual = _sha256(path)
    if actual != expected:
        raise ModelLoadError(
            f"{path} has sha256 {actual}, but config.json expects {expected}: the file is "
            "corrupt or not the model the spec was synthesized from; re-run `make synth`"
        )


def load_program(path: Path, sha256: str) -> ExportedProgram:
    """Verify and load a .pt2 file."""
    verify_sha256(path, sha256)
    try:
        check_archive(path)
    except UnsafeArchive as error:
        raise ModelLoadError(f"{path} is refused before torch reads it: {error}") from error
    try:
        with _weights_only_loading():
            return torch.export.load(path)
    except Exception as error:  # torch raises many types for a damaged archive
        raise ModelLoadError(f"torch.export.load cannot read {path}: {error}") from error


@contextmanager
def _weights_only_loading() -> Iterator[None]:
    """Make every torch.load inside torch.export.load refuse anything but tensors, even where
    torch asks for weights_only=False: a second wall behind check_archive."""
    previous = os.environ.get(_FORCE_WEIGHTS_ONLY)
    os.environ[_FORCE_WEIGHTS_ONLY] = "1"
    try:
        yield
    finally:
        if previous is None:
            del os.environ[_FORCE_WEIGHTS_ONLY]
        else:
            os.environ[_FORCE_WEIGHTS_ONLY] = previous
