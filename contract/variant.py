"""A variant: one model at one precision, quantization and batch size. Its identity is defined
here once; config.json's variants extend it with their inputs, a result names it, the store
and the reports key by it."""

from enum import StrEnum
from typing import Final, Self

from pydantic import BaseModel, ConfigDict, Field

MAX_VARIANTS: Final = 10_000
"""No workflow expands past this, whatever its own `scheduling.max_variants` says: each
variant is a pod. So no Job, and no record of one, holds more."""


class Precision(StrEnum):
    """The numeric format activations and weights are computed in."""

    FP32 = "fp32"
    TF32 = "tf32"
    FP16 = "fp16"
    BF16 = "bf16"


class Quantization(StrEnum):
    """How the weights (and possibly activations) are quantized before measuring."""

    NONE = "none"
    INT8_DYNAMIC = "int8-dynamic"
    INT8_WEIGHT_ONLY = "int8-weight-only"


class VariantRef(BaseModel):
    """Which variant of config.json was run."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    index: int = Field(ge=0)
    """The Job's completion index that runs it."""
    id: str
    """Content id: `v` + a hash of what determines the variant's number."""
    model: str
    precision: Precision
    quantization: Quantization
    batch_size: int = Field(ge=1)

    @classmethod
    def of(cls, variant: "VariantRef") -> Self:
        """Just the identity of `variant` (a config.json variant carries its inputs too)."""
        return cls.model_validate(variant.model_dump(include=set(VariantRef.model_fields)))

    def describe(self) -> str:
        """The variant as messages name it: `tiny-mlp fp16 int8-dynamic batch 4` (no
        quantization word when there is none)."""
        quantized = "" if self.quantization is Quantization.NONE else f" {self.quantization}"
        return f"{self.model} {self.precision}{quantized} batch {self.batch_size}"


VARIANT_FIELDS = tuple(VariantRef.model_fields)
"""index, id, model, precision, quantization, batch_size: in this order everywhere."""
SETTING_FIELDS = tuple(field for field in VARIANT_FIELDS if field not in ("index", "id"))
"""What a variant measures (model, precision, quantization, batch size), without where it sits
in its Job: how metrics are labelled and reports compare variants across runs."""
