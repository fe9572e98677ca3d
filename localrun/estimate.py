"""How long a local try's pods will take, said before they start: `make plan`'s estimate
(contract/estimate.py, in synth/plan.py's words) of the pods the try runs, going by this
machine's earlier local runs of the workflow where they measured the same settings on the
same target, else by a first run's loops and allowances.

The two estimates go by different runs on purpose: a cluster's plan never goes by local
tries (its nodes are not this machine), and a local try goes by nothing but them (a
cluster's records say what its nodes took). After the try, the report sets the estimate
against what the pods took (report/estimates.py).
"""

from collections.abc import Iterable, Mapping, Sequence

from collector.workload import ExpectedJob
from contract.config import RunConfig
from contract.dist import Workload, config_text
from contract.estimate import estimate, history_of
from contract.layout import LOCAL_CLUSTER
from localrun.pod import PodPlan
from store.database import StoredRun
from synth.plan import estimate_words, planned_of


def estimate_lines(
    workload: Workload,
    jobs: Sequence[ExpectedJob],
    to_run: Sequence[PodPlan],
    skipped: Mapping[str, Iterable[str]],
    earlier: Iterable[StoredRun],
) -> list[str]:
    """A line per Job of `workload` with pods in `to_run`: about how many pod-minutes they
    take here, but for the variants `skipped` (Job name -> ids an earlier try measured),
    by `earlier` (the workflow's stored runs: only this machine's count)."""
    history = history_of(
        (run.job.target or "", run.variant) for run in earlier if run.job.cluster == LOCAL_CLUSTER
    )
    lines = []
    for expected in jobs:
        name = expected.identity.job
        indexes = [plan.index for plan in to_run if plan.job_name == name]
        text = config_text(workload.configmaps, name)
        if not indexes or text is None:
            continue
        config = RunConfig.model_validate_json(text)
        target = expected.identity.target or ""
        planned = planned_of(target, config, indexes, frozenset(skipped.get(name, ())))
        found = estimate(planned, history)
        if found is not None:
            words = estimate_words(found, len(planned.variants), config.gpus)
            lines.append(f"  {target}: {words}")
    return lines
