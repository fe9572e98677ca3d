"""Image references (`registry/path/name:tag@sha256:...`): parse them, and refuse bad ones early.

The grammar is the registry protocol's (distribution/reference): a typo here would otherwise
surface only on a GPU node, as ImagePullBackOff, after Flux has applied every Job.
"""

import ipaddress
import re
from dataclasses import dataclass
from typing import Final

_COMPONENT: Final = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_DOMAIN_PART: Final = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN: Final = re.compile(
    rf"(?:{_DOMAIN_PART}(?:\.{_DOMAIN_PART})*|\[[0-9a-fA-F:]+\])(?::[0-9]{{1,5}})?"
)
_PATH: Final = re.compile(rf"{_COMPONENT}(?:/{_COMPONENT})*")
_TAG: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_SHA256: Final = re.compile(r"sha256:[0-9a-f]{64}")
NAME_LIMIT: Final = 255
"""The protocol's limit on a repository name, registry included."""
PODMAN_LOCAL: Final = "localhost"
"""podman's prefix for images it built itself: no node can pull from it."""


class BadReference(ValueError):
    """An image reference or registry that a node could not pull from; says why."""


@dataclass(frozen=True)
class ImageReference:
    """`registry/repository[:tag][@digest]`, with the registry always named."""

    registry: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    @property
    def name(self) -> str:
        """`registry/repository`: what comes before a tag or digest."""
        return f"{self.registry}/{self.repository}"

    def with_tag(self, tag: str) -> "ImageReference":
        return ImageReference(self.registry, self.repository, _check_tag(tag), None)

    def with_digest(self, digest: str) -> "ImageReference":
        return ImageReference(self.registry, self.repository, None, check_digest(digest))

    def __str__(self) -> str:
        return (
            self.name
            + (f":{self.tag}" if self.tag else "")
            + (f"@{self.digest}" if self.digest else "")
        )

    @property
    def is_loopback(self) -> bool:
        """Whether the registry is on this machine, where plain HTTP is the norm."""
        host = host_of(self.registry)
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False


def host_of(registry: str) -> str:
    """The host of `host[:port]`, without brackets for IPv6."""
    if registry.startswith("["):
        return registry[1 : registry.index("]")]
    return registry.rsplit(":", 1)[0] if ":" in registry else registry


def check_digest(digest: str) -> str:
    if not _SHA256.fullmatch(digest):
        raise BadReference(
            f"digest {digest!r} is not sha256:<64 lowercase hex digits>, what registries report"
        )
    return digest


def _check_tag(tag: str) -> str:
    if not _TAG.fullmatch(tag):
        raise BadReference(
            f"tag {tag!r} is not a valid tag: letters, digits, '_', '.' and '-', at most 128, "
            "not starting with '.' or '-'"
        )
    return tag


def _split_registry(text: str, what: str) -> tuple[str, str]:
    """`(registry, rest)`; a first component counts as a registry only as the protocol says:
    it has a '.' or ':', or is 'localhost' (else Docker Hub would be meant, silently)."""
    first, _, rest = text.partition("/")
    if not ("." in first or ":" in first or first == PODMAN_LOCAL or first.startswith("[")):
        raise BadReference(
            f"{what} {text!r} names no registry: write host[:port]/path (e.g. "
            "registry.example.com/benchfleet), or nodes would look for it on Docker Hub"
        )
    if not _DOMAIN.fullmatch(first):
        raise BadReference(f"{what} {text!r}: {first!r} is not a valid registry host[:port]")
    if first == PODMAN_LOCAL:
        raise BadReference(
            f"{what} {text!r} is podman's name for an image on this machine, not a registry "
            "nodes can pull from: push it first (make push REGISTRY=host:port/path)"
        )
    return first, rest


def _check_repository(repository: str, whole: str, what: str) -> str:
    if not _PATH.fullmatch(repository):
        raise BadReference(
            f"{what} {whole!r}: repository {repository!r} is not valid: lowercase letters, "
            "digits and separators ('.', '_', '__', '-') between '/'-separated parts"
        )
    return repository


def qualified(text: str) -> str:
    """`text` with Docker Hub named when it names no registry, as Docker would read it.

    podman resolves short names only through registries.conf, which Debian leaves empty, so
    `pytorch/pytorch:...` fails there while `docker.io/pytorch/pytorch:...` is pulled.
    """
    first, slash, _ = text.partition("/")
    if slash and ("." in first or ":" in first or first == PODMAN_LOCAL):
        return text
    return f"docker.io/{text}" if slash else f"docker.io/library/{text}"


def parse_registry(text: str) -> ImageReference:
    """`host:port/path` as given to `make push REGISTRY=...`: a reference with no name yet.

    Its `repository` is the path, possibly empty.
    """
    text = text.strip().rstrip("/")
    if not text:
        raise BadReference("no registry given: make push REGISTRY=host:port/path")
    registry, path = _split_registry(text, "registry")
    if path:
        _check_repository(path, text, "registry")
    return ImageReference(registry, path)


def in_registry(registry: ImageReference, name: str, tag: str) -> ImageReference:
    """`name:tag` under `registry` (as parse_registry returned it)."""
    repository = f"{registry.repository}/{name}" if registry.repository else name
    reference = ImageReference(registry.registry, repository)
    _check_repository(repository, str(reference), "image")
    return _check_length(reference).with_tag(tag)


def _check_length(reference: ImageReference) -> ImageReference:
    if len(reference.name) > NAME_LIMIT:
        raise BadReference(f"image name {reference.name!r} is over {NAME_LIMIT} characters")
    return reference


def parse_reference(text: str) -> ImageReference:
    """`registry/repository[:tag][@sha256:...]`; raises BadReference saying what is wrong."""
    text = text.strip()
    if not text:
        raise BadReference("no image reference given")
    name, at, digest = text.partition("@")
    registry, rest = _split_registry(name, "image")
    repository, colon, tag = rest.rpartition(":") if ":" in rest else (rest, "", "")
    if not repository:
        raise BadReference(f"image {text!r} names a registry but no repository")
    reference = _check_length(
        ImageReference(registry, _check_repository(repository, text, "image"))
    )
    return ImageReference(
        reference.registry,
        reference.repository,
        _check_tag(tag) if colon else None,
        check_digest(digest) if at else None,
    )


def parse_pinned(text: str) -> ImageReference:
    """A reference pinned by digest, as a Job must name its image."""
    reference = parse_reference(text)
    if reference.digest is None:
        raise BadReference(
            f"image {text!r} is not pinned by digest: write {reference.name}@sha256:<digest> "
            "(a tag can move under last week's numbers)"
        )
    return reference
