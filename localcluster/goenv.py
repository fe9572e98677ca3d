"""Where the Go builds keep their caches, and the environment every go command runs in."""

import os
from pathlib import Path


def user_cache() -> Path:
    """benchfleet's folder under the user's cache directory (XDG_CACHE_HOME or ~/.cache)."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "benchfleet"


def go_environment(*, mutable: bool = False) -> dict[str, str]:
    """The environment of a reproducible build: the machine's own Go, no cgo, go.sum as committed.

    `mutable` lets `go mod tidy` write go.mod and go.sum (updating the wrappers only).
    """
    cache = user_cache() / "go"
    return {
        **os.environ,
        "GOTOOLCHAIN": "local",
        "GOWORK": "off",
        "GOFLAGS": "-mod=mod" if mutable else "-mod=readonly",
        "CGO_ENABLED": "0",
        "GOMODCACHE": str(cache / "mod"),
        "GOCACHE": str(cache / "build"),
    }
