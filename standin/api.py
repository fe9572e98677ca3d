"""A stand-in for a Kubernetes API server, for the faults a real one cannot be made to show.

tests/cluster/ runs the collector against a real API server (localcluster/). These tests
keep this stand-in for what that cannot do on demand: 429s with Retry-After, 5xx bursts,
watches cut mid-stream, expired histories and continue tokens, thousands of variants.

The collector's tests drive the real `kubernetes` client against this small threaded HTTP/1.1
server on 127.0.0.1 (a random port), so that what they exercise is the client's own request
building, header handling, streaming and error mapping, not a mock of it. It holds jobs, pods,
events and pod logs in memory, per namespace, under one resourceVersion counter, and implements:

- GET /apis/batch/v1/namespaces/{ns}/jobs and /api/v1/namespaces/{ns}/pods: lists, with an
  equality-based `labelSelector` (`a=b,c==d`; anything else is a 400, so a test notices a
  selector this server would silently misread) and `limit` + `continue` pagination. Items are
  sorted by name and carry no kind/apiVersion, as a real list's items do. Pages after the
  first serve the objects as they are now, not a snapshot (a real server serves a snapshot).
- the same paths with `watch=true`: a chunked stream of JSON lines, each `{"type", "object"}`,
  for changes after `resourceVersion` (all current objects as ADDED when it is absent),
  BOOKMARK events when `allowWatchBookmarks=true` (at the end of each window and on
  `bookmark()`), closing after `timeoutSeconds`. A resourceVersion older than the retained
  history gets an ERROR event carrying a 410 Expired Status, then the stream ends (as open
  watches do when the history is expired); a continue token from before that gets an HTTP
  410. A watch matches an object on its labels as they are in each event: unlike a real
  server it sends no DELETED for an object whose labels stop matching.
- GET .../pods/{name}/log with `container`, `tailLines` and `limitBytes` (the first bytes of
  the tail, as the kubelet cuts them): text/plain.
- GET /api/v1/namespaces/{ns}/configmaps/{name}: the object, or a 404 Status.
- PATCH of the same path as a server-side apply (`application/apply-patch+yaml`, with
  `fieldManager` and `force`; the body in JSON, which is YAML): creates the ConfigMap or
  replaces its labels, ownerReferences and data with the body's, as a real server does for
  the one field manager that owns them; 201 or 200 with the object. Any other PATCH is a
  415 Status.
- GET /api/v1/namespaces/{ns}/events with an equality-based `fieldSelector` on dotted paths
  (`involvedObject.kind=Pod,involvedObject.name=p`).
- DELETE /apis/batch/v1/namespaces/{ns}/jobs/{name}: a Success Status, or a 404 Status. The
  pods are left alone (a real server's garbage collector deletes them later).

Every error is a Kubernetes Status object with the matching HTTP status. Query parameters it
does not know are ignored, as a real server ignores those it does not use.

Test controls are Python methods, not HTTP: `add`, `update`, `delete` (each bumps the
resourceVersion and wakes open watches), `set_log`, `fail_next` (answer the next requests
with an error Status), `drop_watches` (cut open watch connections mid-stream), `bookmark`,
`expire_history` (make every resourceVersion so far too old), `hold` and `release` (keep a
collection's later changes from its watches, not from lists: one watch lags behind another, as
the two watches of a real server may), and `requests`, a log of what
was asked (with the Authorization header, so a test can tell a token was sent), so tests
can count API calls. Use it as a context manager; `client()` returns a
`kubernetes.client.ApiClient` for it.
"""

import base64
import bisect
import copy
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final, Literal, Self
from urllib.parse import parse_qs, urlsplit

from kubernetes.client import ApiClient, Configuration

Object = dict[str, Any]
Collection = Literal["jobs", "pods", "events", "configmaps"]

# What each collection's objects and lists are called in the API, by collection.
_KINDS: Final[dict[str, tuple[str, str]]] = {
    "jobs": ("Job", "batch/v1"),
    "pods": ("Pod", "v1"),
    "events": ("Event", "v1"),
    "configmaps": ("ConfigMap", "v1"),
}
_COLLECTION_PATH: Final = re.compile(
    r"/(?:api/v1|apis/batch/v1)/namespaces/(?P<ns>[^/]+)/(?P<collection>jobs|pods|events)"
)
_JOB_PATH: Final = re.compile(r"/apis/batch/v1/namespaces/(?P<ns>[^/]+)/jobs/(?P<name>[^/]+)")
_CONFIGMAP_PATH: Final = re.compile(r"/api/v1/namespaces/(?P<ns>[^/]+)/configmaps/(?P<name>[^/]+)")
_LOG_PATH: Final = re.compile(r"/api/v1/namespaces/(?P<ns>[^/]+)/pods/(?P<name>[^/]+)/log")
_SELECTOR_TERM: Final = re.compile(r"(?P<key>[A-Za-z0-9._/-]+)==?(?P<value>[A-Za-z0-9._-]*)")
_FIELD_TERM: Final = re.compile(r"(?P<key>[A-Za-z0-9.]+)==?(?P<value>[^=,!]*)")
_REASONS: Final = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    410: "Expired",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


@dataclass(frozen=True)
class Request:
    """One request the server received: what tests count and inspect."""

    method: str
    path: str
    query: dict[str, str]
    authorization: str | None

    @property
    def is_watch(self) -> bool:
        """Whether this was a watch rather than a list or a read."""
        return self.query.get("watch") in {"true", "1"}


@dataclass
class _Failure:
    remaining: int
    status: int
    retry_after: int | None
    path_contains: str | None
    message: str | None


@dataclass(frozen=True)
class _Change:
    resource_version: int
    collection: str
    namespace: str
    type: str
    object: Object


@dataclass
class _Watch:
    """One open watch: what it selects, until when, and how far it has got."""

    collection: str
    namespace: str
    labels: dict[str, str]
    fields: dict[str, str]
    bookmarks: bool
    deadline: float
    cursor: int
    # How many of the server's signals this watch has acted on.
    signals_seen: int
    pending: list[tuple[str, Object]] = field(default_factory=list)


@dataclass
class _State:
    """Everything the server holds, guarded by `changed`'s lock."""

    changed: threading.Condition = field(default_factory=threading.Condition)
    resource_version: int = 1
    objects: dict[tuple[str, str], dict[str, Object]] = field(default_factory=dict)
    # Each collection's names in list order, kept sorted as objects come and go, so that a page
    # costs what it holds rather than a sort and a copy of everything after it.
    names: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    history: list[_Change] = field(default_factory=list)
    oldest_watchable: int = 0
    logs: dict[tuple[str, str, str], str] = field(default_factory=dict)
    failures: list[_Failure] = field(default_factory=list)
    # Test controls that open watches act on, in order: (resourceVersion when given, which).
    signals: list[tuple[int, Literal["drop", "bookmark", "expire"]]] = field(default_factory=list)
    # Per collection, the last resourceVersion its watches may send while `hold` is on.
    held: dict[str, int] = field(default_factory=dict)
    closing: bool = False


class _BadRequest(Exception):
    """A request this server rejects with a 400 Status."""


class _Expired(Exception):
    """A resourceVersion or continue token older than the retained history."""


def _status(code: int, message: str) -> Object:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": _REASONS.get(code, HTTPStatus(code).phrase.replace(" ", "")),
        "code": code,
    }


def _parse_selector(text: str, term: re.Pattern[str]) -> dict[str, str]:
    wanted: dict[str, str] = {}
    for part in filter(None, text.split(",")):
        match = term.fullmatch(part.strip())
        if match is None:
            raise _BadRequest(f"unable to parse requirement {part!r}: only a=b is supported here")
        wanted[match["key"]] = match["value"]
    return wanted


def _field(obj: Object, dotted: str) -> str | None:
    value: Any = obj
    for key in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return None if value is None else str(value)


def _matches(obj: Object, labels: dict[str, str], fields: dict[str, str]) -> bool:
    have = obj.get("metadata", {}).get("labels") or {}
    return all(have.get(k) == v for k, v in labels.items()) and all(
        _field(obj, k) == v for k, v in fields.items()
    )


def _bookmark(resource_version: int) -> Object:
    return {"metadata": {"resourceVersion": str(resource_version)}}


def _with_kind(collection: str, obj: Object) -> Object:
    kind, api_version = _KINDS[collection]
    return {"kind": kind, "apiVersion": api_version, **obj}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_HttpServer"
    signals_seen = 0
    body = b""

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read `FakeApiServer.requests` instead of an access log."""

    def do_GET(self) -> None:
        self.server.fake.handle(self)

    def do_DELETE(self) -> None:
        self.server.fake.handle(self)

    def do_PATCH(self) -> None:
        self.server.fake.handle(self)

    def send_json(self, code: int, body: Object, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def send_text(self, text: str) -> None:
        data = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def send_event(self, type_: str, obj: Object) -> None:
        line = json.dumps({"type": type_, "object": obj}).encode() + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
        self.wfile.flush()

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def cut(self) -> None:
        """Close the connection mid-stream, without the chunked terminator: a dropped watch."""
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)


class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: "FakeApiServer") -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client hanging up on a watch is normal here, not an error to print."""


class FakeApiServer:
    """An in-memory Kubernetes API server for jobs, pods, events and pod logs."""

    def __init__(self) -> None:
        self._state = _State()
        self._requests: list[Request] = []
        self._http = _HttpServer(self)
        # Polled often, so that closing (at the end of every test) is quick.
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._clients: list[ApiClient] = []

    # Lifecycle

    @property
    def url(self) -> str:
        """The server's address, http://127.0.0.1:PORT."""
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        """Start serving in a background thread."""
        self._thread.start()

    def close(self) -> None:
        """Close the clients it made, end open watches and stop serving."""
        for api_client in self._clients:
            api_client.close()  # type: ignore[no-untyped-call]
        with self._state.changed:
            self._state.closing = True
            self._state.changed.notify_all()
        if self._thread.is_alive():
            self._http.shutdown()
        self._http.server_close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def client(self, token: str | None = None) -> ApiClient:
        """A real API client for this server, closed with it; with `token`, it sends it as a
        bearer token."""
        configuration = Configuration(host=self.url)
        if token is not None:
            configuration.api_key = {"authorization": token}
            configuration.api_key_prefix = {"authorization": "Bearer"}
        self._clients.append(ApiClient(configuration))
        return self._clients[-1]

    # Test controls

    @property
    def requests(self) -> list[Request]:
        """Every request received so far, in order (a copy)."""
        with self._state.changed:
            return list(self._requests)

    @property
    def resource_version(self) -> str:
        """The newest resourceVersion: that of the last change."""
        with self._state.changed:
            return str(self._state.resource_version)

    def add(self, collection: Collection, obj: Object) -> Object:
        """Create an object (its metadata.namespace says where); returns it as stored."""
        return self._change(collection, "ADDED", obj)

    def update(self, collection: Collection, obj: Object) -> Object:
        """Replace an existing object with `obj`; returns it as stored."""
        return self._change(collection, "MODIFIED", obj)

    def delete(self, collection: Collection, namespace: str, name: str) -> None:
        """Delete an object."""
        with self._state.changed:
            obj = self._state.objects[(collection, namespace)][name]
        self._change(collection, "DELETED", obj)

    def get(self, collection: Collection, namespace: str, name: str) -> Object | None:
        """The stored object, or None."""
        with self._state.changed:
            found = self._state.objects.get((collection, namespace), {}).get(name)
            return copy.deepcopy(found)

    def set_log(self, namespace: str, pod: str, container: str, text: str) -> None:
        """What GET .../pods/{pod}/log?container={container} returns."""
        with self._state.changed:
            self._state.logs[(namespace, pod, container)] = text

    def fail_next(
        self,
        count: int,
        status: int = 429,
        retry_after: int | None = None,
        *,
        path_contains: str | None = None,
        message: str | None = None,
    ) -> None:
        """Answer the next `count` requests (those whose path and query contain
        `path_contains`, if given) with an error Status, and a Retry-After header if given."""
        with self._state.changed:
            self._state.failures.append(
                _Failure(count, status, retry_after, path_contains, message)
            )

    def drop_watches(self) -> None:
        """Cut every open watch connection without ending its stream properly."""
        with self._state.changed:
            self._state.signals.append((self._state.resource_version, "drop"))
            self._state.changed.notify_all()

    def bookmark(self) -> None:
        """Send a BOOKMARK at the current resourceVersion on open watches that asked for them."""
        with self._state.changed:
            self._state.signals.append((self._state.resource_version, "bookmark"))
            self._state.changed.notify_all()

    def expire_history(self) -> None:
        """Forget the change history, as compaction does: watches from any resourceVersion so
        far, and open watches, get a 410 Expired; so do continue tokens issued so far."""
        with self._state.changed:
            self._state.resource_version += 1
            self._state.oldest_watchable = self._state.resource_version
            self._state.history.clear()
            self._state.signals.append((self._state.resource_version, "expire"))
            self._state.changed.notify_all()

    def hold(self, collection: Collection) -> None:
        """Keep the changes to `collection` made from now on from every watch (open or
        opened later; lists still show them) until `release`."""
        with self._state.changed:
            self._state.held.setdefault(collection, self._state.resource_version)

    def release(self, collection: Collection) -> None:
        """Let the watches of `collection` send what `hold` kept from them."""
        with self._state.changed:
            self._state.held.pop(collection, None)
            self._state.changed.notify_all()

    def _change(self, collection: str, type_: str, obj: Object) -> Object:
        state = self._state
        with state.changed:
            stored = copy.deepcopy(obj)
            metadata = stored.setdefault("metadata", {})
            namespace, name = metadata["namespace"], metadata["name"]
            store = state.objects.setdefault((collection, namespace), {})
            if type_ == "ADDED" and name in store:
                raise ValueError(f"{collection} {namespace}/{name} already exists")
            if type_ != "ADDED" and name not in store:
                raise KeyError(f"no {collection} {namespace}/{name}")
            state.resource_version += 1
            metadata["resourceVersion"] = str(state.resource_version)
            metadata.setdefault("uid", str(uuid.uuid4()))
            names = state.names.setdefault((collection, namespace), [])
            if type_ == "DELETED":
                del store[name]
                del names[bisect.bisect_left(names, name)]
            else:
                if type_ == "ADDED":
                    bisect.insort(names, name)
                store[name] = stored
            state.history.append(
                _Change(state.resource_version, collection, namespace, type_, stored)
            )
            state.changed.notify_all()
            return copy.deepcopy(stored)

    # Serving

    def handle(self, handler: _Handler) -> None:
        """Answer one request (runs on the server's thread for that connection)."""
        target = urlsplit(handler.path)
        query = {k: v[-1] for k, v in parse_qs(target.query, keep_blank_values=True).items()}
        length = int(handler.headers.get("Content-Length") or 0)
        handler.body = handler.rfile.read(length) if length else b""
        with self._state.changed:
            self._requests.append(
                Request(handler.command, target.path, query, handler.headers.get("Authorization"))
            )
            failure = self._take_failure(handler.path)
            # A watch acts on the signals given after its request is in `requests`, even those
            # given before it got as far as reading them: tests wait on `requests`.
            handler.signals_seen = len(self._state.signals)
        if failure is not None:
            headers = (
                {} if failure.retry_after is None else {"Retry-After": str(failure.retry_after)}
            )
            message = failure.message or f"injected failure {failure.status}"
            handler.send_json(failure.status, _status(failure.status, message), headers)
            return
        try:
            self._route(handler, target.path, query)
        except _BadRequest as error:
            handler.send_json(400, _status(400, str(error)))
        except _Expired as error:
            handler.send_json(410, _status(410, str(error)))

    def _take_failure(self, path: str) -> _Failure | None:
        for failure in self._state.failures:
            if failure.path_contains is None or failure.path_contains in path:
                failure.remaining -= 1
                if failure.remaining <= 0:
                    self._state.failures.remove(failure)
                return failure
        return None

    def _route(self, handler: _Handler, path: str, query: dict[str, str]) -> None:
        if handler.command == "DELETE" and (match := _JOB_PATH.fullmatch(path)):
            self._delete_job(handler, match["ns"], match["name"])
        elif handler.command == "PATCH" and (match := _CONFIGMAP_PATH.fullmatch(path)):
            self._apply_configmap(handler, match["ns"], match["name"], query)
        elif handler.command == "GET" and (match := _CONFIGMAP_PATH.fullmatch(path)):
            found = self.get("configmaps", match["ns"], match["name"])
            if found is None:
                handler.send_json(404, _status(404, f'configmaps "{match["name"]}" not found'))
            else:
                handler.send_json(200, _with_kind("configmaps", found))
        elif handler.command == "GET" and (match := _LOG_PATH.fullmatch(path)):
            self._log(handler, match["ns"], match["name"], query)
        elif handler.command == "GET" and (match := _COLLECTION_PATH.fullmatch(path)):
            collection, namespace = match["collection"], match["ns"]
            labels = _parse_selector(query.get("labelSelector", ""), _SELECTOR_TERM)
            fields = _parse_selector(query.get("fieldSelector", ""), _FIELD_TERM)
            if query.get("watch") in {"true", "1"}:
                self._watch(handler, collection, namespace, labels, fields, query)
            else:
                handler.send_json(200, self._list(collection, namespace, labels, fields, query))
        else:
            handler.send_json(404, _status(404, f"the server could not find {path}"))

    def _list(
        self,
        collection: str,
        namespace: str,
        labels: dict[str, str],
        fields: dict[str, str],
        query: dict[str, str],
    ) -> Object:
        limit = int(query.get("limit") or 0)
        with self._state.changed:
            resource_version, after = self._state.resource_version, ""
            if query.get("continue"):
                resource_version, after = self._decode_continue(query["continue"])
            key = (collection, namespace)
            objects = self._state.objects.get(key, {})
            names = self._state.names.get(key, [])
            matching: list[Object] = []
            more = False
            for position in range(bisect.bisect_right(names, after), len(names)):
                name = names[position]
                if not _matches(objects[name], labels, fields):
                    continue
                if limit and len(matching) == limit:
                    more = True
                    break
                matching.append(copy.deepcopy(objects[name]))
        metadata: Object = {"resourceVersion": str(resource_version)}
        if more:
            token = json.dumps({"rv": resource_version, "after": matching[-1]["metadata"]["name"]})
            metadata["continue"] = base64.urlsafe_b64encode(token.encode()).decode()
        kind, api_version = _KINDS[collection]
        return {
            "kind": f"{kind}List",
            "apiVersion": api_version,
            "metadata": metadata,
            "items": matching,
        }

    def _decode_continue(self, token: str) -> tuple[int, str]:
        try:
            decoded = json.loads(base64.urlsafe_b64decode(token.encode()))
            resource_version, after = int(decoded["rv"]), str(decoded["after"])
        except (ValueError, KeyError, TypeError):
            raise _BadRequest(f"invalid continue token {token!r}") from None
        if resource_version < self._state.oldest_watchable:
            raise _Expired(
                "The provided continue parameter is too old to display a consistent list result."
            )
        return resource_version, after

    def _watch(
        self,
        handler: _Handler,
        collection: str,
        namespace: str,
        labels: dict[str, str],
        fields: dict[str, str],
        query: dict[str, str],
    ) -> None:
        state = self._state
        handler.start_stream()
        with state.changed:
            requested = query.get("resourceVersion")
            if requested and int(requested) < state.oldest_watchable:
                message = f"too old resource version: {requested} ({state.oldest_watchable})"
                handler.send_event("ERROR", _status(410, message))
                handler.end_stream()
                return
            watch = _Watch(
                collection=collection,
                namespace=namespace,
                labels=labels,
                fields=fields,
                bookmarks=query.get("allowWatchBookmarks") == "true",
                deadline=time.monotonic() + int(query.get("timeoutSeconds") or 1800),
                cursor=int(requested) if requested else state.resource_version,
                signals_seen=handler.signals_seen,
            )
            if not requested:
                initial = state.objects.get((collection, namespace), {}).values()
                watch.pending = [("ADDED", obj) for obj in initial if _matches(obj, labels, fields)]
        while True:
            # Sockets are written outside the lock so that a slow reader blocks only its watch.
            with state.changed:
                ending = self._watch_step(watch)
                events, watch.pending = watch.pending, []
            for type_, obj in events:
                handler.send_event(type_, _with_kind(collection, obj) if type_ != "ERROR" else obj)
            if ending == "cut":
                handler.cut()
                return
            if ending == "end":
                handler.end_stream()
                return

    def _watch_step(self, watch: "_Watch") -> Literal["cut", "end"] | None:
        """Queue what `watch` should send next; say whether its stream should end, and how.

        Changes and signals go out in the order they happened: a drop loses only the changes
        made after it, and a bookmark covers exactly the changes made before it.
        """
        state = self._state
        signals = state.signals[watch.signals_seen :]
        watch.signals_seen = len(state.signals)
        held = state.held.get(watch.collection, state.resource_version)
        for resource_version, signal in signals:
            self._queue_changes(watch, min(resource_version, held))
            if signal == "drop":
                return "cut"
            if signal == "expire":
                watch.pending.append(("ERROR", _status(410, "too old resource version")))
                return "end"
            if watch.bookmarks:
                # A bookmark never claims changes the watch was kept from.
                watch.pending.append(("BOOKMARK", _bookmark(min(resource_version, held))))
        self._queue_changes(watch, min(state.resource_version, held))
        remaining = watch.deadline - time.monotonic()
        if state.closing or remaining <= 0:
            if watch.bookmarks:
                watch.pending.append(("BOOKMARK", _bookmark(watch.cursor)))
            return "end"
        if not watch.pending:
            state.changed.wait(remaining)
        return None

    def _queue_changes(self, watch: "_Watch", until: int) -> None:
        for change in self._changes_after(watch.cursor, watch.collection, watch.namespace):
            if change.resource_version > until:
                break
            if _matches(change.object, watch.labels, watch.fields):
                watch.pending.append((change.type, change.object))
        watch.cursor = max(watch.cursor, until)

    def _changes_after(self, cursor: int, collection: str, namespace: str) -> Iterator[_Change]:
        history = self._state.history
        # The history is in resourceVersion order: skip what the watch has seen without a scan.
        start = bisect.bisect_right(history, cursor, key=lambda change: change.resource_version)
        for position in range(start, len(history)):
            change = history[position]
            if change.collection == collection and change.namespace == namespace:
                yield change

    def _log(self, handler: _Handler, namespace: str, pod: str, query: dict[str, str]) -> None:
        container = query.get("container", "")
        with self._state.changed:
            text = self._state.logs.get((namespace, pod, container))
        if text is None:
            message = f'container "{container}" in pod "{pod}" is not available'
            handler.send_json(404, _status(404, message))
            return
        if query.get("tailLines"):
            lines = text.splitlines(keepends=True)
            text = "".join(lines[-int(query["tailLines"]) :])
        if query.get("limitBytes"):
            # The kubelet cuts bytes, maybe inside a character; the client decodes what came.
            data = text.encode()[: int(query["limitBytes"])]
            text = data.decode(errors="replace")
        handler.send_text(text)

    def _apply_configmap(
        self, handler: _Handler, namespace: str, name: str, query: dict[str, str]
    ) -> None:
        content_type = handler.headers.get("Content-Type", "")
        if content_type != "application/apply-patch+yaml" or not query.get("fieldManager"):
            handler.send_json(415, _status(415, f"unsupported patch: {content_type}"))
            return
        body = json.loads(handler.body)
        if body.get("metadata", {}).get("name") != name:
            raise _BadRequest("the body's metadata.name does not match the path")
        found = self.get("configmaps", namespace, name)
        applied = {
            "metadata": {
                **(found or {"metadata": {}})["metadata"],
                "name": name,
                "namespace": namespace,
                **{
                    key: body["metadata"][key]
                    for key in ("labels", "ownerReferences")
                    if key in body["metadata"]
                },
            },
            "data": body.get("data", {}),
        }
        if found is None:
            handler.send_json(201, _with_kind("configmaps", self.add("configmaps", applied)))
        else:
            handler.send_json(200, _with_kind("configmaps", self.update("configmaps", applied)))

    def _delete_job(self, handler: _Handler, namespace: str, name: str) -> None:
        found = self.get("jobs", namespace, name)
        if found is None:
            handler.send_json(404, _status(404, f'jobs.batch "{name}" not found'))
            return
        self.delete("jobs", namespace, name)
        details = {"name": name, "group": "batch", "kind": "jobs", "uid": found["metadata"]["uid"]}
        success = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
        handler.send_json(200, {**success, "details": details})
