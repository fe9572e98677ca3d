"""The result lake's S3-compatible server on loopback: SeaweedFS, all in one process.

`weed mini` runs SeaweedFS's master, volume server, filer and S3 gateway in one process
(its WebDAV, Iceberg, Lance and admin UI are turned off), every port on 127.0.0.1 chosen
free here, its data under one folder, so stopping and starting it again keeps every object.
Its identities are S3 access keys with SeaweedFS's actions: the admin's, from a config file
written at start, and any added later through `weed shell s3.configure` (a workflow's
writer, say, which may write only under `raw/<workflow>/`: `writer_actions`).

`make lake` (`python -m localcluster lake up`) starts one under .cache/lake and prints the
shell lines that point every command at it; the tests start one a session (tests/lakeserver.py).
"""

import contextlib
import json
import os
import secrets
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Final

from contract.lake import (
    ACCESS_KEY_ENV,
    ENDPOINT_ENV,
    LAKE_ENV,
    SECRET_KEY_ENV,
    LakeUrl,
    raw_prefix,
)
from contract.objectstore import DEFAULT_LIMITS, Limits, ObjectStore, StoreError, StoreErrorKind
from localcluster.processes import Started, StartError, is_alive, start, stop, wait_ready
from localrun.ports import free_port

START_TIMEOUT_S: Final = 60.0
SHELL_TIMEOUT_S: Final = 60.0
STATE_FILE: Final = "lake.json"
CONFIG_FILE: Final = "s3.json"
LOG_FILE: Final = "weed.log"
ADMIN_ACTIONS: Final = ("Admin", "Read", "List", "Tagging", "Write")
# Each port `weed mini` listens on, by the flag that sets it.
PORT_FLAGS: Final = (
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "s3.port",
    "s3.port.grpc",
    "admin.port",
    "admin.port.grpc",
)
# A probe's answer within seconds, not the callers' default 30 s a read.
_PROBE: Final = Limits(connect_s=1.0, read_s=10.0, attempts=1)
READY_KEY: Final = ".ready"


@dataclass(frozen=True)
class Identity:
    """An S3 access key pair and what SeaweedFS lets it do (`Action[:bucket[/prefix*]]`)."""

    name: str
    access_key: str
    secret_key: str
    actions: tuple[str, ...]

    def config(self) -> dict[str, object]:
        """This identity as SeaweedFS's S3 config file spells one."""
        return {
            "name": self.name,
            "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
            "actions": list(self.actions),
        }


def new_identity(name: str, actions: tuple[str, ...]) -> Identity:
    """An identity called `name` with freshly generated keys."""
    return Identity(
        name=name,
        access_key="BF" + secrets.token_hex(9).upper(),
        secret_key=secrets.token_urlsafe(30),
        actions=actions,
    )


def writer_actions(lake: LakeUrl, workflow: str) -> tuple[str, ...]:
    """What a workflow's runners may do: write, and read back, under its `raw/<workflow>/`
    only (SeaweedFS's equivalent of docs/lake.md's bucket policy for S3)."""
    scope = f"{lake.bucket}/{raw_prefix(lake, workflow)}*"
    return (f"Write:{scope}", f"Read:{scope}")


@dataclass
class LakeServer:
    """A SeaweedFS server on loopback (running or stopped) and where its files are."""

    directory: Path
    binary: Path
    bucket: str
    admin: Identity
    ports: dict[str, int]
    pid: int | None = None
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.ports['s3.port']}"

    @property
    def log(self) -> Path:
        return self.directory / LOG_FILE

    @property
    def data(self) -> Path:
        return self.directory / "data"

    def env(self, identity: Identity | None = None) -> dict[str, str]:
        """The standard AWS variables that point a command at this server as `identity`
        (the admin by default)."""
        identity = identity or self.admin
        return {
            ENDPOINT_ENV: self.endpoint,
            ACCESS_KEY_ENV: identity.access_key,
            SECRET_KEY_ENV: identity.secret_key,
        }

    def store(
        self,
        identity: Identity | None = None,
        bucket: str | None = None,
        limits: Limits = DEFAULT_LIMITS,
    ) -> ObjectStore:
        """A client of `bucket` (the server's own by default) as `identity`."""
        lake = LakeUrl(bucket=bucket or self.bucket)
        return ObjectStore.for_lake(lake, self.env(identity), limits)

    def command(self) -> list[str]:
        flags = [f"-{flag}={port}" for flag, port in self.ports.items()]
        return [
            str(self.binary),
            "mini",
            f"-dir={self.data}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            *flags,
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            "-admin.port.legacy=0",
            "-admin.ui=false",
            "-webdav=false",
            "-master.telemetry=false",
            f"-s3.config={self.directory / CONFIG_FILE}",
            f"-bucket={self.bucket}",
        ]

    def start(self, timeout_s: float = START_TIMEOUT_S) -> float:
        """Start the server on its ports and data; the seconds until it served the bucket."""
        self.data.mkdir(parents=True, exist_ok=True)
        config = self.directory / CONFIG_FILE
        config.touch(mode=0o600)
        config.write_text(json.dumps({"identities": [self.admin.config()]}, indent=2))
        started = start("seaweedfs", self.command(), self.log)
        self.pid = started.pid
        self.save()
        try:
            seconds = wait_ready(started, self._serves_bucket, timeout_s)
        except StartError:
            self.stop()
            raise
        self.timings["start"] = round(seconds, 2)
        self.save()
        return seconds

    def _serves_bucket(self) -> bool:
        """Whether the server stores an object in the bucket: its first write (after a
        restart too) waits until the volume servers have reported to the master."""
        store = self.store(limits=_PROBE)
        try:
            store.put_once(READY_KEY, b"ready")
            store.delete([READY_KEY])
        except StoreError as error:
            if error.kind in {StoreErrorKind.UNREACHABLE, StoreErrorKind.MISSING}:
                return False
            if error.kind is StoreErrorKind.TIMED_OUT:
                return False
            raise
        return True

    def _started(self) -> Started:
        if self.pid is None or not self.running:
            raise StartError(f"the lake's server is not running (log: {self.log})")
        return Started("seaweedfs", self.pid, self.log)

    def stop(self) -> None:
        """Stop the server (its data stays)."""
        if self.pid is not None and self.running:
            # A paused server would never act on the SIGTERM.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGCONT)
            stop(self.pid)
        self.pid = None
        self.save()

    def pause(self) -> None:
        """Freeze the whole server (SIGSTOP): it accepts connections and answers nothing."""
        os.killpg(self._started().pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.killpg(self._started().pid, signal.SIGCONT)

    def shell(self, script: str) -> str:
        """Run `weed shell` commands against this server; their output."""
        master = f"127.0.0.1:{self.ports['master.port']}.{self.ports['master.port.grpc']}"
        done = subprocess.run(
            [str(self.binary), "shell", f"-master={master}"],
            input=script + "\nexit\n",
            capture_output=True,
            text=True,
            timeout=SHELL_TIMEOUT_S,
            check=False,
        )
        # weed shell exits 1 where a command failed, the failure on stderr.
        if done.returncode != 0:
            raise RuntimeError(f"weed shell {script!r}: {done.stdout}{done.stderr}")
        return done.stdout

    def add_identity(self, identity: Identity) -> None:
        """Add `identity` to the running server; returns once its keys are accepted."""
        self.shell(
            f"s3.configure -user={identity.name} -access_key={identity.access_key} "
            f"-secret_key={identity.secret_key} -actions={','.join(identity.actions)} -apply"
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._accepts(identity):
            if time.monotonic() > deadline:
                raise TimeoutError(f"the lake's server did not take identity {identity.name}")
            time.sleep(0.1)

    def _accepts(self, identity: Identity) -> bool:
        """Whether the server knows `identity`'s keys (a denied read is known keys)."""
        try:
            self.store(identity, limits=_PROBE).get(".probe", max_bytes=0)
        except StoreError as error:
            return "InvalidAccessKeyId" not in str(error)
        return True

    def create_bucket(self, bucket: str) -> None:
        self.shell(f"s3.bucket.create -name={bucket}")

    def fill(self, bucket: str, quota_mb: int = 1) -> None:
        """Give `bucket` a quota of `quota_mb`, write past it and have SeaweedFS enforce it:
        from then on the bucket refuses every write. Incompressible bytes, as SeaweedFS
        compresses what it can and counts the compressed size."""
        self.shell(f"s3.bucket.quota -name={bucket} -op=set -sizeMB={quota_mb}")
        store = self.store(bucket=bucket)
        store.put_once("over-quota", os.urandom((quota_mb + 1) << 20))
        deadline = time.monotonic() + START_TIMEOUT_S
        # The volume servers report sizes to the master by heartbeat, every second or so.
        while "to read only" not in self.shell("s3.bucket.quota.enforce -apply"):
            if time.monotonic() > deadline:
                raise TimeoutError(f"SeaweedFS never counted {bucket} over its quota")
            time.sleep(0.5)

    def save(self) -> None:
        state = asdict(self)
        state["directory"], state["binary"] = str(self.directory), str(self.binary)
        path = self.directory / STATE_FILE
        path.touch(mode=0o600)
        path.write_text(json.dumps(state, indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path) -> "LakeServer":
        state = json.loads((directory / STATE_FILE).read_text())
        admin = state.pop("admin")
        admin["actions"] = tuple(admin["actions"])
        state["directory"], state["binary"] = Path(state["directory"]), Path(state["binary"])
        return cls(admin=Identity(**admin), **state)

    @property
    def running(self) -> bool:
        """Whether the PID saved is alive and still this server's: after a reboot, say, it
        may be another program's, which `lake down` must not stop."""
        if self.pid is None or not is_alive(self.pid):
            return False
        try:
            command = Path(f"/proc/{self.pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        return command[:2] == [str(self.binary).encode(), b"mini"]


def new_server(directory: Path, binaries: Path, bucket: str) -> LakeServer:
    """A server (not started) with fresh admin keys and free ports, its files in `directory`."""
    directory.mkdir(parents=True, exist_ok=True)
    return LakeServer(
        directory=directory.resolve(),
        binary=binaries / "weed",
        bucket=bucket,
        admin=new_identity("admin", ADMIN_ACTIONS),
        ports={flag: free_port() for flag in PORT_FLAGS},
    )


def export_lines(server: LakeServer, lake: LakeUrl) -> list[str]:
    """The shell lines that point every command at `server` as its admin."""
    variables: Mapping[str, str] = {**server.env(), LAKE_ENV: str(lake)}
    return [f"export {name}={value}" for name, value in variables.items()]
