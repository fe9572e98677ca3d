"""A variant: one model at one precision, quantization and batch size, in one runtime.
Its identity is defined here once; config.json's variants extend it with their inputs, a
result names it, the store and the reports key by it."""

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Annotated, Any, Final, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
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


class Runtime(StrEnum):
    """What runs the program's module: torch as it calls it, or what the pod built from the
    verified graph (never from anything in the file) and measures instead."""

    EAGER = "eager"
    INDUCTOR = "inductor"
    """`torch.compile` with the inductor backend, default mode, of the loaded program's
    module (the `compile: inductor` of specs before the runtime axis)."""
    AOTINDUCTOR = "aotinductor"
    """The exported program compiled ahead of time and packaged
    (`torch._inductor.aoti_compile_and_package`), then loaded from that package: the form a
    deployment ships."""
    ONNXRUNTIME = "onnxruntime"
    """The exported program converted to ONNX by torch's exporter and run by an ONNX Runtime
    session (its CPU provider on a CPU, its CUDA provider on a GPU)."""
    TENSORRT = "tensorrt"
    """The exported program compiled by Torch-TensorRT into TensorRT engines (GPU only)."""


COMPILE_SPELLED: Final = frozenset({Runtime.EAGER, Runtime.INDUCTOR})
"""The runtimes that existed as the `compile` setting. A variant in one is written under
that key (`compile: inductor`), as every record was before the runtime axis, so that its id
and its Job's config.json (and so the Job's name) stay what they were; the later runtimes
are written as `runtime`. Results (schema 10 on) write `runtime` for all of them."""
CONVERTED: Final = frozenset(Runtime) - COMPILE_SPELLED
"""The runtimes that convert the program into another form before running it (a package, an
ONNX graph, TensorRT engines): each can fail in a way of its own (`runtime_failed`)."""
_LEGACY_KEY: Final = "compile"
RUNTIME_KEY_CONTEXT: Final = MappingProxyType({"runtime_key": True})
"""The serialization context that writes every runtime as `runtime` (a result's variant)."""


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
    label: str | None = None
    """Its Prometheus label; None: its name. A renamed setting keeps its label, so that its
    series (and the dashboards and alerts over them) go on rather than start afresh."""


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
    runtime: Annotated[
        Runtime, Setting(reference=Runtime.EAGER, unsaid=Runtime.EAGER, label=_LEGACY_KEY)
    ] = Runtime.EAGER

    @model_validator(mode="before")
    @classmethod
    def _runtime_as_compile(cls, data: Any) -> Any:
        # Records written before the runtime axis (and config.json's inductor variants) say
        # `compile`; one saying both is not ours.
        if isinstance(data, Mapping) and _LEGACY_KEY in data:
            if "runtime" in data:
                raise ValueError("a variant gives both compile and runtime")
            return {("runtime" if k == _LEGACY_KEY else k): v for k, v in data.items()}
        return data

    def written(self, *, runtime_key: bool = False) -> dict[str, object]:
        """The settings as config.json, results and variant ids write them: a later setting
        only away from its default, and a runtime of COMPILE_SPELLED under `compile` unless
        `runtime_key`."""
        return {
            _written_key(name, value, runtime_key): value
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


def _written_key(name: str, value: object, runtime_key: bool) -> str:
    if name == "runtime" and value in COMPILE_SPELLED and not runtime_key:
        return _LEGACY_KEY
    return name


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
SETTING_LABELS: Final = tuple(setting.label or name for name, setting in SETTINGS.items())
"""The settings' Prometheus labels, in SETTING_FIELDS' order."""
RUN_SETTINGS: Final = tuple(name for name in SETTING_FIELDS if name != "model")
"""The settings a model runs at (all but the model): what a spec's matrix sweeps, and what
the report compares one model's variants along."""
LATER_SETTINGS: Final = tuple(
    name for name, field in VariantSettings.model_fields.items() if not field.is_required()
)
"""The settings added after the first (runtime, first as compile): each left out of what is
written at its default, and that default for what was stored before it."""


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
    def _as_written(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, object]:
        dumped: dict[str, object] = handler(self)
        runtime_key = bool(info.context and info.context.get("runtime_key"))
        kept = self.written(runtime_key=runtime_key)
        # In the field's place, so that config.json's bytes stay as they were.
        return {
            _written_key(name, value, runtime_key): value
            for name, value in dumped.items()
            if _written_key(name, value, runtime_key) in kept or name not in LATER_SETTINGS
        }

    @classmethod
    def of(cls, variant: "VariantRef") -> Self:
        """Just the identity of `variant` (a config.json variant carries its inputs too)."""
        return cls.model_validate(variant.model_dump(include=set(VariantRef.model_fields)))


VARIANT_FIELDS: Final = tuple(VariantRef.model_fields)
"""Its place (index, id), then its settings: in this order everywhere."""
