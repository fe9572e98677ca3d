"""Manifests and blobs to and from a registry, through ORAS's Python client (`oras`): the one
registry client here, for `make push`'s and `make pin-image`'s checks of what a registry
serves, `make push-model`, and image volumes pulled as a node pulls them.

ORAS speaks the distribution protocol (upload sessions, chunked uploads, the Bearer token a
401's challenge points to); what this module adds: every request has a timeout, a failure is
reported at once (ORAS's own retries sleep up to 83 s between five tries), a Basic challenge
is answered with the login (ORAS's token backend would ask its realm for a token), every
body is bounded by the size its descriptor declares and checked against its digest while it
streams (ORAS's `download_blob` checks neither), a manifest's `Docker-Content-Digest` is
checked against its bytes, and credentials come from where `podman login` keeps them.
"""

import base64
import hashlib
import json
import os
import ssl
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import oras.auth  # type: ignore[import-untyped]
import oras.auth.utils  # type: ignore[import-untyped]
import oras.container  # type: ignore[import-untyped]
import oras.provider  # type: ignore[import-untyped]
import requests
import requests.adapters

from localrun.artifact import INDEX_TYPE, MANIFEST_TYPE, Blob
from localrun.reference import ImageReference

DOCKER_INDEX_TYPE: Final = "application/vnd.docker.distribution.manifest.list.v2+json"
MANIFEST_TYPES: Final = (
    MANIFEST_TYPE,
    INDEX_TYPE,
    "application/vnd.docker.distribution.manifest.v2+json",
    DOCKER_INDEX_TYPE,
)
"""Every type podman pushes; a registry refuses (404) a manifest whose type is not accepted."""
TIMEOUT_S: Final = 30.0
"""Connecting, and the longest silence while reading: not the whole transfer."""
UPLOAD_CHUNK: Final = 16 << 20
"""A chunked upload sends this much per request, so no model is read into memory whole."""
MAX_MANIFEST_BYTES: Final = 4 << 20
"""containerd's own limit on a manifest or index it reads."""
_READ: Final = 1 << 20


def auth_files() -> list[Path]:
    """Where `podman login` (and docker) keep credentials, in podman's order of preference."""
    files = []
    if "REGISTRY_AUTH_FILE" in os.environ:
        files.append(Path(os.environ["REGISTRY_AUTH_FILE"]))
    runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/containers/{os.getuid()}"
    files.append(Path(runtime) / "containers" / "auth.json")
    home = Path.home()
    files += [home / ".config" / "containers" / "auth.json", home / ".docker" / "config.json"]
    return files


def stored_credentials(registry: str, files: list[Path] | None = None) -> str | None:
    """The base64 `user:password` that `podman login REGISTRY` stored, if any."""
    for file in auth_files() if files is None else files:
        try:
            auths = json.loads(file.read_text(encoding="utf-8")).get("auths", {})
        except (OSError, ValueError):
            continue
        entry = auths.get(registry) or auths.get(f"https://{registry}")
        if isinstance(entry, dict) and isinstance(entry.get("auth"), str):
            return str(entry["auth"])
    return None


class OciError(RuntimeError):
    """A registry could not be reached, refused a request, or sent what its digest denies."""


class _TimeoutAdapter(requests.adapters.HTTPAdapter):
    # requests' own signature: it passes every argument by position.
    def send(  # noqa: PLR0917
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: float | tuple[float | None, float | None] | None = None,
        verify: bool | str = True,
        cert: str | tuple[str, str] | None = None,
        proxies: dict[str, str] | None = None,
    ) -> requests.Response:
        return super().send(
            request, stream, TIMEOUT_S if timeout is None else timeout, verify, cert, proxies
        )


@dataclass(frozen=True)
class Manifest:
    """What the registry answered for one reference."""

    body: bytes
    digest: str
    """`Docker-Content-Digest`, checked against the sha256 of `body`."""
    media_type: str

    @property
    def content_bytes(self) -> int:
        """The config and layers it lists, as stored (compressed): what a pull downloads.
        0 for an index, whose images are listed, not counted."""
        try:
            manifest = json.loads(self.body)
            blobs = [manifest.get("config", {}), *manifest.get("layers", [])]
            return sum(int(blob.get("size", 0)) for blob in blobs)
        except (ValueError, AttributeError, TypeError):
            return 0


def _system_trust() -> str | bool:
    """The machine's trusted certificates, as urllib and podman use them (SSL_CERT_FILE and
    SSL_CERT_DIR too): requests would use certifi's bundle, which knows no company CA."""
    paths = ssl.get_default_verify_paths()
    return paths.cafile or paths.capath or True


class _ChallengeAuth(oras.auth.TokenAuth):  # type: ignore[misc]
    """ORAS's token flow for a Bearer challenge; the login itself for a Basic one, which
    ORAS's token backend would take for a token server's address."""

    def __init__(
        self, registry: str, session: requests.Session, url_scheme: str, tls_verify: str | bool
    ) -> None:
        # What oras.auth.get_auth_backend gives the backend it builds.
        super().__init__()
        self.registry = registry
        self.session = session
        self.prefix = url_scheme
        self._tls_verify = tls_verify

    def authenticate_request(
        self, original: requests.Response, headers: dict[str, str], refresh: bool = False
    ) -> tuple[dict[str, str], bool]:
        challenge = str(original.headers.get("Www-Authenticate", ""))
        scheme = challenge.strip().partition(" ")[0].lower()
        login = getattr(self, "_basic_auth", None)
        if scheme == "basic":
            if not login:
                raise OciError(f"{self.registry} asks for a login: podman login {self.registry}")
            return {**headers, "Authorization": f"Basic {login}"}, True
        realm = oras.auth.utils.parse_auth_header(challenge).realm
        if original.status_code == 401 and (scheme != "bearer" or not realm):
            raise OciError(f"{self.registry} answered 401 with {challenge!r}")
        headers, changed = super().authenticate_request(original, headers, refresh)
        if original.status_code == 401 and not changed:
            refused = f"{self.registry}'s token server {realm} gave no token"
            if login:
                raise OciError(f"{refused} for the stored login")
            raise OciError(f"{refused} without a login: podman login {self.registry}")
        return headers, changed


class _Oras(oras.provider.Registry):  # type: ignore[misc]
    # ORAS's do_request without its retry decorator: a registry that is down is said so at
    # once, not after 131 s of sleeping.
    do_request = oras.provider.Registry.do_request.__wrapped__

    def __init__(self, registry: str, insecure: bool) -> None:
        super().__init__(hostname=registry, insecure=insecure, tls_verify=_system_trust())
        self.auth = _ChallengeAuth(registry, self.session, self.prefix, self._tls_verify)
        adapter = _TimeoutAdapter()
        self.session.mount("http://", adapter)
        self.session.mount("https://", adapter)


class OciClient:
    """One registry (`host[:port]`), over https, or plain http where `insecure`."""

    def __init__(self, registry: str, insecure: bool, credentials: str | None = None) -> None:
        """`credentials`: base64 `user:password`; None looks where `podman login` keeps
        them, "" is anonymous."""
        self.registry = registry
        self.scheme = "http" if insecure else "https"
        self._oras = _Oras(registry, insecure)
        found = stored_credentials(registry) if credentials is None else credentials
        if found:
            user, _, password = base64.b64decode(found).decode().partition(":")
            self._oras.auth.set_basic_auth(user, password)

    def _container(self, repository: str, reference: str = "latest") -> Any:
        separator = "@" if reference.startswith("sha256:") else ":"
        return oras.container.Container(f"{self.registry}/{repository}{separator}{reference}")

    def _request(self, method: str, url: str, **kwargs: Any) -> Any:
        try:
            return self._oras.do_request(f"{self.scheme}://{url}", method, **kwargs)
        except (requests.RequestException, ValueError, OSError) as error:
            raise OciError(f"{method} {self.scheme}://{url}: {error}") from error

    @staticmethod
    def _check(response: Any, what: str, ok: tuple[int, ...] = (200, 201, 202)) -> None:
        if response.status_code not in ok:
            raise OciError(
                f"{what}: the registry answered {response.status_code}: {response.text[:500]}"
            )

    def has_blob(self, repository: str, digest: str) -> bool:
        url = self._container(repository).get_blob_url(digest)
        return int(self._request("HEAD", url).status_code) == 200

    def push_blob(self, repository: str, blob: Blob, scratch: Path) -> bool:
        """Upload `blob` unless the repository has it; False when it was there."""
        if self.has_blob(repository, blob.digest):
            return False
        path = blob.path
        if path is None:
            path = scratch / blob.digest.replace(":", "-")
            path.write_bytes(blob.data or b"")
        layer = {"digest": blob.digest, "size": blob.size, "mediaType": blob.media_type}
        try:
            response = self._oras.chunked_upload(
                str(path), self._container(repository), layer, chunk_size=UPLOAD_CHUNK
            )
        except (requests.RequestException, ValueError, OSError) as error:
            raise OciError(f"uploading {blob.digest} to {self.registry}: {error}") from error
        self._check(response, f"uploading {blob.digest} to {self.registry}/{repository}")
        return True

    def push_manifest(self, repository: str, reference: str, manifest: Blob) -> str:
        """PUT `manifest` under `reference` (a tag or its digest); the digest the registry
        answers, which must be the manifest's own."""
        url = self._container(repository, reference).manifest_url()
        headers = {"Content-Type": manifest.media_type}
        response = self._request("PUT", url, data=manifest.data, headers=headers)
        self._check(response, f"PUT {url}")
        answered = response.headers.get("Docker-Content-Digest", manifest.digest)
        if answered != manifest.digest:
            raise OciError(f"PUT {url}: the registry stored {answered}, not {manifest.digest}")
        return str(answered)

    def manifest(self, reference: ImageReference) -> Manifest:
        """The manifest or index `reference` (in this registry) names, by digest if it has
        one, else by tag: at most MAX_MANIFEST_BYTES, its `Docker-Content-Digest` the sha256
        of its bytes, and that the digest `reference` pins."""
        target = reference.digest or reference.tag
        if target is None:
            raise OciError(f"{reference} names neither a tag nor a digest")
        url = self._container(reference.repository, target).manifest_url()
        headers = {"Accept": ", ".join(MANIFEST_TYPES)}
        with self._streamed("GET", url, headers) as response:
            body = b"".join(_bounded(response, MAX_MANIFEST_BYTES, url))
        computed = "sha256:" + hashlib.sha256(body).hexdigest()
        reported = str(response.headers.get("Docker-Content-Digest", computed))
        if reported != computed:
            raise OciError(
                f"GET {self.scheme}://{url}: Docker-Content-Digest {reported} "
                f"but the body's sha256 is {computed}"
            )
        if reference.digest is not None and computed != reference.digest:
            raise OciError(f"GET {self.scheme}://{url}: the body's sha256 is {computed}")
        media_type = str(response.headers.get("Content-Type", "")).split(";")[0].strip()
        return Manifest(body, computed, media_type)

    def fetch_blob(self, repository: str, digest: str, size: int, into: Path) -> None:
        """Stream blob `digest` into `into`, refusing more than `size` bytes or other bytes
        than the digest names; `into` is left only when whole and verified."""
        url = self._container(repository).get_blob_url(digest)
        partial = into.with_name(into.name + ".part")
        hashed = hashlib.sha256()
        received = 0
        try:
            with self._streamed("GET", url, {}) as response, partial.open("wb") as file:
                for chunk in _bounded(response, size, url):
                    hashed.update(chunk)
                    received += file.write(chunk)
            if received != size:
                raise OciError(f"GET {url}: {received:,} bytes; the manifest says {size:,}")
            if (computed := "sha256:" + hashed.hexdigest()) != digest:
                raise OciError(f"GET {url}: the bytes' sha256 is {computed}, not {digest}")
            partial.rename(into)
        finally:
            partial.unlink(missing_ok=True)

    @contextmanager
    def _streamed(self, method: str, url: str, headers: dict[str, str]) -> Iterator[Any]:
        response = self._request(method, url, headers=headers, stream=True)
        try:
            self._check(response, f"{method} {self.scheme}://{url}", ok=(200,))
            yield response
        finally:
            response.close()


def _bounded(response: Any, limit: int, url: str) -> Iterator[bytes]:
    """The body in chunks, refused as soon as it passes `limit` bytes."""
    received = 0
    try:
        for chunk in response.iter_content(chunk_size=_READ):
            received += len(chunk)
            if received > limit:
                raise OciError(f"GET {url}: more than the {limit:,} bytes it may hold")
            yield chunk
    except requests.RequestException as error:
        raise OciError(f"GET {url}: {error}") from error
