"""The collector's only door to the Kubernetes API server.

Everything the collector asks a cluster goes through `KubeClient` (lists, logs, events, deletes)
and `Follower` (list + watch of a workflow's Jobs or pods). Objects are plain dicts shaped
exactly like the API's JSON (`metadata.resourceVersion`, `status.containerStatuses`), not the
client library's model classes: the modules that interpret them, and their tests, work on what
`kubectl get -o json` shows. So every call asks for the raw response (`_preload_content=False`)
and decodes its body itself. A list or a follower may be given `keep`, what to hold of each
object (gather holds pods as `pods.held_pod` cuts them).

Transient failures (429, 500, 502, 503, 504, broken connections) are retried with bounded,
deterministic exponential backoff; anything else raises `KubeError` at once with a message that
says, in words, what was being done and what to fix. Messages never carry credentials or
request headers. `KubeClient.requests` counts every HTTP request by kind, retries included, so
a benchmark can show that following a workflow costs the same number of calls however many
variants it has.
"""

import contextlib
import http.client
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from http import HTTPStatus
from typing import Any, Final, Literal, TypeVar, cast

import urllib3
from kubernetes.client import ApiClient, ApiException, BatchV1Api, CoreV1Api, rest
from kubernetes.watch.watch import iter_resp_lines

from collector.redact import Redactor

Object = dict[str, Any]
Keep = Callable[[Object], Object]
"""What a caller holds of each listed or watched object: applied as each page or event
arrives, so a large list never holds every object whole at once."""
Kind = Literal["jobs", "pods"]
ChangeType = Literal["ADDED", "MODIFIED", "DELETED", "SYNCED"]

T = TypeVar("T")

RETRIED_STATUSES: Final = frozenset({429, 500, 502, 503, 504})
# Broken or refused connections, whether urllib3 wraps them or http.client raises them bare.
CONNECTION_ERRORS: Final = (
    urllib3.exceptions.ProtocolError,
    urllib3.exceptions.MaxRetryError,
    urllib3.exceptions.NewConnectionError,
    urllib3.exceptions.TimeoutError,
    http.client.HTTPException,
    ConnectionError,
)
DEFAULT_PAGE_SIZE: Final = 500
# A watch's read timeout is its window plus this: the server ends a window itself, so a read
# that waits longer than that is a connection that died without closing.
_WATCH_READ_SLACK_S: Final = 30
# How often a follower's stop watcher looks for the end of `run`, once stop is still unset.
_STOP_POLL_S: Final = 0.2
_RBAC_FILE: Final = "dist/<cluster>/infrastructure/rbac.yaml"


class KubeError(RuntimeError):
    """A request to the API server failed for good; the message says what and why in words."""

    def __init__(self, message: str, *, status: int | None = None, late: bool = False) -> None:
        super().__init__(message)
        self.status = status
        # Given up at its deadline, rather than for an error that retrying would repeat.
        self.late = late

    @property
    def forbidden(self) -> bool:
        """The credential may not do this (403): its Role's scope, not a fault."""
        return self.status == HTTPStatus.FORBIDDEN


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry a transient failure.

    The wait before attempt n+1 is base_delay_s * 2**(n-1), at most max_delay_s, or the
    server's Retry-After (also at most max_delay_s). No jitter: one collector per cluster has no
    herd to spread, and fixed delays keep runs and tests reproducible.
    """

    max_attempts: int = 6
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, not {self.max_attempts}")
        if self.base_delay_s < 0 or self.max_delay_s < 0:
            raise ValueError("retry delays cannot be negative")

    def delay_s(self, failures: int, retry_after_s: float | None = None) -> float:
        """The wait after `failures` consecutive failures, the last with this Retry-After."""
        if retry_after_s is not None:
            return min(retry_after_s, self.max_delay_s)
        return float(min(self.base_delay_s * 2 ** (failures - 1), self.max_delay_s))


@dataclass(frozen=True)
class ObjectList:
    """Every item of a (possibly paginated) list, and the resourceVersion to watch from."""

    items: list[Object]
    resource_version: str


@dataclass(frozen=True)
class Change:
    """One change to a followed collection.

    SYNCED carries no object: it means a complete list was just delivered as ADDED changes,
    and any object seen before but not in that list is gone.
    """

    kind: Kind
    type: ChangeType
    object: Object | None


@dataclass(frozen=True)
class _Operation:
    """What a request does, for the request counter and for error messages."""

    counter: str
    verb: str
    resource: str
    doing: str

    def explain(self, failure: "_Failure") -> str:
        """The message for a failure that retrying will not fix."""
        message = f"{self.doing}: {failure.summary}"
        if failure.status == 401:
            message += (
                "; the API server did not accept the collector's credentials "
                "(an expired token, or the wrong kubeconfig?)"
            )
        elif failure.status == 403:
            message += (
                f"; the collector's ServiceAccount lacks `{self.verb} {self.resource}`: see the "
                f"benchfleet-collector Role in {_RBAC_FILE}"
            )
        return message

    def gave_up(self, attempts: int, failure: "_Failure") -> str:
        """The message once retries are exhausted."""
        return f"{self.doing}: gave up after {attempts} attempts; last error: {failure.summary}"


class _Failure(Exception):
    """One failed request, classified for the retry loops."""

    def __init__(
        self,
        summary: str,
        *,
        status: int | None = None,
        retryable: bool,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(summary)
        self.summary = summary
        self.status = status
        self.retryable = retryable
        self.retry_after_s = retry_after_s

    def masked(self, redact: Callable[[str], str]) -> "_Failure":
        """The same failure, its words passed through `redact`."""
        return _Failure(
            redact(self.summary),
            status=self.status,
            retryable=self.retryable,
            retry_after_s=self.retry_after_s,
        )


class _Gone(Exception):
    """The resourceVersion a watch started from is older than the server keeps (410)."""


def _retry_after_s(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        seconds = float(str(value))
    except (TypeError, ValueError):
        # Absent, or an HTTP date: Kubernetes sends whole seconds, so fall back to backoff.
        return None
    return seconds if seconds >= 0 else None


def _status_message(body: object) -> str | None:
    if not isinstance(body, str | bytes) or not body:
        return None
    try:
        status = json.loads(body)
    except ValueError:
        return None
    message = status.get("message") if isinstance(status, dict) else None
    return str(message) if message else None


def _api_failure(error: ApiException) -> _Failure:
    # Only the status, its reason phrase and the Status message: never str(error), which
    # includes the response headers.
    status = cast(int | None, error.status)
    if not status:
        reason = str(error.reason or "no response").splitlines()
        return _Failure(f"request failed: {' '.join(reason)}", retryable=False)
    summary = f"{status} {error.reason}" if error.reason else str(status)
    message = _status_message(error.body)
    if message:
        summary += f": {message}"
    retry_after = _retry_after_s(error.headers) if status == 429 else None
    return _Failure(
        summary, status=status, retryable=status in RETRIED_STATUSES, retry_after_s=retry_after
    )


def _status_failure(status: Object) -> _Failure:
    """A failure from an ERROR watch event's Status object."""
    code = status.get("code")
    summary = f"{code} {status.get('reason', '')}".strip() + f": {status.get('message', '')}"
    retryable = code in RETRIED_STATUSES
    return _Failure(summary, status=code if isinstance(code, int) else None, retryable=retryable)


def _connection_failure(error: Exception, server: str) -> _Failure:
    # MaxRetryError's own text repeats the URL; its reason is the error that matters.
    cause = error.reason if isinstance(error, urllib3.exceptions.MaxRetryError) else error
    summary = f"cannot reach the API server at {server}: {type(cause).__name__}: {cause}"
    return _Failure(summary, retryable=True)


def _within(timeout_s: float, deadline: float | None) -> float:
    """A request's timeout that ends by `deadline` (a moment of time.monotonic()), if any."""
    if deadline is None:
        return timeout_s
    return max(min(timeout_s, deadline - time.monotonic()), 0.001)


def _raw(response: object) -> urllib3.BaseHTTPResponse:
    """What a generated API method returns with `_preload_content=False`, whatever its
    annotation says (the deserialized model it returns otherwise)."""
    return cast(urllib3.BaseHTTPResponse, response)


def _read_json(response: object) -> Object:
    response = _raw(response)
    try:
        return cast(Object, json.loads(response.data))
    finally:
        response.release_conn()


class KubeClient:
    """Requests to one API server, retried on transient failures and counted by kind.

    Retrying becomes this class's job alone: it turns urllib3's own retries off in
    `api_client`'s configuration (and gives it a fresh connection pool to match). Left on, they
    re-send a request after a broken connection, and sleep through a Retry-After on a 429 or
    503 up to three times, where RetryPolicy can neither count nor bound them.

    `sleep` replaces the waits between attempts (tests pass a recorder); by default a wait is
    real time, cut short by a follower's stop event. `redactor` masks the credentials'
    secrets (credentials.Connection's) in every message, besides the token the client sends
    and any URL's userinfo. Safe to share between followers' threads.
    """

    def __init__(
        self,
        api_client: ApiClient,
        retry: RetryPolicy | None = None,
        *,
        sleep: Callable[[float], object] | None = None,
        request_timeout_s: float = 60.0,
        redactor: Redactor | None = None,
    ) -> None:
        configuration = api_client.configuration
        if configuration.retries is not False:
            configuration.retries = False
            api_client.rest_client.close()
            api_client.rest_client = rest.RESTClientObject(configuration)
        self._core = CoreV1Api(api_client)
        self._batch = BatchV1Api(api_client)
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._timeout_s = request_timeout_s
        self._lock = threading.Lock()
        self.requests: Counter[str] = Counter()
        self._configuration = configuration
        self._redactor = redactor or Redactor()
        self.server: str = self.redact(configuration.host)
        self.last_failure: str | None = None
        """What the latest failed request was doing and how it failed, retried or not."""

    def redact(self, text: str) -> str:
        """`text` with every credential masked: the kubeconfig's, and what the client sends
        now (an exec plugin's or a service account's token, read after the kubeconfig)."""
        sent = [*self._configuration.api_key.values(), self._configuration.password or ""]
        return self._redactor.adding(s.removeprefix("Bearer ") for s in sent)(text)

    def list_jobs(
        self, namespace: str, label_selector: str, *, page_size: int = DEFAULT_PAGE_SIZE
    ) -> ObjectList:
        """Every Job in `namespace` matching `label_selector`, one request per page."""
        return self._list("jobs", namespace, label_selector, page_size)

    def list_pods(
        self,
        namespace: str,
        label_selector: str,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        keep: Keep | None = None,
    ) -> ObjectList:
        """Every pod in `namespace` matching `label_selector`, one request per page."""
        return self._list("pods", namespace, label_selector, page_size, keep=keep)

    def pod_log(
        self,
        namespace: str,
        name: str,
        container: str,
        tail_lines: int | None = None,
        *,
        deadline: float | None = None,
    ) -> str:
        """A container's log (its last `tail_lines` lines if given), undecodable bytes replaced;
        retried only until `deadline` (time.monotonic()), then a KubeError that is `late`."""
        operation = _Operation(
            "log", "get", "pods/log", f"reading the log of {container} in pod {namespace}/{name}"
        )

        def request() -> str:
            # Each attempt waits no longer than the deadline leaves.
            timeout_s = _within(self._timeout_s, deadline)
            return self._read_log(namespace, name, container, tail_lines, None, timeout_s=timeout_s)

        return self._call(operation, request, deadline=deadline)

    def log_tail(
        self,
        namespace: str,
        name: str,
        container: str,
        *,
        lines: int,
        limit_bytes: int,
        timeout_s: float,
    ) -> str:
        """The last `lines` lines of a running container's log, at most `limit_bytes` of them
        (the server keeps the tail's first bytes), in one request counted as "log tail": never
        retried, since whoever samples logs asks again later anyway."""
        operation = _Operation(
            "log tail",
            "get",
            "pods/log",
            f"reading the end of the log of {container} in pod {namespace}/{name}",
        )
        request = partial(
            self._read_log, namespace, name, container, lines, limit_bytes, timeout_s=timeout_s
        )
        try:
            return self._attempt(operation, request)
        except _Failure as failure:
            raise KubeError(operation.explain(failure), status=failure.status) from None

    def _read_log(
        self,
        namespace: str,
        name: str,
        container: str,
        tail_lines: int | None,
        limit_bytes: int | None,
        *,
        timeout_s: float,
    ) -> str:
        response = _raw(
            self._core.read_namespaced_pod_log(
                name,
                namespace,
                container=container,
                tail_lines=tail_lines,
                limit_bytes=limit_bytes,
                _preload_content=False,
                _request_timeout=timeout_s,
            )
        )
        try:
            return response.data.decode("utf-8", errors="replace")
        finally:
            response.release_conn()

    def events_for(self, namespace: str, kind: str, name: str) -> list[Object]:
        """The events about one object (kind as in the API: "Pod", "Job"), in the server's
        order (by name, which is not quite by time)."""
        operation = _Operation(
            "events", "list", "events", f"listing events for {kind} {namespace}/{name}"
        )
        selector = f"involvedObject.kind={kind},involvedObject.name={name}"

        def request() -> Object:
            return _read_json(
                self._core.list_namespaced_event(
                    namespace,
                    field_selector=selector,
                    _preload_content=False,
                    _request_timeout=self._timeout_s,
                )
            )

        return cast(list[Object], self._call(operation, request).get("items") or [])

    def read_configmap(
        self, namespace: str, name: str, *, deadline: float | None = None
    ) -> Object | None:
        """A ConfigMap, or None if there is none by that name; retried only until `deadline`
        (time.monotonic()), then a KubeError that is `late`."""
        operation = _Operation(
            "get configmap", "get", "configmaps", f"reading ConfigMap {namespace}/{name}"
        )

        def request() -> Object:
            timeout_s = _within(self._timeout_s, deadline)
            return _read_json(
                self._core.read_namespaced_config_map(
                    name, namespace, _preload_content=False, _request_timeout=timeout_s
                )
            )

        try:
            return self._call(operation, request, deadline=deadline)
        except KubeError as error:
            if error.status == 404:
                return None
            raise

    def apply_configmap(self, configmap: Object, field_manager: str) -> None:
        """Create or update a ConfigMap to hold what `configmap` says, by server-side apply
        (one request either way; the fields `field_manager` set before and left out now go)."""
        metadata = configmap["metadata"]
        namespace, name = metadata["namespace"], metadata["name"]
        operation = _Operation(
            "apply configmap", "patch", "configmaps", f"applying ConfigMap {namespace}/{name}"
        )

        def request() -> Object:
            return _read_json(
                self._core.patch_namespaced_config_map(
                    name,
                    namespace,
                    configmap,
                    field_manager=field_manager,
                    force=True,
                    _content_type="application/apply-patch+yaml",
                    _preload_content=False,
                    _request_timeout=self._timeout_s,
                )
            )

        self._call(operation, request)

    def delete_job(self, namespace: str, name: str) -> bool:
        """Delete a Job and, in the background, its pods; False if it was already gone."""
        operation = _Operation("delete job", "delete", "jobs", f"deleting Job {namespace}/{name}")

        def request() -> Object:
            return _read_json(
                self._batch.delete_namespaced_job(
                    name,
                    namespace,
                    propagation_policy="Background",
                    _preload_content=False,
                    _request_timeout=self._timeout_s,
                )
            )

        try:
            self._call(operation, request)
        except KubeError as error:
            if error.status == 404:
                return False
            raise
        return True

    def _list(
        self,
        kind: Kind,
        namespace: str,
        label_selector: str,
        page_size: int,
        stop: threading.Event | None = None,
        *,
        keep: Keep | None = None,
    ) -> ObjectList:
        operation = _Operation(
            f"list {kind}", "list", kind, f"listing {kind} in {namespace} ({label_selector})"
        )
        lister = self._lister(kind)
        restarts = 0
        while True:
            items: list[Object] = []
            token: str | None = None
            resource_version: str | None = None
            try:
                while True:
                    page = self._call(
                        operation,
                        self._page_request(lister, namespace, label_selector, page_size, token),
                        stop,
                    )
                    listed = page.get("items") or []
                    items.extend(map(keep, listed) if keep else listed)
                    metadata = page.get("metadata") or {}
                    # Let this page go before the next one is decoded: whole pods are 50 KiB
                    # each, and two pages of them were the peak of a large gather.
                    del page, listed
                    resource_version = resource_version or str(metadata["resourceVersion"])
                    token = metadata.get("continue") or None
                    if token is None:
                        return ObjectList(items, resource_version)
            except KubeError as error:
                # A continue token expires with its snapshot, after a few minutes (410): start
                # the list over, as often as the policy allows attempts.
                restarts += 1
                if error.status != 410 or token is None or restarts >= self.retry.max_attempts:
                    raise

    def _lister(self, kind: Kind) -> Callable[..., Any]:
        """The API method that lists (and, with watch=True, watches) `kind`."""
        return self._core.list_namespaced_pod if kind == "pods" else self._batch.list_namespaced_job

    def _page_request(
        self,
        lister: Callable[..., Any],
        namespace: str,
        label_selector: str,
        page_size: int,
        token: str | None,
    ) -> Callable[[], Object]:
        def request() -> Object:
            return _read_json(
                lister(
                    namespace,
                    label_selector=label_selector,
                    limit=page_size,
                    _continue=token,
                    _preload_content=False,
                    _request_timeout=self._timeout_s,
                )
            )

        return request

    def _open_watch(
        self,
        operation: _Operation,
        kind: Kind,
        namespace: str,
        label_selector: str,
        *,
        resource_version: str,
        timeout_s: int,
    ) -> urllib3.BaseHTTPResponse:
        """One attempt at opening a watch window: the streaming response, or a `_Failure`."""
        watcher = self._lister(kind)

        def request() -> urllib3.BaseHTTPResponse:
            return _raw(
                watcher(
                    namespace,
                    label_selector=label_selector,
                    watch=True,
                    resource_version=resource_version,
                    allow_watch_bookmarks=True,
                    timeout_seconds=timeout_s,
                    _preload_content=False,
                    _request_timeout=(self._timeout_s, timeout_s + _WATCH_READ_SLACK_S),
                ),
            )

        return self._attempt(operation, request)

    def _attempt(self, operation: _Operation, request: Callable[[], T]) -> T:
        """One counted request; failures come out classified as `_Failure`."""
        with self._lock:
            self.requests[operation.counter] += 1
        try:
            return request()
        except ApiException as error:
            failure = _api_failure(error)
        except CONNECTION_ERRORS as error:
            failure = _connection_failure(error, self.server)
        # The server's own words too: a proxy's error page may echo a request's header.
        failure = failure.masked(self.redact)
        self.last_failure = f"{operation.doing}: {failure.summary}"
        raise failure

    def _call(
        self,
        operation: _Operation,
        request: Callable[[], T],
        stop: threading.Event | None = None,
        *,
        deadline: float | None = None,
    ) -> T:
        """`request`, retried per the policy (and not past `deadline`, if given); KubeError
        when it fails for good."""
        failures = 0
        while True:
            try:
                return self._attempt(operation, request)
            except _Failure as failure:
                if not failure.retryable:
                    raise KubeError(operation.explain(failure), status=failure.status) from None
                failures += 1
                if failures >= self.retry.max_attempts:
                    message = operation.gave_up(failures, failure)
                    raise KubeError(message, status=failure.status) from None
                delay = self.retry.delay_s(failures, failure.retry_after_s)
                if deadline is not None and time.monotonic() + delay >= deadline:
                    message = f"{operation.doing}: not done in time; last error: {failure.summary}"
                    raise KubeError(message, status=failure.status, late=True) from None
                self._pause(delay, stop)

    def _pause(self, delay_s: float, stop: threading.Event | None) -> None:
        if self._sleep is not None:
            self._sleep(delay_s)
        elif stop is not None:
            stop.wait(delay_s)
        else:
            time.sleep(delay_s)


class Follower:
    """Follows one collection (a workflow's Jobs or pods) with list + watch.

    A constant number of requests however many objects match: one list (a request per page),
    then one watch request per window, and a re-list only when the server has forgotten the
    resourceVersion the watch would resume from.
    """

    def __init__(
        self,
        client: KubeClient,
        kind: Kind,
        namespace: str,
        label_selector: str,
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        keep: Keep | None = None,
    ) -> None:
        self._client = client
        self._keep = keep
        self._kind: Kind = kind
        self._namespace = namespace
        self._selector = label_selector
        self._page_size = page_size
        self._operation = _Operation(
            f"watch {kind}", "watch", kind, f"watching {kind} in {namespace} ({label_selector})"
        )
        self._lock = threading.Lock()
        self._response: urllib3.BaseHTTPResponse | None = None
        self._resource_version = ""
        self._failures = 0

    def run(
        self, sink: Callable[[Change], None], stop: threading.Event, watch_timeout_s: int = 300
    ) -> None:
        """Deliver the collection to `sink` until `stop` is set: the current list as ADDED
        changes and SYNCED, then every change as it happens (again a list and SYNCED whenever
        the watch has to start over). Returns soon after `stop` is set, even mid-window.

        Raises KubeError when a request fails for good, or after the retry policy's
        max_attempts consecutive failures to watch.
        """
        finished = threading.Event()
        watcher = threading.Thread(
            target=self._interrupt_on_stop,
            args=(stop, finished),
            name=f"stop {self._operation.doing}",
            daemon=True,
        )
        watcher.start()
        try:
            self._follow(sink, stop, watch_timeout_s)
        except KubeError:
            if not stop.is_set():
                raise
        finally:
            finished.set()

    def _follow(
        self, sink: Callable[[Change], None], stop: threading.Event, watch_timeout_s: int
    ) -> None:
        self._relist(sink, stop)
        while not stop.is_set():
            try:
                self._watch_window(sink, stop, watch_timeout_s)
                self._failures = 0
            except _Gone:
                self._relist(sink, stop)
            except _Failure as failure:
                if stop.is_set():
                    return
                self._after_failure(failure, stop)

    def _relist(self, sink: Callable[[Change], None], stop: threading.Event) -> None:
        listing = self._client._list(
            self._kind, self._namespace, self._selector, self._page_size, stop, keep=self._keep
        )
        for item in listing.items:
            sink(Change(self._kind, "ADDED", item))
        sink(Change(self._kind, "SYNCED", None))
        self._resource_version = listing.resource_version
        self._failures = 0

    def _after_failure(self, failure: _Failure, stop: threading.Event) -> None:
        if not failure.retryable:
            raise KubeError(self._operation.explain(failure), status=failure.status)
        self._failures += 1
        if self._failures >= self._client.retry.max_attempts:
            message = self._operation.gave_up(self._failures, failure)
            raise KubeError(message, status=failure.status)
        delay = self._client.retry.delay_s(self._failures, failure.retry_after_s)
        self._client._pause(delay, stop)

    def _watch_window(
        self, sink: Callable[[Change], None], stop: threading.Event, timeout_s: int
    ) -> None:
        """One watch request, from the last resourceVersion seen, until the server ends it."""
        try:
            response = self._client._open_watch(
                self._operation,
                self._kind,
                self._namespace,
                self._selector,
                resource_version=self._resource_version,
                timeout_s=timeout_s,
            )
        except _Failure as failure:
            if failure.status == 410:
                raise _Gone from None
            raise
        with self._lock:
            self._response = response
        try:
            # The stop watcher may have fired before the response was there to interrupt.
            if stop.is_set():
                return
            # The client library's own splitter, so lines break exactly as its Watch breaks them.
            for line in iter_resp_lines(response):  # type: ignore[no-untyped-call]
                if stop.is_set():
                    return
                if line:
                    self._handle(line, sink)
        except CONNECTION_ERRORS as error:
            words = self._client.redact(f"{type(error).__name__}: {error}")
            raise _Failure(f"the watch connection broke: {words}", retryable=True) from None
        finally:
            with self._lock:
                self._response = None
            response.close()
            response.release_conn()

    def _handle(self, line: str, sink: Callable[[Change], None]) -> None:
        try:
            event = json.loads(line)
            type_, obj = event["type"], event["object"]
            if type_ == "ERROR":
                if obj.get("code") == 410:
                    raise _Gone
                raise _status_failure(obj).masked(self._client.redact)
            resource_version = str(obj["metadata"]["resourceVersion"])
        except (ValueError, KeyError, TypeError, AttributeError):
            raise _Failure("the watch sent a line that is not an event", retryable=True) from None
        if type_ in ("ADDED", "MODIFIED", "DELETED"):
            sink(Change(self._kind, type_, self._keep(obj) if self._keep else obj))
        # BOOKMARKs only move the resourceVersion on, so a re-watch skips what they covered.
        self._resource_version = resource_version
        self._failures = 0

    def _interrupt_on_stop(self, stop: threading.Event, finished: threading.Event) -> None:
        """Unblock a watch waiting for its next event once `stop` is set, rather than letting
        `run` wait out the window."""
        while not stop.wait(_STOP_POLL_S):
            if finished.is_set():
                return
        with self._lock:
            if self._response is not None:
                # Already closed or released: the stream is ending anyway.
                with contextlib.suppress(OSError, ValueError, RuntimeError):
                    self._response.shutdown()
