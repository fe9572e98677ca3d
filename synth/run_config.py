"""config.json of one target's Job: the variants it runs with their ids, in index order, the
groups its pods run them in, its measurement bounds and its models' sources."""

from contract.config import (
    InputConfig,
    PhaseConfig,
    RunConfig,
    VariantConfig,
)
from contract.variant import SETTING_FIELDS
from synth.load import LoadedWorkflow
from synth.model_sources import Sources
from synth.object_budget import CONFIGMAP_DATA_BYTES
from synth.spec import MeasurePhase, Phase, Target
from synth.sweep import Variant


def phase_config(phase: Phase) -> PhaseConfig:
    return PhaseConfig(
        min_iterations=phase.min_iterations,
        min_time_s=phase.min_time,
        max_iterations=phase.max_iterations,
        max_time_s=phase.max_time,
        tail=phase.tail if isinstance(phase, MeasurePhase) else None,
    )


def left_out(config: RunConfig) -> set[str] | None:
    """What config.json leaves out: `groups` where there are none, `interleave` where it
    is off, `scenario` for the closed loop and `recorded_inputs` where there are none, so
    that it, and so every Job's content-hash name, stays byte for byte what it was before
    these options existed (no rename, no run under a new name)."""
    unset = {"groups"} if config.groups is None else set()
    unset |= set() if config.interleave else {"interleave"}
    unset |= set() if config.scenario else {"scenario"}
    unset |= set() if config.recorded_inputs else {"recorded_inputs"}
    return unset or None


def config_text(config: RunConfig) -> str:
    """config.json as the pods read it."""
    return config.model_dump_json(indent=2, exclude=left_out(config)) + "\n"


def config_parts(text: str) -> tuple[str, ...]:
    """`text` (config.json) as the ConfigMaps that carry it hold it: whole where it fits one
    (CONFIGMAP_DATA_BYTES), else cut at line ends into parts that each fill one as far as a
    whole line allows; joined in order they are `text` again."""
    data = text.encode()
    parts = []
    while len(data) > CONFIGMAP_DATA_BYTES:
        cut = data.rfind(b"\n", 0, CONFIGMAP_DATA_BYTES) + 1 or CONFIGMAP_DATA_BYTES
        # Never inside a UTF-8 character (a line end never is), so each part is text.
        while data[cut] & 0xC0 == 0x80:
            cut -= 1
        parts.append(data[:cut].decode())
        data = data[cut:]
    return (*parts, data.decode())


def pod_groups(models: list[str], per_pod: int) -> tuple[tuple[int, ...], ...] | None:
    """Which variant positions each pod runs, given each variant's model in index order:
    the variants of one model together (a pod loads each of its models once), in their
    sweep order, cut into groups of `per_pod`. None for one variant per pod, which leaves
    config.json, and so the Job's name, as it was before groups existed."""
    if per_pod == 1:
        return None
    ordered = sorted(range(len(models)), key=lambda position: models[position])
    return tuple(
        tuple(ordered[start : start + per_pod]) for start in range(0, len(ordered), per_pod)
    )


def run_config(
    loaded: LoadedWorkflow,
    target: Target,
    variants: list[tuple[Variant, str]],
    found: Sources,
) -> RunConfig:
    """config.json of one target's Job: `variants` with their ids, in index order, and the
    groups its pods run them in."""
    workflow = loaded.workflow
    used = {variant.model for variant, _ in variants}
    groups = pod_groups([v.model for v, _ in variants], workflow.scheduling.variants_per_pod)
    return RunConfig(
        workflow=workflow.id,
        target=target.key,
        device_type=target.gpu_type,
        gpus=target.gpus,
        warmup=phase_config(workflow.benchmark.warmup_phase),
        measure=phase_config(workflow.benchmark.measure_phase),
        models={name: config for name, config in found.models.items() if name in used},
        variants=tuple(
            VariantConfig.model_validate(
                {
                    "index": index,
                    "id": variant_id,
                    **{name: getattr(variant, name) for name in SETTING_FIELDS},
                    "inputs": tuple(
                        InputConfig(shape=i.shape, dtype=i.dtype) for i in variant.inputs
                    ),
                }
            )
            for index, (variant, variant_id) in enumerate(variants)
        ),
        groups=groups,
        recorded_inputs=found.recorded,
        interleave=workflow.benchmark.interleave,
        scenario=workflow.benchmark.scenario_config,
    )
