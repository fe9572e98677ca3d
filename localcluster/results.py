"""Results for pods that cannot run here (GPU pods): what their runner would hand over.

A rule for the pod executor says how a GPU pod ends; these build the result it hands over
for a variant of the Job's config.json, valid against the runner's own model, so that the
collector reads them exactly as it reads a real run's: made up (`ok_result`), or a real
run's measurement under another variant's identity (`as_variant`).
"""

from typing import Any

from contract.result import RESULT_ADAPTER, BenchResult
from contract.variant import VariantRef

Config = dict[str, Any]


def _variant_ref(config: Config, index: int) -> dict[str, Any]:
    variant = config["variants"][index]
    # config.json leaves out what an eager variant's compile would say.
    return {key: variant[key] for key in VariantRef.model_fields if key in variant}


def ok_result(config: Config, index: int, p50_ms: float = 2.0) -> BenchResult:
    """A successful run of variant `index` of `config` with a median of `p50_ms`."""
    variant = config["variants"][index]
    stats = {f"p{p}_ms": p50_ms * (1 + (p - 50) / 200) for p in (25, 50, 75, 90, 95, 99)}
    stats |= {"max_ms": p50_ms * 1.5, "iqr_ms": stats["p75_ms"] - stats["p25_ms"]}
    return RESULT_ADAPTER.validate_python(
        {
            "status": "ok",
            "workflow": config["workflow"],
            "target": config["target"],
            "variant": _variant_ref(config, index),
            "model_sha256": config["models"][variant["model"]]["sha256"],
            "latency": {"count": 100, "mean_ms": p50_ms, "std_ms": 0.1, "cv": 0.05,
                        "min_ms": p50_ms * 0.9, **stats},
            "throughput_samples_per_s": 1000.0 * variant["batch_size"] / p50_ms,
        }
    )  # fmt: skip


def as_variant(measured: BenchResult, config: Config, index: int) -> BenchResult:
    """`measured`, a result of another variant, handed over as variant `index` of `config`
    would be: its identity replaced, every number of its measurement kept."""
    variant = config["variants"][index]
    return measured.model_copy(
        update={
            "workflow": config["workflow"],
            "target": config["target"],
            "variant": VariantRef.model_validate(_variant_ref(config, index)),
            "model_sha256": config["models"][variant["model"]]["sha256"],
        }
    )


def group_results(config: Config, index: int, p50_ms: float = 2.0) -> tuple[BenchResult, ...]:
    """Successful runs of every variant completion index `index` of `config` runs, in order
    (one variant when config.json has no groups)."""
    groups = config.get("groups")
    positions = [index] if groups is None else groups[index]
    return tuple(ok_result(config, position, p50_ms) for position in positions)


def error_result(config: Config, index: int, error: str, message: str) -> BenchResult:
    """The error result the runner hands over for variant `index` of `config`."""
    return RESULT_ADAPTER.validate_python(
        {
            "status": "error",
            "workflow": config["workflow"],
            "target": config["target"],
            "variant": _variant_ref(config, index),
            "error": {"type": error, "message": message},
        }
    )
