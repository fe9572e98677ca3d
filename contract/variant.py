"""A variant: one model at one precision, quantization and batch size, run eager or compiled.
Its identity is defined here once; config.json's variants extend it with their inputs, a
result names it, the store and the reports key by it."""

from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Annotated, Final, Self

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer
from pydantic.fields import FieldInfo

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


@dataclass(frozen=True)
class Setting:
    """How readers see one of a variant's settings."""

    heading: str | None = None
    """Its column heading and the word before its value in a description (`batch 4`); None:
    its name heads the column and its value stands alone."""
    reference: str | None = None
    """The value the report compares its others with; None: a group's first (smallest)."""
    unsaid: str | None = None
    """The value a description leaves out (no quantization, eager)."""


class VariantSettings(BaseModel):
    """What tells one variant from another: the one list of them. The sweep's dimensions,
    config.json's and a result's variant, the store's columns, the metrics' labels and the
    report's key are made from these fields, in this order.

    A setting added later has a default, what every variant measured before it existed: it
    is written only away from it, so that earlier config.json (and the Jobs' content-hash
    names), variant ids, results and records stay what they were, and the store fills it in
    for rows stored before it."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    model: str
    precision: Annotated[Precision, Setting(reference=Precision.FP32)]
    quantization: Annotated[
        Quantization, Setting(reference=Quantization.NONE, unsaid=Quantization.NONE)
    ]
    batch_size: Annotated[int, Field(ge=1), Setting(heading="batch")]
    compile: Annotated[Compile, Setting(reference=Compile.EAGER, unsaid=Compile.EAGER)] = (
        Compile.EAGER
    )

    def written(self) -> dict[str, object]:
        """The settings as config.json, results and variant ids write them: a later setting
        only away from its default."""
        return {
            name: value
            for name in SETTING_FIELDS
            if (value := getattr(self, name)) != VariantSettings.model_fields[name].default
            or name not in LATER_SETTINGS
        }

    def describe(self) -> str:
        """The variant as messages name it: `tiny-mlp fp16 int8-dynamic batch 4 inductor` (no
        word for a setting at its unsaid value)."""
        return " ".join(
            worded(name, value)
            for name, setting in SETTINGS.items()
            if (value := getattr(self, name)) != setting.unsaid
        )


def worded(name: str, value: object) -> str:
    """Setting `name` at `value` in words: after its heading where it has one (`batch 4`)."""
    setting = SETTINGS.get(name)
    return f"{setting.heading} {value}" if setting and setting.heading else str(value)


def _setting(field: FieldInfo) -> Setting:
    return next((m for m in field.metadata if isinstance(m, Setting)), Setting())


SETTINGS: Final = MappingProxyType(
    {name: _setting(field) for name, field in VariantSettings.model_fields.items()}
)
"""Each setting, in order, with how readers see it."""
SETTING_FIELDS: Final = tuple(SETTINGS)
"""What a variant measures, without where it sits in its Job: how metrics are labelled,
the sweep expands and the store and reports key variants."""
RUN_SETTINGS: Final = tuple(name for name in SETTING_FIELDS if name != "model")
"""The settings a model runs at (all but the model): what a spec's matrix sweeps, and what
the report compares one model's variants along."""
LATER_SETTINGS: Final = tuple(
    name for name, field in VariantSettings.model_fields.items() if not field.is_required()
)
"""The settings added after the first (compile): each left out of what is written at its
default, and that default for what was stored before it."""


def heading(name: str) -> str:
    """The column heading of setting (or other key field) `name`."""
    setting = SETTINGS.get(name)
    return (setting.heading if setting else None) or name


class _Position(BaseModel):
    """Where a variant sits in its Job."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    index: int = Field(ge=0)
    """The Job's completion index that runs it."""
    id: str
    """Content id: `v` + a hash of what determines the variant's number."""


class VariantRef(VariantSettings, _Position):
    """Which variant of config.json was run."""

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        dumped: dict[str, object] = handler(self)
        kept = self.written()
        return {
            name: value
            for name, value in dumped.items()
            if name in kept or name not in LATER_SETTINGS
        }

    @classmethod
    def of(cls, variant: "VariantRef") -> Self:
        """Just the identity of `variant` (a config.json variant carries its inputs too)."""
        return cls.model_validate(variant.model_dump(include=set(VariantRef.model_fields)))


VARIANT_FIELDS: Final = tuple(VariantRef.model_fields)
"""Its place (index, id), then its settings: in this order everywhere."""
