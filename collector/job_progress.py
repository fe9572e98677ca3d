"""What gather knows about one Job it follows: what is stored, what its pods show, what they
were told. Its own module, so that gather and the hand-back to a Job's retries both read it
without importing each other."""

from dataclasses import dataclass, field

from collector.allocation import AttemptLog
from collector.harvest import ended_attempts
from collector.indexes import IndexState, job_finished
from collector.kube import Object
from collector.pods import completion_index
from collector.workload import ExpectedJob
from contract.records import VariantState
from store.database import Unread


@dataclass
class JobProgress:
    """What gather knows about one expected Job."""

    expected: ExpectedJob
    stored: dict[int, VariantState]
    """How each stored variant (by its index) ended: what it counts as in progress, whatever
    its pod shows."""
    job: Object | None = None
    pods: list[Object] = field(default_factory=list)
    """The pods of the indexes not stored yet: a stored index's pods are never read again."""
    states: list[IndexState] = field(default_factory=list)
    """The indexes not stored yet: a stored one's state holds its whole result, and it
    counts as it was stored."""
    causes: dict[int, str] = field(default_factory=dict)
    """Why each index waited, the last time it was seen waiting for a reason (unschedulable,
    an image that cannot be pulled), also by an earlier gather (the store keeps them): its pod
    may be gone by the time the Job fails it."""
    harvested: set[str] = field(default_factory=set)
    """The ended attempts whose measurements are stored: none is read twice."""
    handed_back: dict[str, str] = field(default_factory=dict)
    """What the Job's pods were last told an earlier attempt reported (contract/reported.py)."""
    unread: dict[int, Unread] = field(default_factory=dict)
    """The variants whose result a newer runner wrote, kept as it arrived (not final): gather
    waits for them no longer, and records the Job only once a collector has read them."""
    attempts: AttemptLog = field(default_factory=AttemptLog)
    """The times of every attempt of the indexes not stored yet, as last seen: a preempted
    pod is deleted once counted, and only what gather saw of it says how long it held its
    node (collector/allocation.py)."""
    own_s: dict[int, float | None] = field(default_factory=dict)
    """Each stored variant's own time in its pod, which its group's pod time is split by."""

    def keep_unstored(self, pods: list[Object], states: list[IndexState]) -> None:
        """Hold `pods` and `states` of the indexes not stored yet only."""
        self.pods = [pod for pod in pods if self.index_unstored(completion_index(pod))]
        self.states = [state for state in states if self.unstored(state)]

    @property
    def finished(self) -> bool:
        """The Job has ended and every variant of it is stored, or kept unread."""
        return (
            self.job is not None
            and job_finished(self.job)
            and len(self.stored.keys() | self.unread.keys()) == self.expected.variant_count
        )

    def awaited(self, state: IndexState) -> bool:
        """Whether a variant that index `state` runs is neither stored nor kept unread."""
        return any(
            p not in self.stored and p not in self.unread
            for p in self.expected.positions(state.index)
        )

    def index_unstored(self, index: int | None) -> bool:
        """Whether a variant that completion index `index` runs has yet to be stored (a pod
        without an index is kept: nothing says it is done)."""
        return index is None or any(p not in self.stored for p in self.expected.positions(index))

    def attempts_unread(self, state: IndexState) -> bool:
        """Whether index `state` runs a group and has ended attempts whose measurements are
        not stored yet: they come first, or the variants only they measured would be stored
        as never reported."""
        return len(self.expected.positions(state.index)) > 1 and any(
            pod.name not in self.harvested for pod in ended_attempts(state)
        )

    def unstored(self, state: IndexState) -> bool:
        """Whether a variant that index `state` runs has yet to be stored."""
        return self.index_unstored(state.index)
