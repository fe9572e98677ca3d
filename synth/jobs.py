"""What one workflow runs in one cluster, planned in three passes over plain data, before any
cdk8s construct exists: identify every variant (`synth.identity`), decide what recorded runs
and committed Jobs it reuses (`synth.reuse`), then assemble the Jobs (`synth.job_assembly`).

A Job's name carries a hash of its content: the same spec gives the same name (Flux leaves
the finished Job alone) and any change that would alter the run gives a new name (Flux
creates the new Job and prunes the old one; a Job's pod template is immutable, so editing it
in place would fail anyway).
"""

from collections.abc import Mapping

from synth.committed import CommittedJob, JobSlot
from synth.identity import Identified
from synth.job_assembly import BenchmarkRun, JobAssembly
from synth.load import LoadedWorkflow, Specs
from synth.model_sources import (
    bundle_models,
    ca_config_maps,
    committed_files,
    store_ca_config_map,
)
from synth.modelfiles import ModelFiles
from synth.recorded import Recorded
from synth.reuse import decide_reuse, may_stay


def waits_for_first_run(loaded: LoadedWorkflow) -> bool:
    """Whether `loaded` is scheduled and `benchfleet schedule` has not started a run of it:
    until then it runs nothing (every run, the first too, is started by a commit)."""
    return loaded.workflow.scheduling.every is not None and loaded.schedule is None


def plan_runs(
    identified: Identified,
    model_files: ModelFiles,
    recorded: Recorded,
    *,
    staying: Mapping[JobSlot, CommittedJob],
) -> list[BenchmarkRun]:
    """The Jobs (one per target and repeat) that the identified workflow needs in its
    cluster: each runs the target's variants whose run of that repeat `recorded` holds no
    reusable outcome of; a repeat with none left has no Job, and a Job `recorded` holds is
    done and left out.

    A record arriving never renames a Job that may be running. Where the committed dist/
    holds a Job of a target and repeat that may stay (`may_stay`: `staying`) and the spec
    gives it the same name with the same variants, it stays as it is: renamed, Flux would
    prune it and what it measured would run again. Its variants that a record now covers
    are measured twice, and the report keeps the newer run."""
    loaded, fleet, cluster = identified.loaded, identified.fleet, identified.cluster
    if waits_for_first_run(loaded):
        return []
    files = committed_files(loaded, model_files)
    jobs = JobAssembly(
        loaded,
        fleet,
        cluster,
        tuple(bundle_models(loaded.workflow.id, list(files.values()))),
        identified.sources,
        ca_config_maps(loaded, fleet, model_files),
        store_ca_config_map(loaded, fleet.results_store_of(cluster), model_files),
    )
    runs = []
    for slot in decide_reuse(identified, recorded, staying):
        run = (
            jobs.run(slot.target, slot.repeat, slot.pending, slot.reuses) if slot.pending else None
        )
        if slot.keeping is not None:
            keeping = slot.keeping
            same = jobs.run(slot.target, slot.repeat, keeping.variants, keeping.reuses)
            run = same if same.name == keeping.job.name else run
        if run is not None and run.name not in recorded.jobs:
            runs.append(run)
    return runs


def cluster_runs(specs: Specs, identified: Identified) -> list[BenchmarkRun]:
    """The Jobs `make synth` writes for the identified workflow in its cluster from `specs`:
    plan_runs over what results/ records, keeping the committed Jobs that may stay."""
    key = (identified.loaded.workflow.id, identified.cluster.name)
    stored = specs.recorded[key]
    staying = may_stay(identified, stored, committed=specs.committed.jobs.get(key, {}))
    return plan_runs(identified, specs.model_files, stored, staying=staying)
