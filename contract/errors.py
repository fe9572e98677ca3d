"""Failure classes of a run, each with its own exit code so the collector can tell them apart
from the pod status alone (even when the result line is lost). The runner raises them
(runner/errors.py); the collector and synth's podFailurePolicy read them."""

from collections.abc import Iterable, Mapping
from enum import IntEnum
from typing import Final, Literal, get_args

ErrorType = Literal[
    "internal",
    "bad_config",
    "model_load",
    "out_of_memory",
    "device_missing",
    "unsupported_variant",
    "model_mismatch",
    "model_refused",
    "download_refused",
    "download_failed",
    "download_untrusted",
    "runtime_failed",
    "stage_mismatch",
    "inputs_mismatch",
    "terminated",
]


class ExitCode(IntEnum):
    """The runner's exit status; Kubernetes reports it as the container's exitCode. Declared
    in ErrorType's order, one per failure class."""

    OK = 0
    INTERNAL = 1
    BAD_CONFIG = 2
    MODEL_LOAD = 3
    """The model's bytes could not be read: a file missing from its mount or the image, or an
    I/O error."""
    OUT_OF_MEMORY = 4
    DEVICE_MISSING = 5
    UNSUPPORTED_VARIANT = 6
    MODEL_MISMATCH = 7
    """The bytes are not the model config.json pins: another sha256, a download longer
    than the spec's size, or a program whose layers are not those the spec records."""
    MODEL_REFUSED = 8
    """The bytes are the pinned ones, but not a program the runner loads: refused by
    contract/archive.py, or unreadable to torch.export.load."""
    DOWNLOAD_REFUSED = 9
    """The server answered the download with a client error (404 and the like)."""
    DOWNLOAD_FAILED = 10
    """The download did not complete within its attempts and time budget (connections
    refused or dropped, server errors, timeouts)."""
    DOWNLOAD_UNTRUSTED = 11
    """The server's TLS certificate is not trusted by the image's CAs and the model's
    ca_bundle, or does not name the server."""
    RUNTIME_FAILED = 12
    """The variant's runtime (contract/variant.py's CONVERTED: aotinductor, onnxruntime,
    tensorrt) could not take the program, or ran other than asked: an export that fails for
    an op, a build without its compiler, a provider that falls back to the CPU, an engine
    build out of workspace. The message names the runtime and the cause."""
    STAGE_MISMATCH = 13
    """A pipeline's stage returns what the next stage cannot take (their count, shapes or
    dtypes): the programs were exported apart."""
    INPUTS_MISMATCH = 14
    """The recorded inputs (`benchmark.recorded_inputs`) are not the file config.json pins,
    no recording the runner reads, or do not fit the chain's inputs (names, shapes,
    dtypes)."""
    TERMINATED = 143
    """128 + SIGTERM, as a shell reports a process SIGTERM ended."""


ERROR_TYPES: Final[Mapping[ExitCode, ErrorType]] = dict(
    zip(list(ExitCode)[1:], get_args(ErrorType), strict=True)
)
"""Each failure's exit code and its error type, for readers that have only the code (a pod
whose result was lost)."""

DETERMINISTIC: Final = frozenset(
    {
        ExitCode.BAD_CONFIG,
        ExitCode.OUT_OF_MEMORY,
        ExitCode.UNSUPPORTED_VARIANT,
        ExitCode.MODEL_MISMATCH,
        ExitCode.MODEL_REFUSED,
        ExitCode.DOWNLOAD_REFUSED,
        ExitCode.DOWNLOAD_UNTRUSTED,
    }
)
"""Exits that a retry on the same pod template would only repeat: synth's podFailurePolicy
fails their index at once (FailIndex). The same bytes are refused again, a server that
answered 404 or whose certificate the bundle does not trust answers so again. What stays
retryable can pass on another try: a model read failing (MODEL_LOAD), a download cut off or
out of time (DOWNLOAD_FAILED), a missing device (another node may do)."""

CONVERTED_DETERMINISTIC: Final = frozenset({ExitCode.RUNTIME_FAILED})
"""Exits a retry would only repeat that only a Job converting its program can have: its Jobs'
podFailurePolicy fails them at once too, and only theirs, so that every other Job keeps the
name (a hash of its content) it had before the class existed."""

PIPELINE_DETERMINISTIC: Final = frozenset({ExitCode.STAGE_MISMATCH})
"""Likewise, exits only a pod running a model between stages can end with."""

RECORDED_DETERMINISTIC: Final = frozenset({ExitCode.INPUTS_MISMATCH})
"""Likewise, exits only a pod replaying recorded inputs can end with: the same recording is
refused again."""

EVER_DETERMINISTIC: Final = (
    DETERMINISTIC | CONVERTED_DETERMINISTIC | PIPELINE_DETERMINISTIC | RECORDED_DETERMINISTIC
)
"""Every exit a retry would only repeat, in whichever Jobs list it."""


def _severity(code: ExitCode) -> int:
    # A pod runs a group of variants, and its one exit code decides the Job's action for all
    # of them: a SIGTERM ends the pod whatever else happened; then a retryable failure,
    # since failing the index at once would deny it the retry (a retry only repeats the
    # deterministic failures, and the store keeps the first result of each variant); then a
    # deterministic one; success only when every variant succeeded.
    if code is ExitCode.TERMINATED:
        return 3
    if code in EVER_DETERMINISTIC:
        return 1
    return 0 if code is ExitCode.OK else 2


def most_severe(codes: Iterable[ExitCode]) -> ExitCode:
    """The exit code of a pod whose variants ended with `codes` (OK for none)."""
    return max(codes, key=_severity, default=ExitCode.OK)
