"""Wrapper modules: a go.mod derived from the upstream module's own, so its main packages build.

An upstream module's `replace` lines are ignored when it is a dependency, and several of
ours point at folders of their own repository (k8s.io/kubernetes' staging modules at
v0.0.0, Flux's `./api`): `go build` of their main packages from the proxy fails unless
the wrapper says where those modules come from. The replace block is derived here from the
upstream go.mod, never written by hand; the build checks the committed one still matches.

`python -m localcluster.gomod` rewrites every wrapper's go.mod and runs `go mod tidy`
(development only: it needs the module proxy and writes go.sum).
"""

import json
import subprocess
from pathlib import Path
from typing import Any

from localcluster.components import TOOLSETS, Component
from localcluster.goenv import go_environment


def _go(args: list[str], cwd: Path | None = None, *, mutable: bool = False) -> str:
    """Run the go command with the project's build environment; its stdout."""
    return subprocess.run(
        ["go", *args],
        cwd=cwd,
        env=go_environment(mutable=mutable),
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def upstream_go_mod(component: Component) -> dict[str, Any]:
    """The upstream module's go.mod, as `go mod edit -json` reads it."""
    download = json.loads(
        _go(["mod", "download", "-json", f"{component.module}@{component.version}"])
    )
    parsed: dict[str, Any] = json.loads(_go(["mod", "edit", "-json", download["GoMod"]]))
    return parsed


def _is_local(path: str) -> bool:
    return path.startswith(("./", "../"))


def derived_replaces(component: Component, upstream: dict[str, Any]) -> dict[str, str]:
    """module -> `path version` for every replace the wrapper needs.

    A replace by a folder of the upstream repository becomes the published module at the
    version upstream requires (its staging version where that is v0.0.0); replaces of
    modules upstream never requires are dropped; the rest are copied as they are.
    """
    required = {r["Path"]: r["Version"] for r in upstream.get("Require") or []}
    replaces = {}
    for replace in upstream.get("Replace") or []:
        old, new = replace["Old"]["Path"], replace["New"]
        if not _is_local(new["Path"]):
            replaces[old] = f"{new['Path']} {new['Version']}"
        elif old in required:
            version = required[old]
            if version == "v0.0.0":
                if component.staging_version is None:
                    raise ValueError(f"{component.module}: {old} is v0.0.0 and no staging version")
                version = component.staging_version
            replaces[old] = f"{old} {version}"
    return dict(sorted(replaces.items()))


def committed_replaces(component: Component) -> dict[str, str]:
    """The replace lines of the wrapper's committed go.mod."""
    parsed = json.loads(_go(["mod", "edit", "-json"], cwd=component.directory))
    return {
        r["Old"]["Path"]: f"{r['New']['Path']} {r['New']['Version']}"
        for r in parsed.get("Replace") or []
    }


def check_wrapper(component: Component) -> None:
    """Raise unless the committed go.mod's replaces are the ones upstream's go.mod implies."""
    want = derived_replaces(component, upstream_go_mod(component))
    have = committed_replaces(component)
    if want != have:
        differ = sorted(set(want.items()) ^ set(have.items()))
        raise RuntimeError(
            f"{component.directory}/go.mod: replaces differ from {component.module}"
            f"@{component.version}'s go.mod: {differ}; run `python -m localcluster.gomod`"
        )


def render_go_mod(component: Component, upstream: dict[str, Any]) -> str:
    """A wrapper go.mod before `go mod tidy` fills in the indirect requirements."""
    lines = [f"module benchfleet.local/localcluster/{component.wrapper}", ""]
    lines += [f"go {upstream['Go']}", ""]
    for godebug in upstream.get("GoDebug") or []:
        lines += [f"godebug {godebug['Key']}={godebug['Value']}", ""]
    tools = [package for package in component.binaries.values() if package != "."]
    if tools:
        lines += ["tool (", *(f"\t{tool}" for tool in tools), ")", ""]
    lines += [f"require {component.module} {component.version}", ""]
    replaces = derived_replaces(component, upstream)
    if replaces:
        lines += ["replace (", *(f"\t{old} => {new}" for old, new in replaces.items()), ")"]
    return "\n".join(lines) + "\n"


def update_wrapper(component: Component) -> None:
    """Rewrite the wrapper's go.mod from upstream's and resolve what its binaries import.

    `go get` of the packages, not `go mod tidy`: tidy also resolves the tests of every tool
    package, and the proxy does not serve all of those (Flux's helmtestserver, say).
    """
    (component.directory / "go.mod").write_text(
        render_go_mod(component, upstream_go_mod(component))
    )
    packages = [
        f"{package}@{component.version}"
        for package in component.binaries.values()
        if package != "."
    ]
    if packages:
        command = ["get", *packages]
    elif component.binaries:
        command = ["mod", "tidy"]  # a main package of the wrapper's own
    else:
        command = ["mod", "download", f"{component.module}@{component.version}"]
    _go(command, cwd=component.directory, mutable=True)


if __name__ == "__main__":
    for each in (component for toolset in TOOLSETS for component in toolset.components):
        update_wrapper(each)
        print(f"{each.directory}/go.mod: {each.module}@{each.version}")
