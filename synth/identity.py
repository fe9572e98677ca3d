"""The first pass of planning a workflow's Jobs: every variant of each target in one
cluster, with its id, which hashes everything that determines its number (docs/synth.md,
"Incremental sweeps")."""

from dataclasses import dataclass, field

from contract.config import ModelConfig
from synth.fleet import Cluster, Fleet
from synth.load import LoadedWorkflow
from synth.model_sources import Sources, sources
from synth.modelfiles import ModelFiles
from synth.placement import placement
from synth.run_config import phase_config
from synth.spec import Target
from synth.sweep import Variant

IdentifiedVariant = tuple[Variant, str]
"""A variant and its id."""


def measurement_setup(
    loaded: LoadedWorkflow, target: Target, cluster: Cluster, image: str
) -> dict[str, object]:
    """What, besides the variant itself and its model's bytes, determines its number: the
    image (runner and torch), the measurement bounds, the device and its count, the resources,
    and the nodes it may run on. Priority, retries, deadline, parallelism, queue, description
    and owner decide when and whether it runs, not what it measures: they are left out, so
    changing them re-runs nothing already recorded (docs/synth.md has the table)."""
    benchmark = loaded.workflow.benchmark
    node_selector, _ = placement(target, cluster)
    return {
        "image": image,
        "warmup": phase_config(benchmark.warmup_phase).model_dump(mode="json"),
        "measure": phase_config(benchmark.measure_phase).model_dump(mode="json"),
        "device_type": target.gpu_type,
        "gpus": target.gpus,
        "requests": dict(sorted(target.resources.requests.items())),
        "limits": dict(sorted(target.resources.limits.items())),
        "node_selector": dict(sorted(node_selector.items())),
        # Only when set, so that every variant id from before the option stays as it was.
        **({"interleave": True} if benchmark.interleave else {}),
        # A fixed rate measures another quantity (latency from a clock's arrivals, misses).
        **(
            {"scenario": scenario.model_dump(mode="json")}
            if (scenario := benchmark.scenario_config)
            else {}
        ),
    }


def _identified_variants(
    loaded: LoadedWorkflow,
    fleet: Fleet,
    cluster: Cluster,
    target: Target,
    found: Sources,
) -> list[IdentifiedVariant]:
    """The target's variants in `cluster`, each with its id: its measurement, with its
    model's sha256 in it."""
    setup = measurement_setup(loaded, target, cluster, loaded.workflow.image or fleet.image)
    # Each scheduled run is a new identity, so nothing one run recorded stands in for the
    # next; only where there is one, so that no other workflow's ids change.
    scheduled = {"scheduled_run": loaded.schedule.run} if loaded.schedule else {}
    # Replaying a recording is another measurement than drawing inputs, and so is replaying
    # another recording; only where there is one, so that no other workflow's ids change.
    recorded = found.recorded
    replayed = {"recorded_inputs_sha256": recorded.sha256} if recorded is not None else {}

    def facts(model: ModelConfig) -> dict[str, object]:
        # A model's family and params are in its results: only where it has them, so that
        # no other variant's id changes.
        return {"family": model.family, "params": model.params} if model.family else {}

    return [
        (
            variant,
            variant.variant_id(
                loaded.workflow.id,
                {
                    **setup,
                    "model_sha256": found.models[variant.model].sha256,
                    **facts(found.models[variant.model]),
                    **replayed,
                    **scheduled,
                },
            ),
        )
        for variant in loaded.variants
        if variant.target == target.key
    ]


@dataclass(frozen=True)
class Identified:
    """A workflow's variants in one cluster with their ids, and its models' sources (their
    sha256 is in every id). Each target's ids are hashed when first asked for and kept: a
    render asks twice (which committed Jobs may stay, then the Jobs), and a fully cached one
    asks only for the targets of committed Jobs."""

    loaded: LoadedWorkflow
    fleet: Fleet
    cluster: Cluster
    sources: Sources
    _by_target: dict[str, list[IdentifiedVariant]] = field(default_factory=dict, repr=False)

    def of(self, target: Target) -> list[IdentifiedVariant]:
        """`target`'s variants with their ids, in sweep order."""
        if target.key not in self._by_target:
            self._by_target[target.key] = _identified_variants(
                self.loaded, self.fleet, self.cluster, target, self.sources
            )
        return self._by_target[target.key]


def identify(
    loaded: LoadedWorkflow, fleet: Fleet, cluster: Cluster, model_files: ModelFiles
) -> Identified:
    """`loaded`'s variants in `cluster`, identified."""
    return Identified(loaded, fleet, cluster, sources(loaded, fleet, model_files))
