"""Find a model's .pt2, check its bytes against config.json, and load the exported program.

Only `torch.export` archives are accepted: `torch.load` of a pickled nn.Module runs arbitrary
code, so a pickle is rejected before torch sees it.
"""

import hashlib
import shutil
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Final

import torch
from torch.export import ExportedProgram

from contract.config import ModelConfig
from runner.errors import ModelLoadError

_CHUNK: Final = 1 << 20
_PICKLE_PROTOCOL_OPCODE: Final = b"\x80"
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


def model_file(model: ModelConfig, models_dir: Path, download_dir: Path) -> Path:
    """The local path of a model's .pt2, downloading a `url` model into `download_dir`."""
    if model.source == "url":
        return _download(model.location, download_dir, model.sha256)
    path = models_dir / model.location if model.source == "file" else Path(model.location)
    try:
        found = path.is_file()
    except OSError as error:  # e.g. a name longer than the file system allows
        raise ModelLoadError(f"cannot open {path}: {error.strerror}") from error
    if not found:
        where = "the model ConfigMap's mount" if model.source == "file" else "the image"
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


def _check_archive(path: Path) -> None:
    if not zipfile.is_zipfile(path):
        with path.open("rb") as file:
            is_pickle = file.read(1) == _PICKLE_PROTOCOL_OPCODE
        kind = "a pickle" if is_pickle else "not a zip archive"
        raise ModelLoadError(
            f"{path} is {kind}, not a torch.export program; export the model with "
            "torch.export.export and save it with torch.export.save"
        )
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    if not any(name.endswith("/archive_format") for name in names):
        pickled = any(name.endswith("/data.pkl") for name in names)
        what = "a torch.save checkpoint (pickled)" if pickled else "a zip archive"
        raise ModelLoadError(
            f"{path} is {what}, not a torch.export program; torch.load would run code from it, "
            "so it is refused: save the model with torch.export.save"
        )


def load_program(path: Path, sha256: str) -> ExportedProgram:
    """Verify and load a .pt2 file."""
    verify_sha256(path, sha256)
    _check_archive(path)
    try:
        return torch.export.load(path)
    except Exception as error:  # torch raises many types for a damaged archive
        raise ModelLoadError(f"torch.export.load cannot read {path}: {error}") from error
