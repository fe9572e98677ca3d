"""Build the local cluster's binaries from the Go module proxy, once per set of versions.

Each toolset's binaries (the cluster's, the lake's server) land in
<user cache>/benchfleet/<toolset folder>/<key>/, where the key hashes the Go version, the
platform, every component's version, build flags and the wrapper files: a warm cache
rebuilds nothing, and any change builds into a new folder. A folder is complete only once
its stamp (build.json) is written, after which it is renamed into place.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from localcluster.components import CLUSTER_TOOLS, TOOLSETS, Component, Toolset
from localcluster.goenv import go_environment, user_cache
from localcluster.gomod import check_wrapper

STAMP = "build.json"


def _go_version() -> str:
    return (
        subprocess.run(
            ["go", "env", "GOVERSION", "GOOS", "GOARCH"],
            env=go_environment(),
            check=True,
            capture_output=True,
            text=True,
        )
        .stdout.replace("\n", " ")
        .strip()
    )


def _ldflags(component: Component) -> str:
    return " ".join(("-s", "-w", *component.version_ldflags))


def build_key(components: Iterable[Component] = CLUSTER_TOOLS.components) -> str:
    """A hash of everything the binaries depend on."""
    digest = hashlib.sha256(_go_version().encode())
    for component in components:
        digest.update(repr(component).encode())
        for name in ("go.mod", "go.sum", "main.go"):
            path = component.directory / name
            if path.exists():
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def binary_dir(toolset: Toolset = CLUSTER_TOOLS) -> Path:
    """Where the binaries of the committed versions are (or will be) kept."""
    override = os.environ.get(toolset.override)
    if override:
        return Path(override)
    return user_cache() / toolset.folder / build_key(toolset.components)


def is_built(directory: Path | None = None, toolset: Toolset = CLUSTER_TOOLS) -> bool:
    """Whether every binary of every component is in `directory` with its stamp (False where
    there is no Go to say which versions those would be)."""
    try:
        directory = directory or binary_dir(toolset)
    except FileNotFoundError:
        return False
    names = [name for component in toolset.components for name in component.binaries]
    return (directory / STAMP).is_file() and all((directory / n).is_file() for n in names)


def _build_binary(component: Component, name: str, package: str, out: Path) -> float:
    """`go build` one main package into `out`; the seconds it took."""
    command = ["go", "build", "-p", "2", "-trimpath", "-ldflags", _ldflags(component)]
    if component.build_tags:
        command += ["-tags", ",".join(component.build_tags)]
    command += ["-o", str(out / name), package]
    started = time.monotonic()
    subprocess.run(command, cwd=component.directory, env=go_environment(), check=True)
    return round(time.monotonic() - started, 1)


def _module_dir(component: Component) -> Path:
    """The module's files in the module cache (downloaded and checked against go.sum)."""
    downloaded = subprocess.run(
        ["go", "mod", "download", "-json", f"{component.module}@{component.version}"],
        cwd=component.directory,
        env=go_environment(),
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(json.loads(downloaded.stdout)["Dir"])


def data_dir(binaries: Path, component: Component) -> Path:
    """Where `component`'s data files are kept beside the binaries."""
    return binaries / "data" / component.wrapper


def _copy_data(component: Component, out: Path) -> None:
    source = _module_dir(component)
    target = data_dir(out, component)
    target.mkdir(parents=True, exist_ok=True)
    for pattern in component.data:
        found = sorted(source.glob(pattern))
        if not found:
            raise RuntimeError(f"{component.module}@{component.version} has no {pattern}")
        for path in found:
            shutil.copyfile(path, target / path.name)


def build_all(log: bool = True) -> list[Path]:
    """Build every toolset's missing binaries (`make cluster-build`); their folders."""
    return [build(log, toolset) for toolset in TOOLSETS]


def build(log: bool = True, toolset: Toolset = CLUSTER_TOOLS) -> Path:
    """Build whatever is missing (sequentially, to bound memory); the binaries' folder."""
    target = binary_dir(toolset)
    if is_built(target, toolset):
        return target
    partial = target.with_name(f"{target.name}.partial")
    partial.mkdir(parents=True, exist_ok=True)
    stamp: dict[str, object] = {"go": _go_version(), "binaries": {}}
    binaries: dict[str, dict[str, object]] = {}
    for component in toolset.components:
        check_wrapper(component)
        _copy_data(component, partial)
        for name, package in component.binaries.items():
            if log:
                print(f"building {name} ({component.module}@{component.version})", file=sys.stderr)
            seconds = _build_binary(component, name, package, partial)
            binary = partial / name
            binaries[name] = {
                "module": f"{component.module}@{component.version}",
                "seconds": seconds,
                "bytes": binary.stat().st_size,
                "sha256": hashlib.sha256(binary.read_bytes()).hexdigest(),
            }
    stamp["binaries"] = binaries
    (partial / STAMP).write_text(json.dumps(stamp, indent=2) + "\n")
    if target.exists():
        shutil.rmtree(target)
    partial.rename(target)
    # Binaries of other versions are half a gigabyte each and nothing uses them any more.
    for stale in target.parent.iterdir():
        if stale != target and stale.is_dir():
            shutil.rmtree(stale)
    return target
