"""config.json: what synth tells the runner to measure, one file per Job.

This is the contract between synth (which writes it into the Job's ConfigMap) and the runner
(which reads it in the pod, picking its variant by JOB_COMPLETION_INDEX). It imports only
pydantic, so both sides share one definition without the runner depending on synth.
"""

from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from contract.variant import VariantRef

SCHEMA_VERSION: Final = 1
CONFIG_DIR: Final = "/config"
CONFIG_FILE: Final = "config.json"
MODELS_DIR: Final = "/models"


class _Contract(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PhaseConfig(_Contract):
    """Stop once both minimums are met, or at either maximum."""

    min_iterations: int = Field(ge=0)
    min_time_s: float = Field(ge=0)
    max_iterations: int = Field(ge=1)
    max_time_s: float = Field(gt=0)


class ModelConfig(_Contract):
    """Where a model's `.pt2` is and what its bytes must hash to."""

    source: Literal["file", "image_path", "url"]
    location: str
    """For `file`, a file name under $MODEL_PATH (MODELS_DIR in the pod, another folder in a
    local run); for `image_path`, an absolute path in the image; for `url`, an https URL."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")


class InputConfig(_Contract):
    """One input tensor, per sample."""

    shape: tuple[int, ...]
    dtype: str


class VariantConfig(VariantRef):
    """One index of the Job: one model at one precision, quantization and batch size."""

    inputs: tuple[InputConfig, ...]


class RunConfig(_Contract):
    """Everything one Job's pods need to know, whichever index they run."""

    schema_version: Literal[1] = SCHEMA_VERSION
    workflow: str
    target: str
    device_type: str
    gpus: int = Field(ge=0)
    warmup: PhaseConfig
    measure: PhaseConfig
    models: dict[str, ModelConfig]
    variants: tuple[VariantConfig, ...] = Field(min_length=1)
