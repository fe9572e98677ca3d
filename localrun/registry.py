"""Ask a registry itself, over its HTTP API v2, which digest a tag or digest resolves to.

podman's `--digestfile` says what podman sent; this says what nodes will get when they pull,
which is what a pin in specs/clusters.yaml has to match.
"""

import base64
import hashlib
import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Final

from localrun.reference import ImageReference

MANIFEST_TYPES: Final = (
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
)
"""Every type podman pushes; a registry refuses (404) a manifest whose type is not accepted."""
TIMEOUT_S: Final = 30.0
_CHALLENGE_PARAMETER: Final = re.compile(r'(\w+)="([^"]*)"')


class RegistryError(RuntimeError):
    """The registry could not be asked, or its answer contradicts itself; says which."""


@dataclass(frozen=True)
class Manifest:
    """What the registry answered for one reference."""

    digest: str
    """`Docker-Content-Digest`, checked against the sha256 of the bytes it sent."""
    media_type: str
    content_bytes: int
    """The config and layers it lists, as stored (compressed): what a pull downloads.
    0 for an index, whose images are listed, not counted."""


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


def _challenge(header: str) -> tuple[str, dict[str, str]]:
    """`Bearer realm="...",service="..."` -> ("bearer", {...})."""
    scheme, _, rest = header.strip().partition(" ")
    return scheme.lower(), dict(_CHALLENGE_PARAMETER.findall(rest))


def _content_bytes(body: bytes) -> int:
    try:
        manifest = json.loads(body)
        blobs = [manifest.get("config", {}), *manifest.get("layers", [])]
        return sum(int(blob.get("size", 0)) for blob in blobs)
    except (ValueError, AttributeError, TypeError):
        return 0


class RegistryClient:
    """Anonymous, Basic or Bearer-token access, as the registry's 401 challenge asks."""

    def __init__(self, insecure: bool = False, credentials: str | None = None) -> None:
        """`insecure`: plain HTTP, for a registry on loopback. `credentials`: base64
        `user:password` (as in auth.json); None means look in podman's auth files, "" means
        anonymous."""
        self.insecure = insecure
        self.credentials = credentials

    def manifest(self, reference: ImageReference) -> Manifest:
        """GET the manifest of `reference` (by digest if it has one, else by tag)."""
        target = reference.digest or reference.tag
        if target is None:
            raise RegistryError(f"{reference} names neither a tag nor a digest")
        scheme = "http" if self.insecure else "https"
        url = f"{scheme}://{reference.registry}/v2/{reference.repository}/manifests/{target}"
        headers = {"Accept": ", ".join(MANIFEST_TYPES)}
        status, answer_headers, body = self._get(url, headers)
        if status == 401:
            authorization = self._authorize(reference, answer_headers.get("WWW-Authenticate", ""))
            status, answer_headers, body = self._get(url, {**headers, **authorization})
        if status != 200:
            answer = body[:500].decode(errors="replace")
            raise RegistryError(f"GET {url} answered {status}: {answer}")
        computed = "sha256:" + hashlib.sha256(body).hexdigest()
        reported = answer_headers.get("Docker-Content-Digest", computed)
        if reported != computed:
            raise RegistryError(
                f"GET {url}: Docker-Content-Digest {reported} but the body's sha256 is {computed}"
            )
        if reference.digest is not None and reported != reference.digest:
            raise RegistryError(f"GET {url} answered a manifest with digest {reported}")
        return Manifest(reported, answer_headers.get("Content-Type", ""), _content_bytes(body))

    def _credentials(self, registry: str) -> str | None:
        return self.credentials if self.credentials is not None else stored_credentials(registry)

    def _authorize(self, reference: ImageReference, challenge: str) -> dict[str, str]:
        scheme, parameters = _challenge(challenge)
        credentials = self._credentials(reference.registry)
        if scheme == "basic":
            if not credentials:
                raise RegistryError(
                    f"{reference.registry} asks for a login: podman login {reference.registry}"
                )
            return {"Authorization": f"Basic {credentials}"}
        if scheme != "bearer" or "realm" not in parameters:
            raise RegistryError(f"{reference.registry} answered 401 with {challenge!r}")
        query = {"scope": f"repository:{reference.repository}:pull"}
        if "service" in parameters:
            query["service"] = parameters["service"]
        url = f"{parameters['realm']}?{urllib.parse.urlencode(query)}"
        login = {"Authorization": f"Basic {credentials}"} if credentials else {}
        status, _, body = self._get(url, login)
        if status != 200:
            raise RegistryError(f"token request {url} answered {status}: {body[:300]!r}")
        answer = json.loads(body)
        token = answer.get("token") or answer.get("access_token")
        if not isinstance(token, str):
            raise RegistryError(f"token request {url} returned no token")
        return {"Authorization": f"Bearer {token}"}

    @staticmethod
    def _get(url: str, headers: dict[str, str]) -> tuple[int, Message, bytes]:
        """Status, headers (looked up case-insensitively: Go registries send
        `Www-Authenticate`) and body; only a failure to connect raises."""
        request = urllib.request.Request(url, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read()
        except (urllib.error.URLError, OSError) as error:
            raise RegistryError(f"GET {url}: {error}") from error


def basic_credentials(user: str, password: str) -> str:
    """The base64 `user:password` auth.json stores."""
    return base64.b64encode(f"{user}:{password}".encode()).decode()
