"""OciClient asks for a manifest as podman pushed it, checks the digest the registry reports
against the bytes it sent, and logs in as a 401 challenge asks: Basic with the login, Bearer
through ORAS's token flow."""

import base64
import hashlib
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from localrun.oci_registry import MANIFEST_TYPES, OciClient, OciError, stored_credentials
from localrun.reference import parse_reference
from tests.model_server import Authority, ModelServer

MANIFEST = json.dumps(
    {
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPES[0],
        "config": {"size": 100},
        "layers": [{"size": 2000}, {"size": 30}],
    }
).encode()
DIGEST = "sha256:" + hashlib.sha256(MANIFEST).hexdigest()
LOGIN = base64.b64encode(b"ci:s3cret").decode()
"""As auth.json stores it."""


class FakeRegistry(BaseHTTPRequestHandler):
    """One repository `team/runner` holding tag `1`, optionally behind a token server."""

    auth: str = "none"  # "none", "basic" or "bearer"
    lie: bool = False
    seen: list[dict[str, str]] = []  # noqa: RUF012 (reset per test by the fixture)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: pytest shows failures, not request logs."""

    def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.seen.append({"path": self.path, **dict(self.headers.items())})
        host = self.headers["Host"]
        if self.path.startswith("/token?"):
            if self.headers.get("Authorization") != f"Basic {LOGIN}":
                self._send(401, b"{}", {})
            else:
                self._send(200, json.dumps({"token": "t0k"}).encode(), {})
            return
        expected = {
            "none": None,
            "basic": f"Basic {LOGIN}",
            "bearer": "Bearer t0k",
        }[self.auth]
        if expected is not None and self.headers.get("Authorization") != expected:
            # Go's canonical spelling, and the scope the request needs, as the reference
            # registry sends them.
            challenge = (
                'Basic realm="registry"'
                if self.auth == "basic"
                else f'Bearer realm="http://{host}/token",service="fake",'
                'scope="repository:team/runner:pull"'
            )
            self._send(401, b"{}", {"Www-Authenticate": challenge})
            return
        if self.path not in ("/v2/team/runner/manifests/1", f"/v2/team/runner/manifests/{DIGEST}"):
            self._send(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}', {})
            return
        if MANIFEST_TYPES[0] not in self.headers.get("Accept", ""):
            # What distribution does for an OCI manifest a client did not say it accepts.
            self._send(404, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}', {})
            return
        reported = "sha256:" + "0" * 64 if self.lie else DIGEST
        headers = {"Docker-Content-Digest": reported, "Content-Type": MANIFEST_TYPES[0]}
        self._send(200, MANIFEST, headers)


@pytest.fixture
def registry() -> Iterator[str]:
    FakeRegistry.auth, FakeRegistry.lie, FakeRegistry.seen = "none", False, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeRegistry)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_digest_of_a_tag_is_what_the_registry_reports(registry: str) -> None:
    manifest = OciClient(registry, insecure=True, credentials="").manifest(
        parse_reference(f"{registry}/team/runner:1")
    )
    assert (manifest.digest, manifest.media_type, manifest.body) == (
        DIGEST,
        MANIFEST_TYPES[0],
        MANIFEST,
    )
    assert manifest.content_bytes == 2130
    assert set(FakeRegistry.seen[0]["Accept"].split(", ")) == set(MANIFEST_TYPES)


def test_a_digest_can_be_confirmed(registry: str) -> None:
    reference = parse_reference(f"{registry}/team/runner@{DIGEST}")
    assert OciClient(registry, insecure=True).manifest(reference).digest == DIGEST


def test_a_digest_the_registry_lacks_is_refused(registry: str) -> None:
    reference = parse_reference(f"{registry}/team/runner@sha256:{'1' * 64}")
    with pytest.raises(OciError, match="answered 404"):
        OciClient(registry, insecure=True).manifest(reference)


def test_a_reported_digest_that_is_not_the_bodys_is_refused(registry: str) -> None:
    FakeRegistry.lie = True
    with pytest.raises(OciError, match="but the body's sha256 is"):
        OciClient(registry, insecure=True).manifest(parse_reference(f"{registry}/team/runner:1"))


def test_basic_auth_uses_the_given_login(registry: str) -> None:
    FakeRegistry.auth = "basic"
    client = OciClient(registry, insecure=True, credentials=LOGIN)
    assert client.manifest(parse_reference(f"{registry}/team/runner:1")).digest == DIGEST


def test_bearer_auth_fetches_a_pull_token_for_the_repository(registry: str) -> None:
    FakeRegistry.auth = "bearer"
    client = OciClient(registry, insecure=True, credentials=LOGIN)
    assert client.manifest(parse_reference(f"{registry}/team/runner:1")).digest == DIGEST
    (token_request,) = [seen for seen in FakeRegistry.seen if seen["path"].startswith("/token")]
    assert "scope=repository%3Ateam%2Frunner%3Apull" in token_request["path"]
    assert "service=fake" in token_request["path"]


def test_no_login_for_a_basic_registry_says_how_to_log_in(registry: str) -> None:
    FakeRegistry.auth = "basic"
    with pytest.raises(OciError, match=f"asks for a login: podman login {registry}"):
        OciClient(registry, insecure=True, credentials="").manifest(
            parse_reference(f"{registry}/team/runner:1")
        )


def test_a_refused_token_says_how_to_log_in(registry: str) -> None:
    FakeRegistry.auth = "bearer"
    with pytest.raises(OciError, match=f"gave no token without a login: podman login {registry}"):
        OciClient(registry, insecure=True, credentials="").manifest(
            parse_reference(f"{registry}/team/runner:1")
        )


def test_an_unreachable_registry_is_a_registry_error() -> None:
    with pytest.raises(OciError, match=re.escape("GET http://127.0.0.1:9/v2/")):
        OciClient("127.0.0.1:9", insecure=True).manifest(
            parse_reference("127.0.0.1:9/team/runner:1")
        )


def test_podman_login_credentials_are_found(tmp_path: Path) -> None:
    auth = tmp_path / "auth.json"
    login = base64.b64encode(b"u:p").decode()
    auth.write_text(json.dumps({"auths": {"reg.io:5000": {"auth": login}}}), encoding="utf-8")
    assert stored_credentials("reg.io:5000", [tmp_path / "missing.json", auth]) == login
    assert stored_credentials("other.io", [auth]) is None


def test_a_registry_behind_a_company_ca_is_trusted_as_the_machine_trusts_it(
    model_server: ModelServer, company_ca: Authority, monkeypatch: pytest.MonkeyPatch
) -> None:
    """requests alone trusts certifi's bundle, which knows no company CA; podman, and urllib
    before ORAS, trust the machine's certificates (SSL_CERT_FILE too)."""
    model_server.add("v2/team/runner/manifests/1", MANIFEST)
    registry = model_server.url.removeprefix("https://")
    reference = parse_reference(f"{registry}/team/runner:1")
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    with pytest.raises(OciError, match="CERTIFICATE_VERIFY_FAILED"):
        OciClient(registry, insecure=False, credentials="").manifest(reference)
    monkeypatch.setenv("SSL_CERT_FILE", str(company_ca.certificate))
    fetched = OciClient(registry, insecure=False, credentials="").manifest(reference)
    assert fetched.body == MANIFEST
