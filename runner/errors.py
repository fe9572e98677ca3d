"""The exceptions the runner raises, each carrying its failure class and exit code."""

from typing import ClassVar

from contract.errors import ErrorType, ExitCode


class RunnerError(Exception):
    """A failure the runner understands; its message is meant for the person reading results."""

    exit_code: ClassVar[ExitCode] = ExitCode.INTERNAL
    error_type: ClassVar[ErrorType] = "internal"


class ConfigError(RunnerError):
    """config.json is missing, invalid, or has no variant at this index."""

    exit_code = ExitCode.BAD_CONFIG
    error_type = "bad_config"


class ModelLoadError(RunnerError):
    """The model is missing, corrupt, not the bytes config.json names, or not a .pt2 program."""

    exit_code = ExitCode.MODEL_LOAD
    error_type = "model_load"


class OutOfMemory(RunnerError):
    """Host or GPU memory ran out while loading or measuring."""

    exit_code = ExitCode.OUT_OF_MEMORY
    error_type = "out_of_memory"


class DeviceMissing(RunnerError):
    """The target's device is not visible, or is another model than the target names."""

    exit_code = ExitCode.DEVICE_MISSING
    error_type = "device_missing"


class UnsupportedVariant(RunnerError):
    """The variant's precision or quantization cannot take effect on this model or device."""

    exit_code = ExitCode.UNSUPPORTED_VARIANT
    error_type = "unsupported_variant"


class Terminated(BaseException):
    """The kubelet sent SIGTERM: the pod is being deleted (preemption, eviction, the Job's
    deadline, a node drain). Handled, because as PID 1 the runner would otherwise ignore it
    and be killed only after the grace period, with no result. A BaseException, like
    KeyboardInterrupt, so that no `except Exception` on the way (loading, say) turns it into
    another failure."""

    exit_code: ClassVar[ExitCode] = ExitCode.TERMINATED
    error_type: ClassVar[ErrorType] = "terminated"
