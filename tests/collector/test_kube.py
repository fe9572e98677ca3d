"""collector/kube.py through the real `kubernetes` client, against the stand-in API server.

Waits between retries are recorded, not slept; the only real waiting is for threads.
"""

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from collector.kube import Change, Follower, Keep, Kind, KubeClient, KubeError, RetryPolicy
from standin.api import FakeApiServer, Request

NAMESPACE = "benchfleet-dev"
WORKFLOW = "cpu-smoke"
SELECTOR = f"app=benchfleet,workflow={WORKFLOW}"
TOKEN = "t0ken-that-must-never-show"
POLICY = RetryPolicy(max_attempts=4, base_delay_s=0.01, max_delay_s=5.0)
# Long enough that a window never ends mid-test by itself; stop interrupts it anyway.
WATCH_TIMEOUT_S = 2
WAIT_S = 5.0

Object = dict[str, Any]


def metadata(name: str, workflow: str) -> Object:
    return {
        "name": name,
        "namespace": NAMESPACE,
        "uid": f"uid-{name}",
        "labels": {"app": "benchfleet", "workflow": workflow},
    }


def pod(name: str, phase: str = "Pending", workflow: str = WORKFLOW) -> Object:
    return {"metadata": metadata(name, workflow), "status": {"phase": phase}}


def job(name: str, workflow: str = WORKFLOW) -> Object:
    return {"metadata": metadata(name, workflow), "spec": {"completions": 1}, "status": {}}


FACTORIES: dict[Kind, Callable[..., Object]] = {"pods": pod, "jobs": job}


def names(items: list[Object]) -> list[str]:
    return [item["metadata"]["name"] for item in items]


def watches(api: FakeApiServer) -> list[Request]:
    return [request for request in api.requests if request.is_watch]


def wait_for_watches(api: FakeApiServer, count: int) -> None:
    """Wait until `count` watch requests have reached the server (so a drop reaches them)."""
    wait_until(lambda: len(watches(api)) >= count)


def wait_until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def seen(changes: list[Change]) -> list[tuple[str, str | None]]:
    """(type, name) of each change, SYNCED with no name."""
    return [
        (change.type, change.object["metadata"]["name"] if change.object else None)
        for change in changes
    ]


def since_last_sync(changes: list[Change]) -> list[tuple[str, str | None]]:
    synced = max(i for i, change in enumerate(changes) if change.type == "SYNCED")
    return seen(changes[synced + 1 :])


def last_listing(changes: list[Change]) -> list[str]:
    """The names the latest complete list delivered (the ADDED changes before its SYNCED)."""
    synced = max(i for i, change in enumerate(changes) if change.type == "SYNCED")
    start = synced
    while start > 0 and changes[start - 1].type == "ADDED":
        start -= 1
    return [name for _, name in seen(changes[start:synced]) if name]


class Following:
    """A Follower running in its own thread, and what it delivered so far."""

    def __init__(self, follower: Follower, watch_timeout_s: int) -> None:
        self.changes: list[Change] = []
        self.error: BaseException | None = None
        self.stop = threading.Event()
        self._changed = threading.Condition()
        self._finished = False
        self._thread = threading.Thread(
            target=self._run, args=(follower, watch_timeout_s), daemon=True
        )
        self._thread.start()

    def _sink(self, change: Change) -> None:
        with self._changed:
            self.changes.append(change)
            self._changed.notify_all()

    def _run(self, follower: Follower, watch_timeout_s: int) -> None:
        try:
            follower.run(self._sink, self.stop, watch_timeout_s)
        except BaseException as error:
            self.error = error
        finally:
            with self._changed:
                self._finished = True
                self._changed.notify_all()

    def wait_for(self, condition: Callable[[list[Change]], bool]) -> list[Change]:
        """Wait until the changes so far satisfy `condition`; they, as a copy."""
        with self._changed:
            met = self._changed.wait_for(
                lambda: self._finished or condition(self.changes), timeout=WAIT_S
            )
            if self.error is not None:
                raise self.error
            assert met and condition(self.changes), f"not delivered: {seen(self.changes)}"
            return list(self.changes)

    def wait_for_change(self, type_: str, name: str) -> list[Change]:
        return self.wait_for(lambda changes: (type_, name) in seen(changes))

    def wait_for_syncs(self, count: int = 1) -> list[Change]:
        return self.wait_for(lambda changes: seen(changes).count(("SYNCED", None)) >= count)

    def wait_for_end(self) -> BaseException | None:
        """Wait for `run` to return or raise; what it raised."""
        self._thread.join(WAIT_S)
        assert not self._thread.is_alive(), "the follower is still running"
        return self.error

    def halt(self) -> float:
        """Set stop and wait for `run` to return; the seconds that took."""
        started = time.monotonic()
        self.stop.set()
        self._thread.join(WAIT_S)
        assert not self._thread.is_alive(), "the follower did not stop"
        return time.monotonic() - started


FollowFactory = Callable[..., Following]


@pytest.fixture
def api() -> Iterator[FakeApiServer]:
    with FakeApiServer() as server:
        yield server


@pytest.fixture
def api_client(api: FakeApiServer) -> client.ApiClient:
    return api.client(token=TOKEN)


@pytest.fixture
def sleeps() -> list[float]:
    """The waits between attempts, in order."""
    return []


@pytest.fixture
def kube(api_client: client.ApiClient, sleeps: list[float]) -> KubeClient:
    return KubeClient(api_client, POLICY, sleep=sleeps.append)


@pytest.fixture
def follow(kube: KubeClient) -> Iterator[FollowFactory]:
    """Start Followers of the fake server's collections; all are stopped afterwards."""
    started: list[Following] = []

    def start(
        kind: Kind = "pods",
        *,
        watch_timeout_s: int = WATCH_TIMEOUT_S,
        page_size: int = 500,
        keep: Keep | None = None,
    ) -> Following:
        follower = Follower(kube, kind, NAMESPACE, SELECTOR, page_size=page_size, keep=keep)
        started.append(Following(follower, watch_timeout_s))
        return started[-1]

    yield start
    for following in started:
        following.halt()


# Requests: lists, retries, errors


def test_list_returns_every_item_across_pages_one_request_per_page(
    api: FakeApiServer, kube: KubeClient
) -> None:
    for i in range(7):
        api.add("pods", pod(f"bench-{i}"))
    listed = kube.list_pods(NAMESPACE, SELECTOR, page_size=3)
    assert names(listed.items) == [f"bench-{i}" for i in range(7)]
    assert listed.resource_version == api.resource_version
    assert kube.requests == Counter({"list pods": 3})
    pages = api.requests
    assert [request.query["limit"] for request in pages] == ["3", "3", "3"]
    assert "continue" not in pages[0].query and all("continue" in r.query for r in pages[1:])


def test_objects_are_the_apis_json_not_the_clients_model_classes(
    api: FakeApiServer, kube: KubeClient
) -> None:
    running = pod("bench-0", "Running")
    running["status"]["containerStatuses"] = [{"name": "bench", "restartCount": 0}]
    api.add("pods", running)
    (item,) = kube.list_pods(NAMESPACE, SELECTOR).items
    assert type(item) is dict
    assert item["status"]["containerStatuses"] == [{"name": "bench", "restartCount": 0}]
    assert item["metadata"]["resourceVersion"] == api.resource_version
    assert "kind" not in item  # as a real list's items


def test_label_selector_selects_the_workflows_pods_and_jobs(
    api: FakeApiServer, kube: KubeClient
) -> None:
    api.add("pods", pod("mine"))
    api.add("pods", pod("theirs", workflow="other"))
    api.add("jobs", job("my-job"))
    api.add("jobs", job("their-job", workflow="other"))
    assert names(kube.list_pods(NAMESPACE, SELECTOR).items) == ["mine"]
    assert names(kube.list_jobs(NAMESPACE, SELECTOR).items) == ["my-job"]
    assert {r.query["labelSelector"] for r in api.requests} == {SELECTOR}


def test_the_stand_in_rejects_selectors_it_cannot_evaluate(kube: KubeClient) -> None:
    with pytest.raises(KubeError, match="listing pods in benchfleet-dev") as raised:
        kube.list_pods(NAMESPACE, "workflow in (a,b)")
    assert raised.value.status == 400


def test_429_is_retried_after_the_retry_after_seconds_and_every_attempt_counted(
    api: FakeApiServer, kube: KubeClient, sleeps: list[float]
) -> None:
    api.add("pods", pod("bench-0"))
    api.fail_next(2, 429, retry_after=3)
    assert names(kube.list_pods(NAMESPACE, SELECTOR).items) == ["bench-0"]
    # Were urllib3's own retries on, it would have slept through both 429s unseen.
    assert sleeps == [3.0, 3.0]
    assert kube.requests == Counter({"list pods": 3})
    assert len(api.requests) == 3


def test_retry_after_is_capped_by_the_policys_max_delay(
    api: FakeApiServer, kube: KubeClient, sleeps: list[float]
) -> None:
    api.fail_next(1, 429, retry_after=3600)
    kube.list_pods(NAMESPACE, SELECTOR)
    assert sleeps == [POLICY.max_delay_s]


def test_503_is_retried_with_exponential_backoff_then_succeeds(
    api: FakeApiServer, kube: KubeClient, sleeps: list[float]
) -> None:
    api.add("jobs", job("bench"))
    api.fail_next(2, 503)
    assert names(kube.list_jobs(NAMESPACE, SELECTOR).items) == ["bench"]
    assert sleeps == [0.01, 0.02]
    assert kube.requests == Counter({"list jobs": 3})


def test_backoff_doubles_up_to_the_cap() -> None:
    policy = RetryPolicy(max_attempts=6, base_delay_s=0.5, max_delay_s=3.0)
    assert [policy.delay_s(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    with pytest.raises(ValueError, match="max_attempts"):
        RetryPolicy(max_attempts=0)


@pytest.mark.parametrize(
    ("status", "advice"),
    [
        (403, "the collector's ServiceAccount lacks `list pods`"),
        (401, "did not accept the collector's credentials"),
    ],
)
def test_an_auth_error_is_not_retried_and_says_what_failed_without_the_token(
    api: FakeApiServer, kube: KubeClient, status: int, advice: str
) -> None:
    api.fail_next(1, status, message='pods is forbidden: User "x" cannot list resource "pods"')
    with pytest.raises(KubeError) as raised:
        kube.list_pods(NAMESPACE, SELECTOR)
    message = str(raised.value)
    assert message.startswith(f"listing pods in {NAMESPACE} ({SELECTOR}): {status} ")
    assert advice in message and "cannot list resource" in message
    assert raised.value.status == status
    assert kube.requests == Counter({"list pods": 1})
    assert api.requests[0].authorization == f"Bearer {TOKEN}"  # it was sent...
    assert TOKEN not in message and TOKEN not in repr(raised.value.args)  # ...and is not shown
    assert raised.value.__cause__ is None and raised.value.__suppress_context__


def test_exhausted_retries_raise_with_the_attempt_count_and_last_error(
    api: FakeApiServer, kube: KubeClient, sleeps: list[float]
) -> None:
    api.fail_next(10, 500, message="etcdserver: request timed out")
    with pytest.raises(KubeError, match="gave up after 4 attempts") as raised:
        kube.list_pods(NAMESPACE, SELECTOR)
    assert "last error: 500 Internal Server Error: etcdserver: request timed out" in str(
        raised.value
    )
    assert kube.requests == Counter({"list pods": 4})
    assert sleeps == [0.01, 0.02, 0.04]


def test_refused_connections_are_retried_then_raise(
    api_client: client.ApiClient, sleeps: list[float]
) -> None:
    with FakeApiServer() as gone:
        api_client.configuration.host = gone.url
    kube = KubeClient(api_client, POLICY, sleep=sleeps.append)
    with pytest.raises(
        KubeError,
        match=r"gave up after 4 attempts.*cannot reach the API server at http://127.0.0.1",
    ):
        kube.list_pods(NAMESPACE, SELECTOR)
    assert kube.requests == Counter({"list pods": 4})
    assert sleeps == [0.01, 0.02, 0.04]


def test_an_expired_continue_token_restarts_the_list(api: FakeApiServer, kube: KubeClient) -> None:
    for i in range(5):
        api.add("pods", pod(f"bench-{i}"))
    api.fail_next(1, 410, path_contains="continue=")
    assert names(kube.list_pods(NAMESPACE, SELECTOR, page_size=2).items) == [
        f"bench-{i}" for i in range(5)
    ]
    # page 1, page 2 (410), then pages 1, 2, 3 again
    assert kube.requests == Counter({"list pods": 5})


# Logs, events, deletes


def test_pod_log_returns_the_containers_text_or_its_last_lines(
    api: FakeApiServer, kube: KubeClient
) -> None:
    api.set_log(NAMESPACE, "bench-0", "bench", 'warming up\nmeasuring\n{"result": 1}\n')
    assert kube.pod_log(NAMESPACE, "bench-0", "bench").startswith("warming up\n")
    assert kube.pod_log(NAMESPACE, "bench-0", "bench", tail_lines=1) == '{"result": 1}\n'
    assert api.requests[-1].query == {"container": "bench", "tailLines": "1"}
    assert kube.requests == Counter({"log": 2})


def test_a_missing_log_raises_naming_the_pod_and_container(kube: KubeClient) -> None:
    with pytest.raises(KubeError, match="reading the log of bench in pod benchfleet-dev/gone: 404"):
        kube.pod_log(NAMESPACE, "gone", "bench")


def test_events_for_returns_the_events_about_one_object(
    api: FakeApiServer, kube: KubeClient
) -> None:
    for name, reason in [("pending", "FailedScheduling"), ("other", "Pulled")]:
        event = {
            "metadata": {"name": f"{name}.1", "namespace": NAMESPACE},
            "involvedObject": {"kind": "Pod", "name": name, "namespace": NAMESPACE},
            "reason": reason,
            "message": "0/3 nodes are available",
        }
        api.add("events", event)
    events = kube.events_for(NAMESPACE, "Pod", "pending")
    assert [event["reason"] for event in events] == ["FailedScheduling"]
    assert api.requests[-1].query["fieldSelector"] == (
        "involvedObject.kind=Pod,involvedObject.name=pending"
    )
    assert kube.requests == Counter({"events": 1})


def test_delete_job_deletes_it_leaving_its_pods_to_the_garbage_collector(
    api: FakeApiServer, kube: KubeClient
) -> None:
    api.add("jobs", job("bench"))
    assert kube.delete_job(NAMESPACE, "bench") is True
    assert api.get("jobs", NAMESPACE, "bench") is None
    (request,) = api.requests
    assert (request.method, request.query) == ("DELETE", {"propagationPolicy": "Background"})


def test_deleting_a_job_that_is_already_gone_is_fine(kube: KubeClient) -> None:
    assert kube.delete_job(NAMESPACE, "gone") is False
    assert kube.requests == Counter({"delete job": 1})


# Following: list + watch


@pytest.mark.parametrize("kind", ["pods", "jobs"])
def test_a_follower_delivers_the_list_then_synced_then_each_change(
    api: FakeApiServer, follow: FollowFactory, kind: Kind
) -> None:
    make = FACTORIES[kind]
    api.add(kind, make("a"))
    api.add(kind, make("b"))
    api.add(kind, make("not-ours", workflow="other"))
    following = follow(kind)
    following.wait_for_syncs()
    api.add(kind, make("c"))
    stored = api.update(kind, make("a") | {"status": {"phase": "Running"}})
    api.delete(kind, NAMESPACE, "b")
    changes = following.wait_for_change("DELETED", "b")
    assert seen(changes) == [
        ("ADDED", "a"),
        ("ADDED", "b"),
        ("SYNCED", None),
        ("ADDED", "c"),
        ("MODIFIED", "a"),
        ("DELETED", "b"),
    ]
    assert all(change.kind == kind for change in changes)
    modified = changes[4].object
    assert modified is not None and modified["status"] == {"phase": "Running"}
    assert modified["metadata"] == stored["metadata"]
    (watch,) = watches(api)
    assert watch.query["allowWatchBookmarks"] == "true"
    assert watch.query["timeoutSeconds"] == str(WATCH_TIMEOUT_S)


def test_a_follower_delivers_what_keep_makes_of_each_listed_and_watched_object(
    api: FakeApiServer, follow: FollowFactory
) -> None:
    def keep(obj: Object) -> Object:
        return {"metadata": {"name": obj["metadata"]["name"]}, "kept": True}

    for name in ("a", "b", "c"):
        api.add("pods", pod(name))
    following = follow("pods", page_size=2, keep=keep)
    following.wait_for_syncs()
    api.update("pods", pod("a", "Running"))
    changes = following.wait_for_change("MODIFIED", "a")
    delivered = [change.object for change in changes if change.object is not None]
    assert delivered == [{"metadata": {"name": name}, "kept": True} for name in "abca"]
    listed = KubeClient(api.client()).list_pods(NAMESPACE, SELECTOR, page_size=2, keep=keep)
    assert listed.items == [{"metadata": {"name": name}, "kept": True} for name in "abc"]


def test_a_dropped_watch_resumes_from_the_last_resource_version_without_duplicates_or_losses(
    api: FakeApiServer, follow: FollowFactory
) -> None:
    api.add("pods", pod("a"))
    following = follow()
    following.wait_for_syncs()
    last = api.add("pods", pod("b"))
    following.wait_for_change("ADDED", "b")
    api.drop_watches()
    api.add("pods", pod("c"))
    api.update("pods", pod("a", "Running"))
    changes = following.wait_for_change("MODIFIED", "a")
    assert since_last_sync(changes) == [("ADDED", "b"), ("ADDED", "c"), ("MODIFIED", "a")]
    _, second = watches(api)
    assert second.query["resourceVersion"] == last["metadata"]["resourceVersion"]
    assert sum(not request.is_watch for request in api.requests) == 1  # no re-list


def test_bookmarks_move_the_resource_version_on_without_being_delivered(
    api: FakeApiServer, follow: FollowFactory
) -> None:
    following = follow()
    following.wait_for_syncs()
    wait_for_watches(api, 1)
    api.add("pods", pod("someone-elses", workflow="other"))
    api.bookmark()
    api.drop_watches()
    wait_for_watches(api, 2)
    assert watches(api)[1].query["resourceVersion"] == api.resource_version
    assert seen(following.changes) == [("SYNCED", None)]


def test_an_expired_watch_relists_and_delivers_synced_again(
    api: FakeApiServer, follow: FollowFactory
) -> None:
    api.add("pods", pod("a"))
    following = follow()
    following.wait_for_syncs()
    api.add("pods", pod("b"))
    api.expire_history()
    changes = following.wait_for_syncs(2)
    assert last_listing(changes) == ["a", "b"]
    api.add("pods", pod("c"))
    assert since_last_sync(following.wait_for_change("ADDED", "c")) == [("ADDED", "c")]


def test_an_http_410_when_rewatching_relists(api: FakeApiServer, follow: FollowFactory) -> None:
    api.add("pods", pod("a"))
    following = follow()
    following.wait_for_syncs()
    wait_for_watches(api, 1)
    api.fail_next(1, 410, path_contains="watch=true")
    api.drop_watches()
    assert last_listing(following.wait_for_syncs(2)) == ["a"]
    assert sum(not request.is_watch for request in api.requests) == 2


def test_stop_ends_the_follower_within_the_watch_timeout(
    api: FakeApiServer, follow: FollowFactory
) -> None:
    following = follow(watch_timeout_s=WATCH_TIMEOUT_S)
    following.wait_for_syncs()
    wait_for_watches(api, 1)
    assert following.halt() < WATCH_TIMEOUT_S
    assert following.error is None


def test_failing_watches_are_retried_with_backoff_and_resume(
    api: FakeApiServer, follow: FollowFactory, sleeps: list[float]
) -> None:
    following = follow()
    following.wait_for_syncs()
    wait_for_watches(api, 1)
    api.fail_next(2, 503, path_contains="watch=true")
    api.drop_watches()
    wait_for_watches(api, 4)
    api.add("pods", pod("a"))
    following.wait_for_change("ADDED", "a")
    assert sleeps == [0.01, 0.02, 0.04]  # the drop, then each 503


def test_consecutive_watch_failures_raise_after_max_attempts(
    api: FakeApiServer, follow: FollowFactory
) -> None:
    following = follow()
    following.wait_for_syncs()
    wait_for_watches(api, 1)
    api.fail_next(10, 503, path_contains="watch=true")
    api.drop_watches()
    error = following.wait_for_end()
    assert isinstance(error, KubeError)
    assert str(error).startswith(f"watching pods in {NAMESPACE} ({SELECTOR}): gave up after 4")
    assert "503" in str(error)


def test_a_watch_refused_for_lack_of_permission_raises_at_once(
    api: FakeApiServer, follow: FollowFactory
) -> None:
    api.fail_next(1, 403, path_contains="watch=true")
    error = follow().wait_for_end()
    assert isinstance(error, KubeError) and error.status == 403
    assert "lacks `watch pods`" in str(error)
    assert len(watches(api)) == 1


def test_following_pods_to_completion_costs_the_same_requests_for_200_as_for_20() -> None:
    def follow_to_completion(count: int) -> Counter[str]:
        with FakeApiServer() as api:
            for i in range(count):
                api.add("pods", pod(f"bench-{i:03d}"))
            kube = KubeClient(api.client(), POLICY)
            follower = Follower(kube, "pods", NAMESPACE, SELECTOR, page_size=50)
            # A long window, so that no window ends while the pods run, however slow the host.
            following = Following(follower, watch_timeout_s=60)
            following.wait_for_syncs()
            for phase in ("Running", "Succeeded"):
                for i in range(count):
                    api.update("pods", pod(f"bench-{i:03d}", phase))

            def done(changes: list[Change]) -> bool:
                finished = {
                    change.object["metadata"]["name"]
                    for change in changes
                    if change.object and change.object["status"]["phase"] == "Succeeded"
                }
                return len(finished) == count

            following.wait_for(done)
            following.halt()
            return kube.requests

    assert follow_to_completion(20) == Counter({"list pods": 1, "watch pods": 1})
    assert follow_to_completion(200) == Counter({"list pods": 4, "watch pods": 1})  # 4 pages
