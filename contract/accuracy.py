"""Accuracy beside speed: how far a variant's outputs are from the untouched program's, and
the gate a spec sets on that distance.

The runner measures (`Accuracy`, in every result); it judges nothing. A gate is a judgement
on measured numbers, made where the numbers are read (`judge`): the collector when it stores a
run, the report when it ranks one. So a gate edited in a spec re-runs no measurement and
renames no Job (docs/runner.md, "Accuracy"). Only pydantic is imported: the collector
shares this module without torch.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    StrictFloat,
    TypeAdapter,
    ValidationError,
)

from contract.variant import Precision, Quantization

INPUT_SEED: Final = 0
"""The seed of every variant's inputs: the timed loop and the comparison see the same ones."""
NOT_MEANINGFUL: Final = "not meaningful: "
"""Begins an accuracy's `error` where the comparison was made but says nothing of the
variant: the reference's outputs are constant (a zero-initialised head gives all zeros), so
any variant that returns the same constant agrees with it perfectly, whatever it computes.
In `error`, not a field of its own, so that every reader of an earlier result schema takes it
for what it is to them: not measured, never passing."""


class _Accuracy(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, use_attribute_docstrings=True, allow_inf_nan=False
    )


class DrawnInput(_Accuracy):
    """How one input's values were drawn."""

    dtype: str
    low: int | None = None
    """Integer inputs: the smallest value drawn (None: a floating input, drawn from the
    standard normal distribution)."""
    high: int | None = None
    """Integer inputs: one above the largest value drawn."""
    bounded_by: str | None = None
    """The weight whose rows the values index (an embedding's table), which sets `high`; None
    where the input reaches no table, and is drawn from {0, 1}."""


class OutputAccuracy(_Accuracy):
    """One output of the program (outputs flattened in order) against the reference's."""

    index: int = Field(ge=0)
    shape: list[NonNegativeInt]
    max_abs_error: float | None = Field(default=None, ge=0)
    """The largest |variant - reference| over the elements finite in both; None where none is."""
    max_rel_error: float | None = Field(default=None, ge=0)
    """`max_abs_error` over the largest |reference| (the max-norm relative error): an
    element-wise ratio would blow up wherever the reference is near 0."""
    cosine: float | None = Field(default=None, ge=-1, le=1)
    """Cosine similarity of the two outputs flattened (1: same direction)."""
    top1_agreement: float | None = Field(default=None, ge=0, le=1)
    """Where the output is a 2-D batch of scores: the share of rows whose highest score is at
    the same position as the reference's. None otherwise."""
    nonfinite: int = Field(default=0, ge=0)
    """Elements that are NaN or infinite here but finite in the reference (fp16 overflow)."""


class Accuracy(_Accuracy):
    """A variant's outputs against the reference's, on the same seeded inputs. The summary
    fields are the worst over the outputs: what a gate judges, and what the termination
    message keeps when it has to leave `outputs` out."""

    reference: Literal["fp32-eager"] = "fp32-eager"
    """The untouched program (no quantization, no cast) run in fp32, eager, on the variant's
    device, with IEEE fp32 math on CUDA (no TF32)."""
    seed: int
    """The seed of the inputs, `INPUT_SEED`."""
    max_abs_error: float | None = Field(default=None, ge=0)
    max_rel_error: float | None = Field(default=None, ge=0)
    cosine: float | None = Field(default=None, ge=-1, le=1)
    """The lowest output's."""
    top1_agreement: float | None = Field(default=None, ge=0, le=1)
    """The lowest output's; None where no output is a 2-D batch of scores."""
    nonfinite: int = Field(default=0, ge=0)
    """Over all outputs."""
    error: str | None = None
    """Why nothing could be compared (the reference failed or did not fit), or why the
    comparison means nothing (beginning with NOT_MEANINGFUL; its numbers are kept): then the
    variant's accuracy is not measured, never taken as passing."""
    outputs: list[OutputAccuracy] | None = None
    """Each output's numbers (left out of a compacted termination message)."""
    inputs: list[DrawnInput] | None = None
    """How each input was drawn (left out of a compacted termination message)."""

    @property
    def measured(self) -> bool:
        """Whether a comparison was made that says something of the variant."""
        return self.error is None

    @property
    def not_meaningful(self) -> str | None:
        """Why the comparison made says nothing of the variant, where it does not."""
        if self.error is None or not self.error.startswith(NOT_MEANINGFUL):
            return None
        return self.error.removeprefix(NOT_MEANINGFUL)


class AccuracyGate(_Accuracy):
    """Thresholds a variant's accuracy must meet; a threshold left out is not checked."""

    min_cosine: StrictFloat | None = Field(default=None, ge=-1, le=1)
    """The lowest cosine similarity allowed between an output and the reference's, both
    flattened (1: the same direction)."""
    max_abs_error: StrictFloat | None = Field(default=None, ge=0)
    """The largest |output - reference| allowed in any element: in the outputs' own units,
    so it has no default."""
    max_rel_error: StrictFloat | None = Field(default=None, ge=0)
    """The largest error allowed relative to the largest |reference| of its output."""
    min_top1_agreement: StrictFloat | None = Field(default=None, ge=0, le=1)
    """The lowest share of rows allowed whose highest score is where the reference's is, in
    outputs that are a 2-D batch of scores (others are not checked)."""

    def over(self, base: "AccuracyGate") -> "AccuracyGate":
        """This gate's thresholds, and `base`'s where this one leaves a field out."""
        given = self.model_dump(include=set(AccuracyGate.model_fields), exclude_none=True)
        return AccuracyGate.model_validate(base.model_dump() | given)


_MINIMUMS: Final = ("min_cosine", "min_top1_agreement")


def _looser(first: AccuracyGate, second: AccuracyGate) -> AccuracyGate:
    """Each threshold of the two at its more lenient (a field either leaves out stays out)."""
    values: dict[str, float | None] = {}
    for name in AccuracyGate.model_fields:
        one, other = getattr(first, name), getattr(second, name)
        if one is None or other is None:
            values[name] = None
        else:
            values[name] = min(one, other) if name in _MINIMUMS else max(one, other)
    return AccuracyGate.model_validate(values)


# Set from what the example models and ResNet-50- and BERT-base-shaped exports (random
# weights) measured on CPU with torch 2.13.0 at batches 1-8 (docs/decisions/runner.md has
# the table), with a margin of 5-200 times their worst: a gate is there to fail a variant
# that computes something else, not one at the edge of what its format rounds. max_abs_error
# is in the outputs' own units (logits, embeddings, probabilities) and has no default.
_REDUCED: Final = AccuracyGate(min_cosine=0.9999, max_rel_error=0.01, min_top1_agreement=0.9)
PRECISION_GATES: Final = {
    # The same program at the same precision: an ulp or so apart (1e-7 measured).
    Precision.FP32: AccuracyGate(min_cosine=0.99999, max_rel_error=1e-4, min_top1_agreement=1),
    # TF32 rounds matmul inputs to fp16's 10-bit mantissa and accumulates in fp32: fp16's.
    Precision.TF32: _REDUCED,
    Precision.FP16: _REDUCED,
    # bf16 keeps 8 bits of mantissa: 8 times fp16's relative error (0.0065 measured).
    Precision.BF16: AccuracyGate(min_cosine=0.999, max_rel_error=0.05, min_top1_agreement=0.9),
}
"""The default gate of each precision without quantization."""
# Per-channel int8 weights: up to 0.016 relative error measured; int8 activations too: 0.029
# (1 - cosine up to 1.7e-4).
_INT8: Final = AccuracyGate(min_cosine=0.999, max_rel_error=0.15, min_top1_agreement=0.9)
# int4 weights in groups of 128 (torchao's int4 weight-only): 9-15 % relative error and
# 1 - cosine up to 0.0043 measured on the example transformers and MLP (docs/decisions/runner.md,
# "What each costs"); the margin is narrower than int8's, since five times that error is no
# longer the same model.
_INT4: Final = AccuracyGate(min_cosine=0.98, max_rel_error=0.5, min_top1_agreement=0.8)
# fp8 (e4m3, dynamic per-row scales) keeps 3 bits of mantissa, int8's dynamic range at a
# coarser step: NOT measured yet (no GPU with fp8 has run it); between int8's and int4's until
# a device run sets it.
_FP8: Final = AccuracyGate(min_cosine=0.995, max_rel_error=0.25, min_top1_agreement=0.8)
QUANTIZATION_GATES: Final = {
    Quantization.NONE: PRECISION_GATES[Precision.FP32],
    Quantization.INT8_WEIGHT_ONLY: _INT8,
    Quantization.INT8_DYNAMIC: _INT8,
    Quantization.INT4_WEIGHT_ONLY: _INT4,
    Quantization.FP8_DYNAMIC: _FP8,
}
"""The default gate of each quantization at fp32."""


def default_gate(precision: Precision, quantization: Quantization) -> AccuracyGate:
    """The gate of a variant whose spec sets none: its precision's and its quantization's,
    each threshold at the looser of the two (both tables cover every value: a test says so,
    so a new precision or quantization cannot go unjudged)."""
    return _looser(PRECISION_GATES[precision], QUANTIZATION_GATES[quantization])


def variant_gate(
    precision: Precision, quantization: Quantization, *overrides: AccuracyGate | None
) -> AccuracyGate:
    """A variant's gate: its default (`default_gate`), each threshold an override sets
    replacing it, later overrides over earlier ones (the workflow's, then its model's)."""
    gate = default_gate(precision, quantization)
    for override in overrides:
        if override is not None:
            gate = override.over(gate)
    return gate


@dataclass(frozen=True)
class Verdict:
    """What a gate says of a variant's accuracy."""

    measured: bool
    """False: the result has no comparison that says anything (a runner before it, a
    reference that failed, or one whose outputs are constant): "not measured", never
    passing."""
    failures: tuple[str, ...] = ()
    """Each threshold the accuracy misses, in words with both numbers."""

    @property
    def failed(self) -> bool:
        return bool(self.failures)

    @property
    def passed(self) -> bool:
        return self.measured and not self.failures


def _fmt(value: float) -> str:
    return f"{value:.6g}"


def judge(accuracy: Accuracy | None, gate: AccuracyGate) -> Verdict:
    """`accuracy` against `gate`: every threshold it misses (a number that could not be
    computed, because no element was finite, misses every threshold on it)."""
    if accuracy is None or not accuracy.measured:
        return Verdict(measured=False)
    failures: list[str] = []
    if accuracy.nonfinite:
        failures.append(
            f"{accuracy.nonfinite} output values are NaN or infinite where the reference's are "
            "finite"
        )
    below = (("cosine", "min_cosine"), ("top1_agreement", "min_top1_agreement"))
    above = (("max_abs_error", "max_abs_error"), ("max_rel_error", "max_rel_error"))
    for measured_name, limit_name in below:
        limit, value = getattr(gate, limit_name), getattr(accuracy, measured_name)
        if limit is None or (value is None and measured_name == "top1_agreement"):
            continue  # no output is a batch of scores: nothing to agree on
        if value is None or value < limit:
            shown = "none" if value is None else _fmt(value)
            failures.append(f"{measured_name} {shown} < {limit_name} {_fmt(limit)}")
    for measured_name, limit_name in above:
        limit, value = getattr(gate, limit_name), getattr(accuracy, measured_name)
        if limit is None:
            continue
        if value is None or value > limit:
            shown = "none" if value is None else _fmt(value)
            failures.append(f"{measured_name} {shown} > {limit_name} {_fmt(limit)}")
    return Verdict(measured=True, failures=tuple(failures))


class GateAssignment(_Accuracy):
    """One gate and the variants (their indexes in config.json) it applies to."""

    gate: AccuracyGate
    variants: tuple[int, ...] = Field(min_length=1)


_GATES: Final = TypeAdapter(tuple[GateAssignment, ...])


def gates_text(gates: Iterable[tuple[int, AccuracyGate]]) -> str:
    """What synth writes in a Job's GATES_ANNOTATION (contract.layout): each distinct gate
    once, with the indexes of the variants it applies to, compact and in index order."""
    by_gate: dict[AccuracyGate, list[int]] = {}
    for index, gate in sorted(gates, key=lambda pair: pair[0]):
        by_gate.setdefault(gate, []).append(index)
    assignments = tuple(GateAssignment(gate=g, variants=tuple(i)) for g, i in by_gate.items())
    return _GATES.dump_json(assignments, exclude_none=True).decode()


def parse_gates(text: str) -> dict[int, AccuracyGate]:
    """A Job's GATES_ANNOTATION as each variant index's gate; raises ValueError if it is not
    one (an index named twice included)."""
    try:
        assignments = _GATES.validate_json(text, strict=True)
    except ValidationError as error:
        raise ValueError(f"not a list of gates and variant indexes: {error}") from None
    gates: dict[int, AccuracyGate] = {}
    for assignment in assignments:
        for index in assignment.variants:
            if index in gates:
                raise ValueError(f"variant {index} has two gates")
            gates[index] = assignment.gate
    return gates
