"""A workflow's Jobs and pods in one namespace, kept current by two followers (list + watch).

Each follower runs in a thread of its own and hands its changes to one queue; the caller
drains it and sees a consistent picture after each batch. A follower that fails for good
(RBAC, retries exhausted) ends the wait with its KubeError rather than leaving it hanging.
"""

import queue
import threading
from dataclasses import dataclass, field
from typing import Final

from collector.kube import Change, Follower, Keep, Kind, KubeClient, KubeError, Object, ObjectList
from collector.pods import held_pod

_KINDS: Final[tuple[Kind, ...]] = ("jobs", "pods")
_KEEP: Final[dict[Kind, Keep | None]] = {"jobs": None, "pods": held_pod}
"""Pods are held as pods.held_pod cuts them: a workflow has thousands. Its few Jobs whole."""


@dataclass
class Snapshot:
    """The objects currently known, by name."""

    jobs: dict[str, Object] = field(default_factory=dict)
    pods: dict[str, Object] = field(default_factory=dict)
    synced: set[Kind] = field(default_factory=set)
    """Kinds whose first complete list has arrived: before both have, the picture is partial."""

    def of(self, kind: Kind) -> dict[str, Object]:
        return self.jobs if kind == "jobs" else self.pods


class WorkflowWatch:
    """Follows the Jobs and pods matching `label_selector` in `namespace`."""

    def __init__(
        self, client: KubeClient, namespace: str, label_selector: str, watch_timeout_s: int = 300
    ) -> None:
        self.snapshot = Snapshot()
        self._changes: queue.Queue[Change | KubeError] = queue.Queue()
        self._stop = threading.Event()
        self._listed: dict[Kind, set[str]] = {kind: set() for kind in _KINDS}
        self._threads = [
            threading.Thread(
                target=self._follow,
                args=(
                    Follower(client, kind, namespace, label_selector, keep=_KEEP[kind]),
                    watch_timeout_s,
                ),
                name=f"follow {kind} in {namespace}",
                daemon=True,
            )
            for kind in _KINDS
        ]

    def _follow(self, follower: Follower, watch_timeout_s: int) -> None:
        try:
            follower.run(self._changes.put, self._stop, watch_timeout_s)
        except KubeError as error:
            self._changes.put(error)

    def __enter__(self) -> "WorkflowWatch":
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=10)

    def wait(self, timeout_s: float) -> bool:
        """Apply every change that arrives within `timeout_s` of the first (at least one
        batch when any is waiting); False when nothing changed. Raises a follower's KubeError."""
        try:
            item = self._changes.get(timeout=max(timeout_s, 0.0))
        except queue.Empty:
            return False
        while True:
            self._apply(item)
            try:
                item = self._changes.get_nowait()
            except queue.Empty:
                return True

    def _apply(self, item: Change | KubeError) -> None:
        if isinstance(item, KubeError):
            raise item
        objects = self.snapshot.of(item.kind)
        if item.type == "SYNCED":
            # A full list just arrived: whatever it did not name is gone.
            for name in set(objects) - self._listed[item.kind]:
                del objects[name]
            self._listed[item.kind] = set()
            self.snapshot.synced.add(item.kind)
            return
        assert item.object is not None
        name = item.object["metadata"]["name"]
        if item.type == "DELETED":
            objects.pop(name, None)
            return
        objects[name] = item.object
        if item.type == "ADDED":
            self._listed[item.kind].add(name)


def listed_once(client: KubeClient, namespace: str, label_selector: str) -> Snapshot:
    """One list of each kind and no watch: `gather --no-wait`."""
    snapshot = Snapshot()
    listings: dict[Kind, ObjectList] = {
        "jobs": client.list_jobs(namespace, label_selector),
        "pods": client.list_pods(namespace, label_selector, keep=_KEEP["pods"]),
    }
    for kind, listing in listings.items():
        snapshot.of(kind).update({obj["metadata"]["name"]: obj for obj in listing.items})
        snapshot.synced.add(kind)
    return snapshot
