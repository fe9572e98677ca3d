"""A real https model server on loopback, with a CA and a server certificate made for the
test by the `openssl` command: a company's model store behind its own CA.

The server answers byte ranges (RFC 9110) with an ETag, as object stores and CDNs do, and can
misbehave on purpose: drop the connection part-way, answer 503 first, ignore ranges, stall.
It records every request, so a test can say what was retried and from where.
"""

import hashlib
import http.server
import json
import shutil
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

HOST: Final = "127.0.0.1"
SERVER_NAME: Final = "localhost"
"""The name the server's certificate is issued for, besides its loopback address."""


@dataclass(frozen=True)
class Authority:
    """A certificate authority made for a test: its certificate (PEM) and key."""

    certificate: Path
    key: Path


def _openssl(*arguments: str | Path) -> None:
    subprocess.run(["openssl", *map(str, arguments)], check=True, capture_output=True, timeout=60)


def make_authority(folder: Path, name: str) -> Authority:
    """A new CA called `name`, with its files in `folder`."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a CA")
    folder.mkdir(parents=True, exist_ok=True)
    certificate, key = folder / f"{name}.pem", folder / f"{name}.key"
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", certificate, "-days", "2", "-subj", f"/CN={name}",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    return Authority(certificate, key)


def issue_server_certificate(authority: Authority, folder: Path) -> tuple[Path, Path]:
    """A certificate for `localhost` and 127.0.0.1 signed by `authority`: (certificate, key)."""
    certificate, key, request = folder / "server.pem", folder / "server.key", folder / "server.csr"
    extensions = folder / "server.ext"
    extensions.write_text(
        f"subjectAltName=DNS:{SERVER_NAME},IP:{HOST}\n"
        "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
        encoding="ascii",
    )
    _openssl(
        "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", request, "-subj", f"/CN={SERVER_NAME}",
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", request, "-CA", authority.certificate, "-CAkey", authority.key,
        "-CAcreateserial", "-out", certificate, "-days", "2", "-extfile", extensions,
    )  # fmt: skip
    return certificate, key


@dataclass
class Behaviour:
    """How the server misbehaves; the defaults serve every request properly."""

    drop_after: int | None = None
    """Close the connection after sending this many bytes of a body..."""
    drops: int = 0
    """...this many times (then serve properly)."""
    unavailable: int = 0
    """Answer this many requests with 503 first."""
    ignore_ranges: bool = False
    """Answer every request with the whole file (200), as some servers do."""
    stall_s: float = 0.0
    """Send the headers, then wait this long before the body."""
    redirect_to: str | None = None
    """Answer every request with a redirect here."""
    dead_after: int | None = None
    """After this many requests, close every connection without an answer."""


@dataclass(frozen=True)
class Request:
    """What one request asked for."""

    path: str
    range: str | None


@dataclass
class ModelServer:
    """Files served over https by a thread of the test process."""

    url: str
    files: dict[str, bytes]
    behaviour: Behaviour = field(default_factory=Behaviour)
    requests: list[Request] = field(default_factory=list)
    sent: int = 0
    """Body bytes sent, over all requests."""

    def add(self, name: str, data: bytes) -> str:
        """Serve `data` at /name; its URL."""
        self.files[f"/{name}"] = data
        return f"{self.url}/{name}"


def _handler(server: ModelServer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            behaviour = server.behaviour
            server.requests.append(Request(self.path, self.headers.get("Range")))
            if behaviour.dead_after is not None and len(server.requests) > behaviour.dead_after:
                self.close_connection = True
                return
            if behaviour.redirect_to is not None:
                self.send_response(302)
                self.send_header("Location", behaviour.redirect_to)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if behaviour.unavailable:
                behaviour.unavailable -= 1
                self.send_error(503)
                return
            data = server.files.get(self.path)
            if data is None:
                self.send_error(404)
                return
            etag = f'"{hashlib.sha256(data).hexdigest()[:16]}"'
            start = _range_start(self.headers.get("Range"), self.headers.get("If-Range"), etag)
            if behaviour.ignore_ranges or start is None:
                start = 0
                self.send_response(200)
            else:
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.send_header("Content-Length", str(len(data) - start))
            self.send_header("ETag", etag)
            self.send_header("Accept-Ranges", "bytes")
            self.end_headers()
            if behaviour.stall_s:
                time.sleep(behaviour.stall_s)
            body = data[start:]
            if behaviour.drops and behaviour.drop_after is not None:
                behaviour.drops -= 1
                body = body[: behaviour.drop_after]
                self.close_connection = True
            self.wfile.write(body)
            server.sent += len(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


def _range_start(asked: str | None, if_range: str | None, etag: str) -> int | None:
    if asked is None or not asked.startswith("bytes=") or not asked.endswith("-"):
        return None
    if if_range is not None and if_range != etag:
        return None  # the file changed since: the whole of it
    start = asked.removeprefix("bytes=").removesuffix("-")
    return int(start) if start.isdigit() else None


@contextmanager
def serving(certificate: Path, key: Path) -> Iterator[ModelServer]:
    """An https server on a free loopback port presenting `certificate`."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    state = ModelServer(url="", files={})
    httpd = http.server.ThreadingHTTPServer((HOST, 0), _handler(state))
    httpd.daemon_threads = True
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    state.url = f"https://{SERVER_NAME}:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def edit_configs(workload: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    """Apply `edit` to every config.json in a synthesized workload file: to point a url
    model at the test's server, whose port the spec may not name (it admits 443 only)."""
    documents = list(yaml.safe_load_all(workload.read_text(encoding="utf-8")))
    for document in documents:
        config_json = (document or {}).get("data", {}).get("config.json")
        if config_json is not None:
            config: dict[str, Any] = json.loads(config_json)
            edit(config)
            document["data"]["config.json"] = json.dumps(config)
    workload.write_text(yaml.safe_dump_all(documents), encoding="utf-8")
