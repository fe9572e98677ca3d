"""Failure classes of a run, each with its own exit code so the collector can tell them apart
from the pod status alone (even when the result line is lost). The runner raises them
(runner/errors.py); the collector and synth's podFailurePolicy read them."""

from enum import IntEnum
from typing import Literal

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
