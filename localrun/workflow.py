"""Run every pod of a synthesized workflow on this machine, one after another.

One at a time, whatever the Job's parallelism: on a workstation the pods would share the same
cores, and each would measure the others' load instead of its model.
"""

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from contract.dist import Workload
from contract.layout import DIST, cluster_of, workload_files
from contract.progress import parse_progress
from contract.result import (
    BenchResult,
    OmittedResult,
    find_result_texts,
    is_group_message,
    parse_group_message,
    parse_result,
)
from localrun.pod import PodPlan, PodRun, PodSpecError, pod_plan
from localrun.streams import Watch

Executor = Callable[[PodPlan, Watch], PodRun]
"""Runs one pod and follows it to its end, telling the Watch and heeding its stop."""


@dataclass(frozen=True)
class PodOutcome:
    """One pod's run and the results it handed over (one per variant it ran), or why there
    are none."""

    plan: PodPlan
    run: PodRun
    results: tuple[BenchResult, ...]
    problem: str | None
    """Why no valid result came back (None when `results` has some)."""
    scheduled_at: datetime | None = None
    """When it was handed to its executor (a local pod gets this machine at once), where the
    caller said."""

    @property
    def result(self) -> BenchResult | None:
        """The last result: the only one of a pod that runs one variant."""
        return self.results[-1] if self.results else None


def workload_file(root: Path, workflow: str, cluster: str | None) -> Path:
    """dist/<cluster>/workloads/<workflow>.yaml; the first cluster that runs it by default."""
    found = [p for p in workload_files(root, workflow) if cluster in (None, cluster_of(p))]
    if found:
        return found[0]
    known = sorted({path.stem for path in workload_files(root)})
    where = f"cluster {cluster}" if cluster else "any cluster"
    raise PodSpecError(
        f"{DIST}/ holds no workflow {workflow!r} for {where} (run `make synth` after editing "
        f"specs/); workflows in {DIST}/: {', '.join(known) or 'none'}"
    )


def read_outcome(plan: PodPlan, run: PodRun, scheduled_at: datetime | None = None) -> PodOutcome:
    """The results from the stdout lines, or from the termination log when there are none,
    as the collector reads a pod whose logs are gone."""
    try:
        results = tuple(parse_result(text) for text in find_result_texts(run.stdout))
        if not results and run.termination_log.strip():
            results = _from_termination_log(run.termination_log.strip())
    except (ValidationError, ValueError) as error:
        return PodOutcome(plan, run, (), f"malformed result: {error}", scheduled_at)
    if not results:
        logs = [line for line in run.stderr.strip().splitlines() if parse_progress(line) is None]
        tail = " | ".join(logs[-3:])
        ended = f", the pod was {run.ended_early}" if run.ended_early else ""
        problem = f"exit {run.exit_code}{ended}, no result; stderr: {tail}"
        return PodOutcome(plan, run, (), problem, scheduled_at)
    return PodOutcome(plan, run, results, None, scheduled_at)


def _from_termination_log(text: str) -> tuple[BenchResult, ...]:
    if not is_group_message(text):
        return (parse_result(text),)
    entries = parse_group_message(text)
    return tuple(e for e in entries if not isinstance(e, OmittedResult))


def pod_plans(
    workload: Workload, workdir: Path, indexes: tuple[int, ...] = ()
) -> Iterator[PodPlan]:
    """A plan per Job index of `workload` (only `indexes` when given), volumes under workdir."""
    for job in workload.jobs:
        completions = job["spec"].get("completions", 1)
        for index in indexes or range(completions):
            folder = workdir / f"{job['metadata']['name']}-{index}"
            yield pod_plan(job, workload.configmaps, index, folder)


def run_pod(plan: PodPlan, executor: Executor, watch: Watch) -> PodOutcome:
    """Run `plan` with `executor`, `watch` following it, and read what it handed over."""
    scheduled = datetime.now(UTC)
    return read_outcome(plan, executor(plan, watch), scheduled)
