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
    """The model's bytes could not be had or read; the subclasses say why, and which of the
    reasons a retry would only repeat (contract.errors.DETERMINISTIC)."""

    exit_code: ClassVar[ExitCode] = ExitCode.MODEL_LOAD
    error_type: ClassVar[ErrorType] = "model_load"


class ModelMismatch(ModelLoadError):
    """The bytes are not the model config.json pins (sha256, or a download over its size),
    or the program's layers are not those config.json records of it."""

    exit_code = ExitCode.MODEL_MISMATCH
    error_type = "model_mismatch"


class ModelRefused(ModelLoadError):
    """The pinned bytes are not a program the runner loads: refused by the archive check, or
    unreadable to torch.export.load."""

    exit_code = ExitCode.MODEL_REFUSED
    error_type = "model_refused"


class DownloadRefused(ModelLoadError):
    """The server answered a client error (404, 403, ...): asking again gets the same."""

    exit_code = ExitCode.DOWNLOAD_REFUSED
    error_type = "download_refused"


class DownloadFailed(ModelLoadError):
    """The download did not complete within its attempts and time budget."""

    exit_code = ExitCode.DOWNLOAD_FAILED
    error_type = "download_failed"


class DownloadUntrusted(ModelLoadError):
    """The server's certificate is not trusted, or names another host."""

    exit_code = ExitCode.DOWNLOAD_UNTRUSTED
    error_type = "download_untrusted"


class StageMismatch(RunnerError):
    """A pipeline's stage returns what the next one cannot take."""

    exit_code = ExitCode.STAGE_MISMATCH
    error_type = "stage_mismatch"


class InputsMismatch(RunnerError):
    """The recorded inputs are not the pinned file, not a recording the runner reads, or do
    not fit the chain's inputs."""

    exit_code = ExitCode.INPUTS_MISMATCH
    error_type = "inputs_mismatch"


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


class RuntimeFailed(RunnerError):
    """The variant's runtime could not take its program or ran other than asked; the message
    names the runtime and the cause. Never a fallback to eager."""

    exit_code = ExitCode.RUNTIME_FAILED
    error_type = "runtime_failed"
