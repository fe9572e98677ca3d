"""Accuracy gates: a default for every precision and quantization, a spec's thresholds over
it, the verdict on stored numbers, and the Job annotation that carries them."""

from itertools import product

import pytest

from contract.accuracy import (
    Accuracy,
    AccuracyGate,
    default_gate,
    gates_text,
    judge,
    parse_gates,
    variant_gate,
)
from contract.records import StoredVariant
from contract.result import LatencyStats, OkResult
from contract.variant import Precision, Quantization, VariantRef

FP32 = default_gate(Precision.FP32, Quantization.NONE)


@pytest.mark.parametrize(
    ("precision", "quantization"), list(product(Precision, Quantization)), ids=str
)
def test_every_precision_and_quantization_has_a_default_no_stricter_than_fp32s(
    precision: Precision, quantization: Quantization
) -> None:
    gate = default_gate(precision, quantization)
    assert gate.min_cosine is not None and gate.max_rel_error is not None
    assert gate.min_top1_agreement is not None
    assert gate.min_cosine <= (FP32.min_cosine or 1)
    assert gate.max_rel_error >= (FP32.max_rel_error or 0)
    assert gate.max_abs_error is None, "in the outputs' units: no default can know them"


def test_a_lower_precision_with_quantization_takes_the_looser_of_each_threshold() -> None:
    gate = default_gate(Precision.FP16, Quantization.INT8_WEIGHT_ONLY)
    fp16 = default_gate(Precision.FP16, Quantization.NONE)
    int8 = default_gate(Precision.FP32, Quantization.INT8_WEIGHT_ONLY)
    assert gate.min_cosine == min(fp16.min_cosine or 1, int8.min_cosine or 1)
    assert gate.max_rel_error == max(fp16.max_rel_error or 0, int8.max_rel_error or 0)


def test_a_specs_thresholds_replace_the_defaults_one_by_one_the_models_last() -> None:
    workflow = AccuracyGate(min_cosine=0.9, max_abs_error=0.5)
    model = AccuracyGate(max_abs_error=0.1)
    gate = variant_gate(Precision.BF16, Quantization.NONE, workflow, None, model)
    bf16 = default_gate(Precision.BF16, Quantization.NONE)
    assert gate == AccuracyGate(
        min_cosine=0.9,
        max_abs_error=0.1,
        max_rel_error=bf16.max_rel_error,
        min_top1_agreement=bf16.min_top1_agreement,
    )


MEASURED = Accuracy(seed=0, max_abs_error=0.02, max_rel_error=0.01, cosine=0.999,
                    top1_agreement=0.75)  # fmt: skip


@pytest.mark.parametrize(
    ("accuracy", "gate", "failures"),
    [
        (MEASURED, AccuracyGate(), []),
        (MEASURED, AccuracyGate(min_cosine=0.999, max_rel_error=0.01, max_abs_error=0.02), []),
        (MEASURED, AccuracyGate(min_cosine=0.9999), ["cosine 0.999 < min_cosine 0.9999"]),
        (MEASURED, AccuracyGate(max_abs_error=0.01), ["max_abs_error 0.02 > max_abs_error 0.01"]),
        (MEASURED, AccuracyGate(max_rel_error=0.001), ["max_rel_error 0.01 > max_rel_error 0.001"]),
        (
            MEASURED,
            AccuracyGate(min_top1_agreement=0.8, min_cosine=0.9999),
            ["cosine 0.999 < min_cosine 0.9999", "top1_agreement 0.75 < min_top1_agreement 0.8"],
        ),
        # No output is a batch of scores: top-1 has nothing to judge.
        (Accuracy(seed=0, cosine=1), AccuracyGate(min_top1_agreement=1), []),
        # A number that could not be computed misses its threshold.
        (Accuracy(seed=0), AccuracyGate(min_cosine=0.5), ["cosine none < min_cosine 0.5"]),
        (
            Accuracy(seed=0, cosine=1, nonfinite=3),
            AccuracyGate(),
            ["3 output values are NaN or infinite where the reference's are finite"],
        ),
    ],
)
def test_a_gate_names_every_threshold_a_variant_misses(
    accuracy: Accuracy, gate: AccuracyGate, failures: list[str]
) -> None:
    verdict = judge(accuracy, gate)
    assert verdict.measured
    assert list(verdict.failures) == failures
    assert verdict.failed == bool(failures) and verdict.passed != bool(failures)


@pytest.mark.parametrize(
    "accuracy", [None, Accuracy(seed=0, error="the fp32 reference failed: ...")], ids=str
)
def test_no_comparison_is_not_measured_never_passing(accuracy: Accuracy | None) -> None:
    verdict = judge(accuracy, FP32)
    assert not verdict.measured and not verdict.passed and not verdict.failed


def test_the_annotation_lists_each_gate_once_and_reads_back_by_index() -> None:
    loose, strict = AccuracyGate(min_cosine=0.9), AccuracyGate(min_cosine=0.999)
    text = gates_text([(2, loose), (0, strict), (1, loose), (3, strict)])
    assert text == (
        '[{"gate":{"min_cosine":0.999},"variants":[0,3]},'
        '{"gate":{"min_cosine":0.9},"variants":[1,2]}]'
    )
    assert parse_gates(text) == {0: strict, 1: loose, 2: loose, 3: strict}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{", "not a list of gates"),
        ('[{"gate":{"min_cosine":"0.9"},"variants":[0]}]', "not a list of gates"),
        ('[{"gate":{"min_cosine":2},"variants":[0]}]', "not a list of gates"),
        ('[{"gate":{},"variants":[0]},{"gate":{},"variants":[0]}]', "variant 0 has two gates"),
    ],
)
def test_an_annotation_that_is_not_synths_is_refused(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_gates(text)


def _stored(accuracy: Accuracy | None, precision: str = "bf16") -> StoredVariant:
    ref = VariantRef(index=0, id="v0", model="m", precision=precision, quantization="none",
                     batch_size=1)  # fmt: skip
    values = dict.fromkeys(("mean_ms", "min_ms", "p25_ms", "p50_ms", "p75_ms", "p90_ms",
                            "p95_ms", "p99_ms", "max_ms"), 1.0)  # fmt: skip
    latency = LatencyStats(count=1, std_ms=0, cv=0, iqr_ms=0, **values)
    result = OkResult(variant=ref, latency=latency, accuracy=accuracy)
    return StoredVariant(index=0, state="succeeded", variant=ref, explanation="ok", result=result)


@pytest.mark.parametrize(
    ("accuracy", "gate", "failed"),
    [
        (Accuracy(seed=0, cosine=0.9995, max_rel_error=0.01), None, False),
        (Accuracy(seed=0, cosine=0.99, max_rel_error=0.01), None, True),
        (Accuracy(seed=0, cosine=0.99), AccuracyGate(min_cosine=0.9), False),
        (None, None, None),
        (Accuracy(seed=0, error="the fp32 reference failed: x"), None, None),
    ],
    ids=str,
)
def test_a_stored_run_is_judged_by_its_jobs_gate_or_its_default(
    accuracy: Accuracy | None, gate: AccuracyGate | None, failed: bool | None
) -> None:
    judged = _stored(accuracy).judged(gate)
    assert judged.accuracy_gate == (gate or default_gate(Precision.BF16, Quantization.NONE))
    assert judged.accuracy_failed is failed
