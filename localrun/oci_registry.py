"""Blobs and manifests to and from a registry, through ORAS's Python client (`oras`).

ORAS speaks the distribution protocol (upload sessions, chunked uploads, Basic and Bearer
auth from a 401's challenge); what this module adds is what a model artifact from a pull
request needs: every request has a timeout, a failure is reported at once (ORAS's own
retries sleep up to 83 s between five tries), every body is bounded by the size its
descriptor declares and checked against its digest while it streams (ORAS's
`download_blob` checks neither), and credentials come from where `podman login` keeps them.
"""

import base64
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import oras.container  # type: ignore[import-untyped]
import oras.provider  # type: ignore[import-untyped]
import requests
import requests.adapters

from localrun.artifact import Blob
from localrun.registry import MANIFEST_TYPES, stored_credentials

TIMEOUT_S: Final = 30.0
"""Connecting, and the longest silence while reading: not the whole transfer."""
UPLOAD_CHUNK: Final = 16 << 20
"""A chunked upload sends this much per request, so no model is read into memory whole."""
MAX_MANIFEST_BYTES: Final = 4 << 20
"""containerd's own limit on a manifest or index it reads."""
_READ: Final = 1 << 20


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


class _Oras(oras.provider.Registry):  # type: ignore[misc]
    # ORAS's do_request without its retry decorator: a registry that is down is said so at
    # once, not after 131 s of sleeping.
    do_request = oras.provider.Registry.do_request.__wrapped__


class OciClient:
    """One registry (`host[:port]`), over https, or plain http where `insecure`."""

    def __init__(self, registry: str, insecure: bool, credentials: str | None = None) -> None:
        """`credentials`: base64 `user:password`; None looks where `podman login` keeps
        them, "" is anonymous."""
        self.registry = registry
        self.scheme = "http" if insecure else "https"
        self._oras = _Oras(hostname=registry, insecure=insecure)
        adapter = _TimeoutAdapter()
        self._oras.session.mount("http://", adapter)
        self._oras.session.mount("https://", adapter)
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

    def manifest(self, repository: str, reference: str) -> tuple[bytes, str]:
        """A manifest or index and its media type, at most MAX_MANIFEST_BYTES, checked
        against `reference` when that is a digest."""
        url = self._container(repository, reference).manifest_url()
        headers = {"Accept": ", ".join(MANIFEST_TYPES)}
        with self._streamed("GET", url, headers) as response:
            body = b"".join(_bounded(response, MAX_MANIFEST_BYTES, url))
        if reference.startswith("sha256:"):
            computed = "sha256:" + hashlib.sha256(body).hexdigest()
            if computed != reference:
                raise OciError(f"GET {url}: the body's sha256 is {computed}")
        return body, str(response.headers.get("Content-Type", "")).split(";")[0].strip()

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
