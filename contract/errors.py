"""Failure classes of a run, each with its own exit code so the collector can tell them apart
from the pod status alone (even when the result line is lost). The runner raises them
(runner/errors.py); the collector and synth's podFailurePolicy read them."""

from collections.abc import Iterable
from enum import IntEnum
from typing import Final, Literal

ErrorType = Literal[
    "internal",
    "bad_config",
    "model_load",
    "out_of_memory",
    "device_missing",
    "unsupported_variant",
    "terminated",
]


class ExitCode(IntEnum):
    """The runner's exit status; Kubernetes reports it as the container's exitCode."""

    OK = 0
    INTERNAL = 1
    BAD_CONFIG = 2
    MODEL_LOAD = 3
    OUT_OF_MEMORY = 4
    DEVICE_MISSING = 5
    UNSUPPORTED_VARIANT = 6
    TERMINATED = 143
    """128 + SIGTERM, as a shell reports a process SIGTERM ended."""


DETERMINISTIC: Final = frozenset(
    {ExitCode.BAD_CONFIG, ExitCode.OUT_OF_MEMORY, ExitCode.UNSUPPORTED_VARIANT}
)
"""Exits that a retry on the same pod template would only repeat: synth's podFailurePolicy
fails their index at once (FailIndex). A model load error stays retryable (a download can
fail transiently), as does a missing device (another node may do)."""


def _severity(code: ExitCode) -> int:
    # A pod runs a group of variants, and its one exit code decides the Job's action for all
    # of them: a SIGTERM ends the pod whatever else happened; then a retryable failure,
    # since failing the index at once would deny it the retry (a retry only repeats the
    # deterministic failures, and the store keeps the first result of each variant); then a
    # deterministic one; success only when every variant succeeded.
    if code is ExitCode.TERMINATED:
        return 3
    if code in DETERMINISTIC:
        return 1
    return 0 if code is ExitCode.OK else 2


def most_severe(codes: Iterable[ExitCode]) -> ExitCode:
    """The exit code of a pod whose variants ended with `codes` (OK for none)."""
    return max(codes, key=_severity, default=ExitCode.OK)
