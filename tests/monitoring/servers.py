"""Debian's Prometheus and Pushgateway on loopback ports, in a test's folder: what gather
pushes to and what the dashboard and the rules query, for real."""

import base64
import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from localcluster.processes import log_tail
from localrun.ports import free_port

PROMETHEUS: Final = "prometheus"
PUSHGATEWAY: Final = "prometheus-pushgateway"
PROMTOOL: Final = "promtool"
INSTALL: Final = "apt-get install -y prometheus prometheus-pushgateway, as root (.ci/run does)"
START_S: Final = 60.0
"""How long a server may take to answer; generous, so that a loaded machine only waits."""
needs_prometheus = pytest.mark.skipif(
    any(shutil.which(program) is None for program in (PROMETHEUS, PUSHGATEWAY, PROMTOOL)),
    reason=f"needs Debian's Prometheus, Pushgateway and promtool: {INSTALL}",
)


class ServerStartError(RuntimeError):
    """A server did not answer in time; carries its log."""


def until(condition: Callable[[], Any], what: str, timeout_s: float = START_S) -> Any:
    """`condition()`'s first truthy answer, asked again until `timeout_s`: the servers work on
    their own clock (scrapes, rule evaluations), so a test waits for what it needs to see."""
    deadline = time.monotonic() + timeout_s
    while not (answer := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not seen within {timeout_s:g}s")
        time.sleep(0.2)
    return answer


@dataclass(frozen=True)
class Identity:
    """A flag of this server's own command line, as its status API reports it: where the
    answer at its address comes from another server (one left running by a killed run, or
    another worker's), the test would read that server's data."""

    status_path: str
    flag: str
    value: str

    def flags(self, status: Any) -> Any:
        data = status["data"]
        return data.get("flags", data)


@contextmanager
def _serving(
    command: list[str], address: str, log_path: Path, identity: Identity, *, auth: bool = False
) -> Iterator[str]:
    with log_path.open("wb") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_until_ready(address, server, log_path, auth=auth)
            answered = identity.flags(_status(address, identity.status_path, auth=auth))
            if answered.get(identity.flag) != identity.value:
                raise ServerStartError(
                    f"{log_path.stem}: the server answering at {address} is not the one started "
                    f"({identity.flag} is {answered.get(identity.flag)!r}, not "
                    f"{identity.value!r}): {log_tail(log_path)}"
                )
            yield address
        finally:
            server.terminate()
            server.wait(timeout=30)


def _request(address: str, path: str, *, auth: bool) -> urllib.request.Request:
    request = urllib.request.Request(f"http://{address}{path}")
    if auth:
        login = base64.b64encode(f"{PUSH_USER}:{PUSH_PASSWORD}".encode()).decode()
        request.add_header("Authorization", f"Basic {login}")
    return request


def _status(address: str, path: str, *, auth: bool) -> Any:
    with urllib.request.urlopen(_request(address, path, auth=auth), timeout=10) as answer:
        return json.load(answer)


def _wait_until_ready(
    address: str, server: "subprocess.Popen[bytes]", log: Path, *, auth: bool = False
) -> None:
    name = log.stem
    request = _request(address, "/-/ready", auth=auth)

    def ready() -> bool:
        if server.poll() is not None:
            raise ServerStartError(f"{name} exited: {log_tail(log)}")
        try:
            with urllib.request.urlopen(request, timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    try:
        until(ready, f"{name} ready at {address}")
    except AssertionError as error:
        server.kill()
        raise ServerStartError(f"{error}: {log_tail(log)}") from None


PUSH_USER: Final = "ci"
PUSH_PASSWORD: Final = "s3cret-push"
_PUSH_PASSWORD_BCRYPT: Final = "$2b$04$S0u7tcAfI1tyRfwrVNVOVOFTs7/o2.lczQoiMyZxMWdYwIKOmbjBK"
"""PUSH_PASSWORD's bcrypt hash, as a web config file holds it (Python's crypt module,
METHOD_BLOWFISH, cost 4: the least bcrypt allows, so that each request checks it fast)."""


@contextmanager
def pushgateway_server(folder: Path, *, basic_auth: bool = False) -> Iterator[str]:
    """`127.0.0.1:<port>` of a Pushgateway that keeps its metrics in memory; with
    `basic_auth`, one that takes PUSH_USER and PUSH_PASSWORD only (its --web.config.file),
    and answers its readiness probe without them."""
    address = f"127.0.0.1:{free_port()}"
    folder.mkdir(parents=True, exist_ok=True)
    # Its persistence file (written only as it stops) is in this test's folder: the flag
    # tells it from any other Pushgateway.
    store = str(folder / "metrics.store")
    command = [
        PUSHGATEWAY,
        f"--web.listen-address={address}",
        f"--persistence.file={store}",
    ]
    if basic_auth:
        config = folder / "web.yml"
        users = {"basic_auth_users": {PUSH_USER: _PUSH_PASSWORD_BCRYPT}}
        config.write_text(yaml.safe_dump(users), encoding="utf-8")
        command.append(f"--web.config.file={config}")
    identity = Identity("/api/v1/status", "persistence.file", store)
    log = folder / "pushgateway.log"
    with _serving(command, address, log, identity, auth=basic_auth) as ready:
        yield ready


@contextmanager
def prometheus(folder: Path, scrape: str, rules: Path) -> Iterator[str]:
    """`127.0.0.1:<port>` of a Prometheus scraping the Pushgateway at `scrape` every second
    (keeping the labels pushed, as a Pushgateway's scrape must) and evaluating `rules` every
    second, its data in `folder`."""
    address = f"127.0.0.1:{free_port()}"
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules)],
        "scrape_configs": [
            {
                "job_name": "pushgateway",
                "honor_labels": True,
                "static_configs": [{"targets": [scrape]}],
            }
        ],
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "prometheus.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    command = [
        PROMETHEUS,
        f"--config.file={folder / 'prometheus.yml'}",
        f"--storage.tsdb.path={folder / 'data'}",
        f"--web.listen-address={address}",
    ]
    identity = Identity("/api/v1/status/flags", "storage.tsdb.path", str(folder / "data"))
    with _serving(command, address, folder / "prometheus.log", identity) as ready:
        yield ready


def api(address: str, path: str, **parameters: str) -> Any:
    """The `data` of a successful answer of Prometheus' HTTP API."""
    query = urllib.parse.urlencode(parameters)
    with urllib.request.urlopen(f"http://{address}/api/v1/{path}?{query}", timeout=10) as answer:
        body = json.load(answer)
    assert body["status"] == "success", body
    return body["data"]
