"""A local try reuses its own earlier local results, as a cluster reuses recorded ones.

A variant's id hashes everything that determines its number (docs/synth.md), so an earlier
local run of the same id, in the same namespace and repeat, that succeeded is what running it
again would measure: its pod is skipped, or, where a pod runs a group, the runner is handed
the ids to skip as a retry is (contract/reported.py). A failure runs again: a local try is
where failures are meant to be found and fixed. Only this machine's runs count (cluster
`local`): a cluster's results are reused by synth, which leaves them out of dist/ already.

What the variant id cannot see is the runner's own code on this machine, which a local try
may be testing: `localrun run --again` runs everything.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from collector.workload import ExpectedJob
from contract.layout import LOCAL_CLUSTER
from contract.reported import REPORTED_ENV, reported_text
from contract.variant import VariantRef
from localrun.pod import PodPlan
from store.database import StoredRun

Earlier = Mapping[tuple[str, str, int], StoredRun]
"""(namespace, variant id, repeat) -> its newest successful local run."""


def earlier_runs(runs: Iterable[StoredRun]) -> dict[tuple[str, str, int], StoredRun]:
    """The newest successful local run of each variant among a workflow's stored `runs`."""
    found: dict[tuple[str, str, int], StoredRun] = {}
    for run in runs:
        ref = run.variant.variant
        if run.job.cluster != LOCAL_CLUSTER or run.variant.state != "succeeded" or ref is None:
            continue
        key = (run.job.namespace, ref.id, run.job.run)
        if key not in found or run.collected_at > found[key].collected_at:
            found[key] = run
    return found


@dataclass
class Reuse:
    """What a local try runs, and which earlier local runs stand for the rest."""

    to_run: list[PodPlan] = field(default_factory=list)
    skipped: list[tuple[PodPlan, tuple[StoredRun, ...]]] = field(default_factory=list)
    """Pods whose every variant has an earlier local run, with those runs."""
    reused: dict[str, dict[str, StoredRun]] = field(default_factory=dict)
    """Job name -> variant id -> the earlier run standing for it (in skipped pods and, skipped
    by their runner, in pods that run the rest of their group)."""

    @property
    def count(self) -> int:
        return sum(len(runs) for runs in self.reused.values())


def _hand_back(plan: PodPlan, ids: Sequence[str]) -> bool:
    """Tell `plan`'s runner to skip `ids`, through the folder its retries read (a grouped
    pod's REPORTED_PATH); False where the pod has none (a pod of one variant, an older Job)."""
    folder = next(
        (m.host_path for m in plan.mounts if m.container_path == plan.env.get(REPORTED_ENV)),
        None,
    )
    if folder is None:
        return False
    (folder / str(plan.index)).write_text(reported_text(ids), encoding="ascii")
    return True


def plan_reuse(plans: Sequence[PodPlan], jobs: Sequence[ExpectedJob], earlier: Earlier) -> Reuse:
    """Which of `plans` run, and with which of their variants skipped, given the `earlier`
    local runs."""
    by_name = {job.identity.job: job for job in jobs}
    reuse = Reuse()
    for plan in plans:
        job = by_name[plan.job_name]
        group = job.group(plan.index)
        found = _found(job, group, earlier)
        if group and len(found) == len(group):
            reuse.skipped.append((plan, tuple(found.values())))
        else:
            reuse.to_run.append(plan)
            if found and not _hand_back(plan, sorted(found)):
                found = {}  # the pod runs its whole group
        if found:
            reuse.reused.setdefault(plan.job_name, {}).update(found)
    return reuse


def _found(job: ExpectedJob, group: Sequence[VariantRef], earlier: Earlier) -> dict[str, StoredRun]:
    namespace, repeat = job.identity.namespace, job.identity.run
    return {
        ref.id: run
        for ref in group
        if (run := earlier.get((namespace, ref.id, repeat))) is not None
    }
