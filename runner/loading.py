"""Find a model's .pt2, check its bytes against config.json, and load the exported program.

Only plain `torch.export` archives are accepted: a pickle, and any archive field torch's loader
would unpickle or turn into code, is refused (contract.archive) before torch sees the file.
"""

import hashlib
import logging
import os
import traceback
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final, Literal

import torch
from torch.export import ExportedProgram

from contract.archive import UnsafeArchive, check_archive
from contract.config import OCI_MODELS_DIR, ProgramConfig
from contract.weights import LayerRecord, LinearWeights
from runner.download import fetch
from runner.errors import ModelLoadError, ModelMismatch, ModelRefused

log = logging.getLogger(__name__)

_CHUNK: Final = 1 << 20
_FORCE_WEIGHTS_ONLY: Final = "TORCH_FORCE_WEIGHTS_ONLY_LOAD"
MAX_TORCH_MESSAGES: Final = 3
"""torch's own warnings and log records kept for a load error: the first say the cause (the
deserializer logs its exception, then raises a RuntimeError saying only "check the warnings
above"); later ones repeat it."""
MAX_TORCH_MESSAGE_CHARS: Final = 500

LocalSource = Literal["file", "image_path", "oci"]
"""Sources whose file is on the pod's disk already; a download is checked as it streams."""

_MISMATCH_ADVICE: Final[dict[LocalSource, str]] = {
    "file": "the file is corrupt or not the model the spec was synthesized from; re-run "
    "`make synth` and commit dist/",
    "oci": "the artifact holds another file than the spec pins: push the model again with "
    "`make push-model` and paste both lines it prints (`oci:` and `sha256:`)",
    "image_path": "the image holds another file at this path than the spec pins: build the "
    "image with the model the spec names, or pin the file the image holds (the model's "
    "sha256 in the spec)",
}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def model_file(  # noqa: PLR0917 (one folder per source)
    model: ProgramConfig,
    models_dir: Path,
    download_dir: Path,
    ca_dir: Path | None = None,
    oci_dir: Path = Path(OCI_MODELS_DIR),
    image_root: Path = Path("/"),
) -> Path:
    """The local path of a model's .pt2, its bytes checked against config.json's sha256: a
    `url` model downloaded into `download_dir` (trusting `ca_dir`'s bundle where the model
    names one), its digest computed as it streamed; an `oci` model in its image volume under
    `oci_dir`; an `image_path` model below `image_root`, the image's own root in a pod."""
    if model.source == "url":
        return fetch(model, download_dir, ca_dir)
    roots = {"file": models_dir, "oci": oci_dir, "image_path": image_root}
    # An image_path is absolute: a path below the root.
    path = roots[model.source] / model.location.lstrip("/")
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
    verify_sha256(path, model.sha256, model.source)
    return path


def verify_sha256(path: Path, expected: str, source: LocalSource = "file") -> None:
    """Raise ModelMismatch unless the file's sha256 is `expected`, with the advice that fits
    where the file came from."""
    try:
        actual = _sha256(path)
    except OSError as error:
        raise ModelLoadError(f"cannot read {path}: {error.strerror}") from error
    if actual != expected:
        raise ModelMismatch(
            f"{path} has sha256 {actual}, but config.json expects {expected}: "
            f"{_MISMATCH_ADVICE[source]}"
        )


def load_program(path: Path, sha256: str) -> ExportedProgram:
    """Verify and load a committed model's .pt2 file."""
    verify_sha256(path, sha256)
    return load_verified(path)


def load_verified(path: Path, layers: LayerRecord | None = None) -> ExportedProgram:
    """Load a .pt2 whose bytes are the pinned ones: whatever fails here fails again on every
    try (ModelRefused), and says why in torch's own words. Where the spec records the
    program's `layers`, they must be its own (ModelMismatch)."""
    try:
        archive = check_archive(path)
    except UnsafeArchive as error:
        raise ModelRefused(f"{path} is refused before torch reads it: {error}") from error
    if layers is not None:
        check_recorded(path, layers, archive.linear)
    with _torch_messages() as said:
        try:
            with _weights_only_loading():
                return torch.export.load(path)
        except MemoryError:
            raise  # the allocator's, not the file's: out_of_memory (run.py)
        except Exception as error:  # torch raises many types for an archive it cannot read
            failure = error
    detail = "; ".join(said) or f"{type(failure).__name__}: {failure}"
    written = archive.torch_version
    versions = (
        f" (written by torch {written}, read by torch {torch.__version__})"
        if written and written != torch.__version__
        else ""
    )
    raise ModelRefused(f"torch.export.load cannot read {path}{versions}: {detail}") from failure


def check_recorded(path: Path, layers: LayerRecord, found: LinearWeights | None) -> None:
    """Raise ModelMismatch unless `found`, the program's own Linear weights, are what the
    spec records: synth judged the model's quantized variants by that record."""
    if found is not None and layers.weights.agrees_with(found):
        return
    held = LayerRecord.of(found).flow() if found is not None else "no weights the check reads"
    raise ModelMismatch(
        f"{path} holds {held}, but the spec's layers: records {layers.flow()}: synth judged "
        "its quantized variants by another program's layers; set the model's layers: to the "
        "line `benchfleet export` or `make push-model` prints for this file"
    )


class _Kept(logging.Handler):
    """Keeps the words of the first warnings other libraries log."""

    def __init__(self, said: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.said = said

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.partition(".")[0] == "runner" or len(self.said) >= MAX_TORCH_MESSAGES:
            return
        words = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            cause = traceback.format_exception_only(record.exc_info[1])[-1].strip()
            words = f"{words}: {cause}"
        self.said.append(words[:MAX_TORCH_MESSAGE_CHARS])


@contextmanager
def _torch_messages() -> Iterator[list[str]]:
    """Collect what torch warns and logs while the block runs: its export loader logs the
    real cause of a failure and raises an error pointing at "the warnings above", which a pod
    prints on a stderr nobody reads. The log records still go where they went; the warnings
    are logged after the block, once each, as they would have been shown."""
    said: list[str] = []
    kept = _Kept(said)
    # A record reaches the handlers of its logger and its ancestors up to one that does not
    # propagate: torch's configured loggers (torch.export among them) stop there, the rest at
    # the root.
    loggers = [logging.getLogger()] + [
        logger
        for logger in logging.root.manager.loggerDict.values()
        if isinstance(logger, logging.Logger) and not logger.propagate
    ]
    for logger in loggers:
        logger.addHandler(kept)
    try:
        with warnings.catch_warnings(record=True) as caught:
            yield said
    finally:
        for logger in loggers:
            logger.removeHandler(kept)
    for warning in caught:
        words = f"{warning.category.__name__}: {warning.message}"
        log.warning("while loading the model: %s", words)
        if len(said) < MAX_TORCH_MESSAGES:
            said.append(words[:MAX_TORCH_MESSAGE_CHARS])


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
