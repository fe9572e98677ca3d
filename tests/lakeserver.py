"""The result lake's real S3 server in tests: one SeaweedFS a session (and xdist worker),
each test its own prefix in it, and the faults a store has.

Every lake test asks for `lake` (tests/conftest.py): a `Lake` whose `url` is a fresh
`s3://BUCKET/t<hex>` no other test writes under, so tests run in any order on one server.
Its faults are the real server's: stopped (`stopped()`), frozen by SIGSTOP (`paused()`, a
store that hangs), a bucket over its quota (`full_lake`), an identity that may write only
under one workflow's `raw/<workflow>/` (`writer_for`). Only what a server cannot be made to
do, a connection cut or stalled mid-transfer, comes from `FaultyProxy`: a TCP proxy in
front of the real server.
"""

import contextlib
import secrets
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

from contract.lake import LAKE_ENV, LakeUrl
from contract.objectstore import DEFAULT_LIMITS, Limits, ObjectStore
from localcluster.build import binary_dir, is_built
from localcluster.components import LAKE_TOOLS
from localcluster.lake import Identity, LakeServer, new_identity, new_server, writer_actions
from synth.fleet import ResultsStore

EXAMPLE_STORE: Final = ResultsStore(
    url="s3://results/team",
    endpoint="http://127.0.0.1:8333",
    region="us-east-1",
    credentials_secret="results-store",
    endpoint_cidrs=["127.0.0.1/32"],
)
"""A cluster's results store as a fleet file names it, for tests of what synth emits for one
and of pods that run with that env (no server behind it)."""

LAKE_BUCKET: Final = "lake"
FULL_BUCKET: Final = "full"
LAKE_NOT_BUILT: Final = (
    "the lake's S3 server (SeaweedFS) is not built for the committed version: build it with "
    "`make cluster-build` (or `make lake`, which builds only it)"
)


def lake_server_built() -> bool:
    return is_built(toolset=LAKE_TOOLS)


def start_lake_server(directory: Path) -> LakeServer:
    """A running server with a bucket for the tests and one over its quota."""
    server = new_server(directory, binary_dir(LAKE_TOOLS), LAKE_BUCKET)
    server.start()
    return server


@dataclass
class Lake:
    """One test's lake: its own prefix on the session's server."""

    server: LakeServer
    url: LakeUrl
    _writers: dict[str, Identity] = field(default_factory=dict)

    def env(self, identity: Identity | None = None) -> dict[str, str]:
        """The standard AWS variables and BENCHFLEET_LAKE a command run as `identity`
        (the admin by default) needs to find this lake."""
        return {**self.server.env(identity), LAKE_ENV: str(self.url)}

    def store(
        self, identity: Identity | None = None, limits: Limits = DEFAULT_LIMITS
    ) -> ObjectStore:
        """A client of this lake's bucket as `identity` (the admin by default)."""
        return self.server.store(identity, self.url.bucket, limits)

    def writer_for(self, workflow: str) -> Identity:
        """An identity that may write (and read back) only under this lake's
        `raw/<workflow>/`, as a workflow's pods are given; made once per workflow."""
        if workflow not in self._writers:
            name = f"writer-{self.url.bucket}-{self.url.prefix}-{workflow}"
            identity = new_identity(name, writer_actions(self.url, workflow))
            self.server.add_identity(identity)
            self._writers[workflow] = identity
        return self._writers[workflow]

    @contextlib.contextmanager
    def stopped(self) -> Iterator[None]:
        """The server stopped inside the block, started again (same ports, same data) after."""
        self.server.stop()
        try:
            yield
        finally:
            self.server.start()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The server frozen (SIGSTOP) inside the block: connections are accepted by the
        kernel and never answered, a store hanging. Resumed after."""
        self.server.pause()
        try:
            yield
        finally:
            self.server.resume()

    @contextlib.contextmanager
    def through(self, proxy: "FaultyProxy") -> Iterator[dict[str, str]]:
        """`env()` with the endpoint replaced by `proxy`'s, in front of this server."""
        with proxy.serving(self.server.ports["s3.port"]) as endpoint:
            yield {**self.env(), "AWS_ENDPOINT_URL": endpoint}


def fresh_lake(server: LakeServer, bucket: str = LAKE_BUCKET) -> Lake:
    """A lake under a prefix no test has used."""
    return Lake(server, LakeUrl(bucket=bucket, prefix=f"t{secrets.token_hex(6)}"))


def restore(server: LakeServer) -> None:
    """Undo whatever a test left: resumed and running."""
    if server.running:
        server.resume()
    else:
        server.start()


_CHUNK: Final = 16 << 10


@dataclass
class FaultyProxy:
    """A TCP proxy on loopback whose first `faulty` connections, once `after` bytes went
    `direction` (up: to the server, down: to the client), are cut (both sides closed) or
    stalled (nothing more forwarded that way). Later connections pass untouched."""

    after: int
    fault: Literal["cut", "stall"]
    direction: Literal["up", "down"] = "up"
    faulty: int = 1
    _sockets: list[socket.socket] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @contextlib.contextmanager
    def serving(self, upstream: int) -> Iterator[str]:
        """Listen while the block runs; the endpoint URL to give a client."""
        listener = socket.create_server(("127.0.0.1", 0))
        self._sockets.append(listener)
        threading.Thread(target=self._accept, args=(listener, upstream), daemon=True).start()
        try:
            yield f"http://127.0.0.1:{listener.getsockname()[1]}"
        finally:
            with self._lock:
                for each in self._sockets:
                    # shutdown, not just close: it wakes a thread blocked reading it, and
                    # the server sees the connection end.
                    with contextlib.suppress(OSError):
                        each.shutdown(socket.SHUT_RDWR)
                    each.close()

    def _accept(self, listener: socket.socket, upstream: int) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", upstream))
            with self._lock:
                self._sockets += [client, server]
                faulty = self.faulty > 0
                self.faulty -= 1
            pairs = {"up": (client, server), "down": (server, client)}
            for way, (source, target) in pairs.items():
                limit = self.after if faulty and way == self.direction else None
                threading.Thread(
                    target=self._pump, args=(source, target, limit, (client, server)), daemon=True
                ).start()

    def _pump(
        self,
        source: socket.socket,
        target: socket.socket,
        limit: int | None,
        both: tuple[socket.socket, socket.socket],
    ) -> None:
        sent = 0
        try:
            while True:
                room = _CHUNK if limit is None else min(_CHUNK, limit - sent)
                if room <= 0:
                    break
                data = source.recv(room)
                if not data:
                    break
                target.sendall(data)
                sent += len(data)
        except OSError:
            pass
        if limit is not None and sent >= limit and self.fault == "stall":
            return  # the sockets stay open, and nothing more goes this way
        for each in both:
            with contextlib.suppress(OSError):
                each.shutdown(socket.SHUT_RDWR)
