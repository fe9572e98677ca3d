"""What a workflow's running pods are doing while gather waits: the newest progress line
(contract/progress.py) at the end of each one's log, read a few pods at a time.

The budget, per cluster, whatever the workflow's size: a round of log reads at most every
ROUND_S (the runner writes a line every 5 s while it measures), each round reading the
`reads_per_round` running pods read longest ago (round-robin), and no round begins before the
last one's reads have all ended, so a slow server slows the reads rather than piling them up.
That is at most 4 reads per 5 s up to 16 running pods (each read every 5 to 20 s), growing as
the square root to at most 16 per 5 s (3.2 requests a second) from 256 pods: 1,000 running
pods are each read about every 5 minutes. Each read is one request for the last TAIL_LINES
lines, at most LIMIT_BYTES, never retried: a read that fails leaves what was known, says so
in one debug line, and the pod is asked again in its turn.
"""

import logging
import math
import time
from collections import Counter
from collections.abc import Callable, Collection
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Final, get_args

from collector.kube import KubeClient, KubeError
from collector.pods import RUNNER
from contract.progress import Phase, ProgressRecord, parse_progress, phase_text
from contract.text import plural

log = logging.getLogger(__name__)

ROUND_S: Final = 5.0
"""The shortest time between the starts of two rounds of reads."""
MIN_READS: Final = 4
MAX_READS: Final = 16
TAIL_LINES: Final = 10
"""Lines read from a log's end: the runner's other lines seldom come between two of its
progress lines."""
LIMIT_BYTES: Final = 16 * 1024
"""Bytes a read returns at most (the tail's first: a tail of long lines loses its newest)."""
READ_TIMEOUT_S: Final = 10.0


def reads_per_round(running: int) -> int:
    """How many of `running` pods one round reads."""
    return min(running, MAX_READS, max(MIN_READS, math.isqrt(running)))


def newest_progress(log_text: str) -> ProgressRecord | None:
    """The last progress line of `log_text`, stdout and stderr together; None if it has none."""
    for line in reversed(log_text.splitlines()):
        record = parse_progress(line)
        if record is not None:
            return record
    return None


@dataclass(frozen=True)
class _Seen:
    record: ProgressRecord
    at: float
    """When it was read (the sampler's clock)."""


@dataclass(frozen=True)
class RunningView:
    """The running pods of a workflow, as last read."""

    running: int
    phases: Counter[Phase]
    """How many pods are in each phase, of those whose log held a progress line."""
    slowest: tuple[str, str] | None
    """The pod whose phase has the most time left, and where it is in words."""

    def text(self) -> str:
        """The running pods by phase, and the slowest: `measure 8, warmup 3, 1 pod not read
        yet; slowest: measure 1:40, 5200 iterations, ~4:10 left (pod cpu-smoke-...-x7k2p)`."""
        parts = [f"{phase} {self.phases[phase]}" for phase in get_args(Phase) if self.phases[phase]]
        unread = self.running - self.phases.total()
        if unread:
            parts.append(f"{plural(unread, 'pod')} not read yet")
        text = ", ".join(parts)
        if self.slowest is not None:
            pod, words = self.slowest
            text += f"; slowest: {words} (pod {pod})"
        return text


class RunningProgress:
    """Follows the progress lines of the running pods of one namespace."""

    def __init__(
        self, client: KubeClient, namespace: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._client = client
        self._namespace = namespace
        self._clock = clock
        self._pool = ThreadPoolExecutor(MIN_READS, thread_name_prefix=f"progress in {namespace}")
        self._asked: dict[str, float] = {}
        """When each running pod was last asked for its log."""
        self._seen: dict[str, _Seen] = {}
        self._round: list[Future[tuple[str, ProgressRecord | None, float]]] = []
        self._round_at = float("-inf")

    def follow(self, running: Collection[str]) -> RunningView:
        """The pods running now, by name: takes in the reads that ended, starts the next
        round when it is due, and says where the pods are."""
        now = self._clock()
        for gone in self._asked.keys() - set(running):
            del self._asked[gone]
            self._seen.pop(gone, None)
        if all(read.done() for read in self._round):
            for read in self._round:
                pod, record, at = read.result()
                if record is not None and pod in self._asked:
                    self._seen[pod] = _Seen(record, at)
            self._round = []
            if running and now - self._round_at >= ROUND_S:
                self._start_round(running, now)
        return self._view(len(running), now)

    def close(self) -> None:
        """Stop: reads under way end by their timeout, and nobody waits for them."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _start_round(self, running: Collection[str], now: float) -> None:
        never = float("-inf")
        due = sorted(running, key=lambda pod: (self._asked.get(pod, never), pod))
        for pod in due[: reads_per_round(len(running))]:
            self._asked[pod] = now
            self._round.append(self._pool.submit(self._read, pod))
        self._round_at = now

    def _read(self, pod: str) -> tuple[str, ProgressRecord | None, float]:
        try:
            text = self._client.log_tail(
                self._namespace,
                pod,
                RUNNER,
                lines=TAIL_LINES,
                limit_bytes=LIMIT_BYTES,
                timeout_s=READ_TIMEOUT_S,
            )
        except KubeError as error:
            log.debug("no progress from pod %s/%s: %s", self._namespace, pod, error)
            return pod, None, self._clock()
        return pod, newest_progress(text), self._clock()

    def _view(self, running: int, now: float) -> RunningView:
        phases = Counter(seen.record.phase for seen in self._seen.values())
        timed = [
            (left_s, pod, seen)
            for pod, seen in self._seen.items()
            if (left_s := seen.record.left_after(now - seen.at)) is not None
        ]
        slowest = None
        if timed:
            _, pod, seen = max(timed, key=lambda item: (item[0], item[1]))
            slowest = (pod, phase_text(seen.record, now - seen.at))
        return RunningView(running, phases, slowest)
