"""A report for other tools as CSV: one row per variant of the run, measured then failed,
under a header (`CSV_COLUMNS`) that only ever grows at its end."""

import csv
import io
from collections.abc import Iterable
from datetime import datetime
from typing import Final

from contract.fingerprint import Fingerprint
from contract.instant import instant_text
from contract.variant import SETTING_FIELDS
from report.control import control_answers
from report.cost import VariantCost, costs
from report.cost_table import cost_csv
from report.model import (
    KEY_FIELDS,
    BestConfiguration,
    Change,
    FailedVariant,
    Report,
    VariantKey,
    VariantRow,
)

CSV_COLUMNS: Final = (
    "status",
    *KEY_FIELDS,
    "variant_id",
    "job",
    "finished_at",
    "device_name",
    "iterations",
    "p50_ms",
    "ci_low_ms",
    "ci_high_ms",
    "p50_per_sample_ms",
    "min_ms",
    "p25_ms",
    "p75_ms",
    "p90_ms",
    "p99_ms",
    "max_ms",
    "p99_reliable",
    "cv",
    "noisy",
    "throughput_samples_per_s",
    "baseline_p50_ms",
    "change_ratio",
    "verdict",
    "explanation",
    "samples_per_s_at_p50",
    "ci_method",
    "flags",
    "quantized",
    "runs",
    "between_run_spread",
    "flag_reasons",
    "usable",
    "accuracy",
    "cosine",
    "max_rel_error",
    "max_abs_error",
    "top1_agreement",
    "accuracy_failures",
    "best",
    "ratio_to_best",
    "ratio_to_best_low",
    "ratio_to_best_high",
    "allocated_s",
    "device_seconds",
    "device_unit",
    "held",
    "currency",
    "cost",
    "device_seconds_per_1000_inferences",
    "cost_per_1000_inferences",
    "cost_estimate",
    "not_priced",
    "joules_per_inference",
    "average_w",
    "throttle_reasons",
    "energy_unavailable",
    "price_table",
    *(f"fingerprint.{name}" for name in Fingerprint.model_fields),
    "p99_9_ms",
    "p99_9_reliable",
    "rate_hz",
    "deadline_ms",
    "miss_rate",
    "miss_rate_low",
    "miss_rate_high",
    "jitter_ms",
    "longest_miss_run",
    "rate_held",
)
"""`to_csv`'s header; columns are only ever added at the end."""


def _csv_fingerprint(row: VariantRow) -> dict[str, object]:
    """The stack its result names, a column a field (`fingerprint.driver_version`); the
    libraries as `torch 2.7.0; torchao 0.11.0`. Empty for a result before the fingerprint."""
    stack = row.fingerprint
    if stack is None:
        return {}
    return {
        f"fingerprint.{name}": (
            "; ".join(f"{library} {version}" for library, version in sorted(value.items()))
            if isinstance(value, dict)
            else value
        )
        for name, value in stack
    }


def _csv_cost(cost: VariantCost | None, currency: str | None) -> dict[str, object]:
    """The cost columns of a row (report.cost_table); empty where nothing is recorded."""
    if cost is None:
        return {}
    return {"currency": currency, **cost_csv(cost)}


def _csv_energy(row: VariantRow) -> dict[str, object]:
    energy = row.energy
    return {
        "joules_per_inference": energy.joules_per_inference if energy else None,
        "average_w": energy.average_w if energy else None,
        "throttle_reasons": "; ".join(row.throttle_reasons),
        "energy_unavailable": energy.unavailable if energy else "a runner before energy",
    }


def _csv_accuracy(row: VariantRow) -> dict[str, object]:
    """The accuracy columns: the gate's verdict ("not measured" is never passing), the worst
    of each number over the outputs, and what the gate found missing."""
    check = row.accuracy
    # A comparison that is not meaningful keeps its numbers (cosine 1 against a constant
    # reference); a column beside "not measured" must not show them as if they counted.
    numbers = check.accuracy if check.accuracy and check.accuracy.measured else None
    return {
        "accuracy": check.state,
        **{
            name: getattr(numbers, name) if numbers else None
            for name in ("cosine", "max_rel_error", "max_abs_error", "top1_agreement")
        },
        "accuracy_failures": "; ".join(check.failures),
    }


def _csv_best(
    best_configurations: Iterable[BestConfiguration],
) -> dict[VariantKey, dict[str, object]]:
    """The best-configuration columns of each row in a sweep: whether it is the best (the
    fastest within its accuracy gate, or of those not known to fail it; with every one
    outside its gate, none is), and its p50 per sample over the best's with the 95% CI."""
    columns: dict[VariantKey, dict[str, object]] = {}
    for best in best_configurations:
        first = best.comparison.entries[0]
        has_best = first.row.accuracy.state != "accuracy_failed"
        for entry in best.comparison.entries:
            columns[entry.row.key] = {
                "best": has_best and entry is first,
                "ratio_to_best": entry.ratio.value,
                "ratio_to_best_low": entry.ratio.low if entry.ratio.bounded else None,
                "ratio_to_best_high": entry.ratio.high if entry.ratio.bounded else None,
            }
    return columns


def _csv_control(row: VariantRow, held: str | None) -> dict[str, object]:
    """p99.9 and a fixed-rate run's columns (report.control); empty for the closed loop."""
    scenario = row.scenario
    return {
        "p99_9_ms": row.latency.p99_9_ms,
        "p99_9_reliable": row.is_p99_9_reliable,
        **(
            {
                "rate_hz": scenario.rate_hz,
                "deadline_ms": scenario.deadline_ms,
                "miss_rate": scenario.miss_rate,
                "miss_rate_low": scenario.miss_rate_low,
                "miss_rate_high": scenario.miss_rate_high,
                "jitter_ms": scenario.jitter_ms,
                "longest_miss_run": scenario.longest_miss_run,
                "rate_held": held,
            }
            if scenario
            else {}
        ),
    }


def _time(moment: datetime | None) -> str | None:
    """A time as its record spelt it."""
    return instant_text(moment) if moment else None


def _csv_measured(
    row: VariantRow, change: Change | None, *, reused: bool = False
) -> dict[str, object]:
    latency = row.latency
    return {
        "status": "measured",
        **row.key.fields(),
        "variant_id": row.variant_id,
        "job": row.job,
        "finished_at": _time(row.finished_at),
        "device_name": row.device_name,
        "iterations": latency.count,
        "p50_ms": latency.p50_ms,
        "ci_low_ms": row.ci_low_ms,
        "ci_high_ms": row.ci_high_ms,
        "p50_per_sample_ms": row.p50_per_sample_ms,
        "min_ms": latency.min_ms,
        "p25_ms": latency.p25_ms,
        "p75_ms": latency.p75_ms,
        "p90_ms": latency.p90_ms,
        "p99_ms": latency.p99_ms,
        "max_ms": latency.max_ms,
        "p99_reliable": row.is_p99_reliable,
        "cv": latency.cv,
        "noisy": row.is_noisy,
        "throughput_samples_per_s": row.mean_samples_per_s,
        "samples_per_s_at_p50": row.samples_per_s,
        "ci_method": row.estimate.method,
        "flags": "; ".join(row.doubts),
        "quantized": row.quantized,
        # Empty where the variant ran once.
        "runs": len(row.repeats.p50s_ms) if row.repeats else None,
        "between_run_spread": row.repeats.spread if row.repeats else None,
        "flag_reasons": "; ".join(row.flag_reasons),
        # What the run's verdict counts: the other formats say it in words before any table.
        "usable": not row.doubts,
        **_csv_accuracy(row),
        **_csv_fingerprint(row),
        **(
            {
                "baseline_p50_ms": change.baseline.latency.p50_ms,
                "change_ratio": change.ratio.value,
                "verdict": change.verdict,
            }
            if change
            else {}
        ),
        # The baseline's own run: its p50, and no ratio, which would compare it with itself.
        **({"baseline_p50_ms": latency.p50_ms, "verdict": "reused"} if reused else {}),
    }


def _csv_failed(failed: FailedVariant) -> dict[str, object]:
    ref = failed.variant
    return {
        "status": "failed",
        "cluster": failed.cluster,
        "target": failed.target,
        **(
            {**{name: getattr(ref, name) for name in SETTING_FIELDS}, "variant_id": ref.id}
            if ref
            else {}
        ),
        "job": failed.job,
        "finished_at": _time(failed.finished_at),
        "explanation": failed.explanation,
        "usable": False,
    }


def to_csv(report: Report) -> str:
    """One row per variant of this run, measured then failed, with the columns CSV_COLUMNS.

    The baseline columns are empty for a variant the baseline lacks (and for all without one);
    variants missing since the baseline are not rows here, since they did not run.
    """
    found = costs(report)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    baseline = report.baseline
    changes = {change.current.key: change for change in baseline.changes} if baseline else {}
    reused = {row.key for row in baseline.reused} if baseline else set()
    best = _csv_best(report.best_configurations)
    measured = {cost.key: cost for cost in found.variants if cost.measured}
    failed = {(c.cluster, c.job, c.index): c for c in found.variants if not c.measured}
    held = {id(answer.row): answer.held for answer in control_answers(report)}
    writer.writerows(
        _csv_measured(row, changes.get(row.key), reused=row.key in reused)
        | best.get(row.key, {})
        | _csv_cost(measured.get(row.key), found.currency)
        | _csv_energy(row)
        | _csv_control(row, held.get(id(row)))
        for row in report.variants
    )
    writer.writerows(
        _csv_failed(failure)
        | _csv_cost(failed.get((failure.cluster, failure.job, failure.index)), found.currency)
        for failure in report.failures
    )
    return buffer.getvalue()
