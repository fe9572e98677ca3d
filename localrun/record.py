"""Local runs go where cluster runs go: the results database, as cluster `local`, so that
`collector report` shows them, and compares them, the same way."""

from collections.abc import Collection, Sequence
from datetime import UTC, datetime

from collector.workload import ExpectedJob
from contract.config import POD_NAME_ENV
from contract.layout import LOCAL_CLUSTER
from contract.records import JobIdentity, PodStart, StoredVariant, VariantState, with_left_out
from contract.result import ErrorResult
from contract.variant import VariantRef
from localrun.workflow import PodOutcome


def local_identity(expected: ExpectedJob) -> JobIdentity:
    """The Job's identity with this machine as its cluster."""
    return expected.identity.model_copy(update={"cluster": LOCAL_CLUSTER})


def _stamp(moment: datetime) -> datetime:
    # Milliseconds: a local pod's start-up phases are a few seconds, the API's whole seconds
    # would hide them.
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


def pod_start(outcome: PodOutcome) -> PodStart:
    """When a local pod was handed to its executor and its runner started: this machine is
    its node from the start."""
    run = outcome.run
    scheduled = outcome.scheduled_at or run.started_at
    return PodStart(
        created_at=_stamp(scheduled) if scheduled else None,
        scheduled_at=_stamp(scheduled) if scheduled else None,
        started_at=_stamp(run.started_at) if run.started_at else None,
    )


def stored_variant(outcome: PodOutcome, variant: VariantRef | None, now: datetime) -> StoredVariant:
    """One variant of a local pod's run in the form gather stores a cluster pod's: its own
    result, the pod's result that names no variant (config.json unreadable), or none; it
    finished when its pod did (`now` where the executor does not say)."""
    own = [r for r in outcome.results if variant is None or r.variant in (variant, None)]
    result = own[0] if own else None
    state: VariantState = "failed"
    reason: str | None = "no_result"
    explanation = outcome.problem or (
        f"the pod ended (exit {outcome.run.exit_code}) before "
        f"{variant.describe() if variant else 'its variant'} reported"
    )
    if result is not None and result.status == "ok":
        state, reason, explanation = "succeeded", None, "ok"
    elif isinstance(result, ErrorResult):
        reason = result.error.type
        explanation = (
            f"runner error {result.error.type} (exit {outcome.run.exit_code}): "
            f"{result.error.message}"
        )
        if outcome.run.ended_early:
            explanation += f"; the pod was {outcome.run.ended_early}"
    return StoredVariant(
        index=variant.index if variant else outcome.plan.index,
        state=state,
        variant=variant,
        explanation=with_left_out(explanation, result),
        reason=reason,
        pod=outcome.plan.env.get(POD_NAME_ENV),
        node=outcome.plan.env.get("NODE_NAME"),
        attempts=1,
        finished_at=_stamp(outcome.run.finished_at or now),
        pod_start=pod_start(outcome),
        result_source="log" if result is not None else None,
        result=result,
    )


def stored_variants(
    outcomes: Sequence[PodOutcome],
    expected: ExpectedJob,
    now: datetime | None = None,
    reused: Collection[str] = (),
) -> list[StoredVariant]:
    """Every variant of every pod of one Job but those `reused` (ids its pods were told to
    skip: their earlier local runs stand for them)."""
    moment = now or datetime.now(UTC)
    return [
        stored_variant(outcome, variant, moment)
        for outcome in outcomes
        for variant in expected.group(outcome.plan.index) or (None,)
        if variant is None or variant.id not in reused
    ]
