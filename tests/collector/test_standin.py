"""The stand-in API server's lists: a page costs what it holds (the gather bench measures the
collector, not the stand-in), and paging stays right as objects come and go between pages;
its hold keeps changes from watches only."""

import copy
import json
import urllib.request
from types import SimpleNamespace
from typing import Any

import pytest

from collector.kube import KubeClient
from standin import api as standin_api
from standin.api import FakeApiServer

NAMESPACE = "benchfleet-dev"
SELECTOR = "app=benchfleet,workflow=cpu-smoke"

Object = dict[str, Any]


def pod(name: str, workflow: str = "cpu-smoke") -> Object:
    labels = {"app": "benchfleet", "workflow": workflow}
    return {"metadata": {"name": name, "namespace": NAMESPACE, "labels": labels}}


def names(items: list[Object]) -> list[str]:
    return [item["metadata"]["name"] for item in items]


def test_a_page_copies_only_the_objects_it_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    """The defect: each page deep-copied every object after the token, then kept `limit` of
    them, so listing n objects cost n^2/limit copies (5000 variants took 13.6x 1000)."""
    copied: list[object] = []
    deepcopy = copy.deepcopy

    def counting(obj: Object) -> Object:
        copied.append(obj)
        return deepcopy(obj)

    with FakeApiServer() as server:
        for i in range(40):
            server.add("pods", pod(f"bench-{i:02d}"))
        monkeypatch.setattr(standin_api, "copy", SimpleNamespace(deepcopy=counting))
        listed = KubeClient(server.client()).list_pods(NAMESPACE, SELECTOR, page_size=4)
    assert names(listed.items) == [f"bench-{i:02d}" for i in range(40)]
    assert len(copied) == 40


def test_paging_skips_what_the_selector_rejects_and_what_was_deleted_between_pages() -> None:
    with FakeApiServer() as server:
        for i in range(9):
            server.add("pods", pod(f"bench-{i}", "cpu-smoke" if i % 3 else "other"))
        client = KubeClient(server.client())
        first = server.requests
        listed = client.list_pods(NAMESPACE, SELECTOR, page_size=2)
        assert names(listed.items) == [
            "bench-1",
            "bench-2",
            "bench-4",
            "bench-5",
            "bench-7",
            "bench-8",
        ]
        assert len(server.requests) - len(first) == 3
        server.delete("pods", NAMESPACE, "bench-4")
        server.add("pods", pod("bench-45"))
        assert names(client.list_pods(NAMESPACE, SELECTOR, page_size=2).items) == [
            "bench-1",
            "bench-2",
            "bench-45",
            "bench-5",
            "bench-7",
            "bench-8",
        ]


def test_a_log_read_cuts_its_tail_to_limit_bytes_from_the_tails_start() -> None:
    """As the kubelet does: the last tailLines lines, then at most limitBytes of them, so a
    reader that asks for both may lose the newest line, never get an older one instead."""
    with FakeApiServer() as server:
        server.set_log(NAMESPACE, "bench-0", "runner", "one\ntwo\nthree\nfour\n")
        client = KubeClient(server.client())
        tail = client.log_tail(NAMESPACE, "bench-0", "runner", lines=2, limit_bytes=8, timeout_s=5)
        assert tail == "three\nfo"
        assert client.requests["log tail"] == 1


def _watched(server: FakeApiServer, since: str) -> list[tuple[str, str]]:
    """What one watch window of a second from `since` sends: (type, name or bookmark's rv)."""
    query = f"watch=true&resourceVersion={since}&timeoutSeconds=1&allowWatchBookmarks=true"
    url = f"{server.url}/api/v1/namespaces/{NAMESPACE}/pods?{query}"
    with urllib.request.urlopen(url, timeout=30) as stream:
        events = [json.loads(line) for line in stream.read().splitlines() if line.strip()]
    return [
        (
            event["type"],
            event["object"]["metadata"]["resourceVersion"]
            if event["type"] == "BOOKMARK"
            else event["object"]["metadata"]["name"],
        )
        for event in events
    ]


def test_hold_keeps_later_changes_from_watches_but_not_from_lists() -> None:
    with FakeApiServer() as server:
        server.add("pods", pod("bench-0"))
        since = server.resource_version
        server.add("pods", pod("bench-1"))
        server.hold("pods")
        held_from = server.resource_version
        server.add("pods", pod("bench-2"))
        listed = KubeClient(server.client()).list_pods(NAMESPACE, SELECTOR)
        assert names(listed.items) == ["bench-0", "bench-1", "bench-2"]
        assert _watched(server, since) == [("ADDED", "bench-1"), ("BOOKMARK", held_from)]
        server.release("pods")
        assert _watched(server, held_from) == [
            ("ADDED", "bench-2"),
            ("BOOKMARK", server.resource_version),
        ]
