"""What the machines the reported variants ran on lack of what those variants need: a CPU
without the bf16 or VNNI instructions, a GPU without bf16 tensor cores (contract/instructions.py),
as the runner recorded the CPU's flags and the GPU's compute capability (result schema 6)."""

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from contract.instructions import Lack, Machine
from contract.result import OkResult
from contract.variant import VariantSettings
from store.database import StoredRun


@dataclass(frozen=True)
class MachineLack:
    """One rule one target's machine misses for some of its reported variants."""

    cluster: str
    target: str
    machine: str
    lack: Lack


def machine_lacks(
    runs: Iterable[StoredRun], target_of: Callable[[StoredRun], str]
) -> tuple[MachineLack, ...]:
    """Per cluster, target and machine (in that order), each rule its variants among `runs`
    need and it lacks; nothing for runs whose results do not say (before schema 6)."""
    ran: dict[tuple[str, str, Machine], list[VariantSettings]] = defaultdict(list)
    for run in runs:
        result = run.variant.result
        if not isinstance(result, OkResult) or result.environment is None or not result.variant:
            continue
        machine = Machine.of(result.environment)
        if machine is not None:
            ran[run.job.cluster, target_of(run), machine].append(result.variant)
    return tuple(
        MachineLack(cluster, target, machine.name, lack)
        for (cluster, target, machine), variants in sorted(ran.items(), key=str)
        for lack in machine.lacks(variants)
    )
