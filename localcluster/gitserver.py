"""A git server on loopback speaking the smart-HTTP protocol, for Flux's source-controller.

The protocol is git's own: every request goes to `git http-backend`, git's reference
implementation of the server side (the CGI program behind most git hosting), run once per
request. This module only carries HTTP to and from it: the CGI environment, the request body
(chunked or not) on its stdin, its `Status:` and headers back. So what source-controller's
go-git client meets, shallow clones included, is what it meets at a real git host.
"""

import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

GIT_HTTP_BACKEND: Final = "http-backend"
_CHUNK_END: Final = b"0"


def _git() -> str:
    git = shutil.which("git")
    if git is None:
        raise RuntimeError("the git server needs git (Debian's package `git`)")
    return git


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_GET(self) -> None:
        self._backend()

    def do_POST(self) -> None:
        self._backend()

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or _CHUNK_END, 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _backend(self) -> None:
        target = urlsplit(self.path)
        environment = {
            "GIT_PROJECT_ROOT": str(self.server.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": target.path,
            "QUERY_STRING": target.query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "REMOTE_ADDR": self.client_address[0],
            "GATEWAY_INTERFACE": "CGI/1.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
        }
        if self.headers.get("Content-Encoding"):
            environment["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
        if self.headers.get("Git-Protocol"):
            environment["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        body = self._body()
        environment["CONTENT_LENGTH"] = str(len(body))
        completed = subprocess.run(
            [_git(), GIT_HTTP_BACKEND],
            input=body,
            env=environment,
            capture_output=True,
            check=False,
        )
        head, _, payload = completed.stdout.partition(b"\r\n\r\n")
        status, headers = 200, []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.strip().split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
        shallow = b"deepen" in body
        self.server.requests.append(
            f"{self.command} {target.path}?{target.query}" + (" (shallow)" if shallow else "")
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, root: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root = root
        self.requests: list[str] = []


class GitServer:
    """Serves the bare repositories under `root` at http://127.0.0.1:<port>/<name>.git."""

    def __init__(self, root: Path) -> None:
        self._server = _Server(root)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def root(self) -> Path:
        """The folder whose bare repositories are served."""
        return self._server.root

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def requests(self) -> list[str]:
        """Each request served, as `METHOD path?query`, marked `(shallow)` when the client
        asked for a depth-limited history (a `deepen` line in its upload-pack request)."""
        return self._server.requests

    def __enter__(self) -> "GitServer":
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()
