"""Pod log reads off the path that applies watch events.

A log is read only when a pod's termination message holds no whole result, and a read can
take long: a server answering 500s is retried with backoff. Done inline, that stalled the loop
that applies the watches' changes, so `--timeout` passed unnoticed and pods that had finished
were shown as running. Here each read runs on a small pool, bounded by the gather's deadline;
the loop asks whether a read is done and stores the variant once it is.
"""

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from typing import Final

from collector.kube import KubeClient, KubeError
from collector.pods import RUNNER

log = logging.getLogger(__name__)

_READERS: Final = 4
"""Concurrent log reads: enough for a burst of failures, few enough to spare the API server."""


class LogReads:
    """Log reads of one namespace's pods, each started once and finished by `deadline`."""

    def __init__(self, client: KubeClient, namespace: str, deadline: float) -> None:
        self._client = client
        self._namespace = namespace
        self._deadline = deadline
        self._pool = ThreadPoolExecutor(_READERS, thread_name_prefix=f"logs in {namespace}")
        self._reads: dict[str, Future[str | None]] = {}
        self._late: set[str] = set()

    def ready(self, pod: str) -> bool:
        """Whether `pod`'s log has been read, or cannot be had; starts the read if it was not.
        A read cut off by the deadline is never ready: its variant waits for the next gather
        rather than being stored without what its log would have said."""
        if pod not in self._reads:
            self._reads[pod] = self._pool.submit(self._read, pod)
        return self._reads[pod].done() and pod not in self._late

    def late(self, pod: str) -> bool:
        """Whether `pod`'s log was still not read when the deadline came."""
        return pod in self._late

    def reader(self) -> Callable[[str], str | None]:
        """The finished reads, as harvest asks for them (call only once `ready`)."""
        return lambda pod: self._reads[pod].result()

    def forget(self, pod: str) -> None:
        """Drop a finished read once its variant is stored."""
        self._reads.pop(pod, None)

    def wait(self, timeout_s: float) -> None:
        """Wait at most `timeout_s` for the reads under way."""
        pending = [read for read in self._reads.values() if not read.done()]
        if pending:
            wait_for(pending, timeout=max(timeout_s, 0.0))

    def close(self) -> None:
        """Stop: reads under way end by the deadline, and nobody waits for them."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _read(self, pod: str) -> str | None:
        try:
            return self._client.pod_log(self._namespace, pod, RUNNER, deadline=self._deadline)
        except KubeError as error:
            if error.late:
                self._late.add(pod)
            # The pod may be gone (a preempted or deadline-killed attempt): the message says so.
            log.warning("no log for pod %s/%s: %s", self._namespace, pod, error)
            return None
