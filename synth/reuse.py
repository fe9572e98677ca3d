"""The second pass of planning a workflow's Jobs: which identified variants each target's
repeat still has to run, which recorded successes stand in for the others, and which
committed Job may stay rather than be renamed (docs/synth.md, "Incremental sweeps" and
"Jobs that may be running")."""

from collections.abc import Mapping
from dataclasses import dataclass

from synth.committed import CommittedJob, JobSlot
from synth.identity import Identified, IdentifiedVariant
from synth.recorded import Recorded
from synth.spec import Target


def left_to_run(
    identified: list[IdentifiedVariant], recorded: Recorded, repeat: int, spec_sha256: str
) -> tuple[list[IdentifiedVariant], dict[str, list[str]]]:
    """The variants whose run `repeat` has no reusable recorded outcome, and the recorded
    successes that stand for the others (earlier Job: variant ids)."""
    pending: list[IdentifiedVariant] = []
    reuses: dict[str, list[str]] = {}
    for variant, variant_id in identified:
        reusable = recorded.reusable(variant_id, repeat, spec_sha256)
        if reusable is None:
            pending.append((variant, variant_id))
        elif reusable.succeeded:
            reuses.setdefault(reusable.job, []).append(variant_id)
    return pending, reuses


def may_stay(
    identified: Identified, recorded: Recorded, *, committed: Mapping[JobSlot, CommittedJob]
) -> dict[JobSlot, CommittedJob]:
    """The Jobs of `committed` (git's HEAD) that a record arriving would otherwise rename:
    without a record, each runs every variant its target and repeat have left to run, and
    more. Only these make a render differ from one without `committed`."""
    loaded = identified.loaded
    found = {}
    for target in loaded.workflow.targets:
        for repeat in range(loaded.workflow.benchmark.repeats):
            held = committed.get((target.key, repeat))
            if held is None:
                continue
            pending, _ = left_to_run(identified.of(target), recorded, repeat, loaded.sha256)
            if held.name not in recorded.jobs and {v for _, v in pending} < held.variant_ids:
                found[target.key, repeat] = held
    return found


@dataclass(frozen=True)
class Keeping:
    """A committed Job that may stay, and what it would run if it did."""

    job: CommittedJob
    variants: list[IdentifiedVariant]
    """Its variants, in the order the spec gives them."""
    reuses: dict[str, list[str]]
    """The recorded successes that stand in for the target's other variants."""


@dataclass(frozen=True)
class Slot:
    """What one target's repeat runs: the variants with no reusable recorded outcome, the
    recorded successes standing in for the rest, and the committed Job that may stay."""

    target: Target
    repeat: int
    pending: list[IdentifiedVariant]
    reuses: dict[str, list[str]]
    keeping: Keeping | None


def decide_reuse(
    identified: Identified, recorded: Recorded, staying: Mapping[JobSlot, CommittedJob]
) -> list[Slot]:
    """Every target's repeats, each with what it has left to run (`left_to_run`) and, where
    `staying` holds a committed Job of it, what that Job would run, so that the Job's
    assembly can keep it where the spec still names it the same."""
    loaded = identified.loaded
    slots = []
    for target in loaded.workflow.targets:
        variants = identified.of(target)
        for repeat in range(loaded.workflow.benchmark.repeats):
            pending, reuses = left_to_run(variants, recorded, repeat, loaded.sha256)
            held = staying.get((target.key, repeat))
            kept = [pair for pair in variants if held and pair[1] in held.variant_ids]
            keeping = None
            if held is not None and kept:
                others = [pair for pair in variants if pair[1] not in held.variant_ids]
                _, stand_in = left_to_run(others, recorded, repeat, loaded.sha256)
                keeping = Keeping(held, kept, stand_in)
            slots.append(Slot(target, repeat, pending, reuses, keeping))
    return slots
