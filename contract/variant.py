"""A variant: one model at one precision, quantization and batch size, run eager or compiled.
Its identity is defined here once; config.json's variants extend it with their inputs, a
result names it, the store and the reports key by it."""

from enum import StrEnum
from types import MappingProxyType
from typing import Final, Self

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

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
    INT4_WEIGHT_ONLY = "int4-weight-only"
    FP8_DYNAMIC = "fp8-dynamic"


class Compile(StrEnum):
    """How the program's module runs: as torch calls it, or compiled in the pod."""

    EAGER = "eager"
    INDUCTOR = "inductor"
    """`torch.compile` with the inductor backend, default mode, of the loaded program's
    module: compiled in the pod from the verified graph, never from anything in the file."""


SPELLINGS: Final = MappingProxyType({"int4": Quantization.INT4_WEIGHT_ONLY})
"""Other names specs may use: the design note's `int4` is int4 weight-only (the int4 that
PyTorch's kernels run; the activations stay in the variant's precision)."""

TORCHAO_VERSION: Final = "0.18.0"
"""The torchao release every quantization runs with; pyproject.toml pins the same (a test
checks that both and the installed one agree)."""

QUANTIZERS: Final = MappingProxyType(
    {
        Quantization.INT8_WEIGHT_ONLY: f"torchao {TORCHAO_VERSION} Int8WeightOnlyConfig, per row",
        Quantization.INT8_DYNAMIC: (
            f"torchao {TORCHAO_VERSION} Int8DynamicActivationInt8WeightConfig, per row, "
            "symmetric activations"
        ),
        Quantization.INT4_WEIGHT_ONLY: (
            f"torchao {TORCHAO_VERSION} int4 weight-only, asymmetric groups of 128 "
            "(64 or 32 where the in-features need)"
        ),
        Quantization.FP8_DYNAMIC: (
            f"torchao {TORCHAO_VERSION} Float8DynamicActivationFloat8WeightConfig, e4m3, per tensor"
        ),
    }
)
"""What each quantization runs, in words. It is part of a quantized variant's id, so a change
of what a value runs (a new torchao, another configuration, our own rewrite replaced) changes
the id and re-measures, instead of reusing numbers another implementation produced."""

INT4_GROUP_SIZES: Final = (128, 64, 32)
"""int4 scales groups of 128 in-features (torchao's default), else of the largest size the
in-features divide into; 32 is the smallest PyTorch's int4 CPU kernel takes."""
_INT4_CPU_OUT_MULTIPLE: Final = 16
"""The int4 CPU packing (`aten._convert_weight_to_int4pack_for_cpu`) needs out-features in
multiples of 16; the CUDA packing pads them."""
_FP8_MULTIPLE: Final = 16
"""`aten._scaled_mm` needs in- and out-features in multiples of 16."""


def int4_group(in_features: int) -> int | None:
    """The int4 group size for a layer of `in_features`; None where none divides it."""
    return next((size for size in INT4_GROUP_SIZES if in_features % size == 0), None)


def takes_layer(
    quantization: Quantization, on_gpu: bool, out_features: int, in_features: int
) -> bool:
    """Whether the runner's kernel for `quantization` takes a Linear layer of this shape; the
    runner quantizes only those, and synth refuses a variant that would reach none."""
    if quantization is Quantization.INT4_WEIGHT_ONLY:
        return int4_group(in_features) is not None and (
            on_gpu or out_features % _INT4_CPU_OUT_MULTIPLE == 0
        )
    if quantization is Quantization.FP8_DYNAMIC:
        return in_features % _FP8_MULTIPLE == 0 and out_features % _FP8_MULTIPLE == 0
    return True


def layers_taken(quantization: Quantization, on_gpu: bool) -> str:
    """`takes_layer` in words, for the messages of a variant it leaves nothing to quantize."""
    if quantization is Quantization.INT4_WEIGHT_ONLY:
        cpu = "" if on_gpu else f" and out-features a multiple of {_INT4_CPU_OUT_MULTIPLE}"
        return f"in-features a multiple of {INT4_GROUP_SIZES[-1]}{cpu}"
    if quantization is Quantization.FP8_DYNAMIC:
        return f"in- and out-features multiples of {_FP8_MULTIPLE}"
    return "every linear layer with constant weights"


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
    compile: Compile = Compile.EAGER

    @model_serializer(mode="wrap")
    def _compile_when_compiled(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # Left out for eager variants, so that config.json (and with it every Job's
        # content-hash name), results and records stay byte for byte what they were before
        # the option existed.
        written: dict[str, object] = handler(self)
        if written.get("compile") == Compile.EAGER:
            del written["compile"]
        return written

    @classmethod
    def of(cls, variant: "VariantRef") -> Self:
        """Just the identity of `variant` (a config.json variant carries its inputs too)."""
        return cls.model_validate(variant.model_dump(include=set(VariantRef.model_fields)))

    def describe(self) -> str:
        """The variant as messages name it: `tiny-mlp fp16 int8-dynamic batch 4 inductor` (no
        quantization word when there is none, no compile word when eager)."""
        quantized = "" if self.quantization is Quantization.NONE else f" {self.quantization}"
        compiled = "" if self.compile is Compile.EAGER else f" {self.compile}"
        return f"{self.model} {self.precision}{quantized} batch {self.batch_size}{compiled}"


VARIANT_FIELDS = tuple(VariantRef.model_fields)
"""index, id, model, precision, quantization, batch_size, compile: in this order everywhere."""
SETTING_FIELDS = tuple(field for field in VARIANT_FIELDS if field not in ("index", "id"))
"""What a variant measures (model, precision, quantization, batch size, compile), without where
it sits in its Job: how metrics are labelled and reports compare variants across runs."""
