"""`make image` and `make push`: build the runner image with podman, push it, and learn its digest.

The digest that counts is the one the registry serves for the tag, since that is what nodes
pull: podman's `--digestfile` is checked against it, and only a match is recorded for
`make pin-image` (localrun/pin.py).
"""

import argparse
import datetime
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from localrun.e2e_container import Timings, install_tools
from localrun.oci_registry import OciClient, OciError
from localrun.pin import PUSH_RECORD
from localrun.podman import (
    BASE_IMAGE,
    REPO_ROOT,
    Podman,
    PodmanError,
    build_base_image,
    build_image,
    check_call,
    configure_podman,
    image_exists,
    prepare_context,
)
from localrun.reference import (
    BadReference,
    ImageReference,
    check_digest,
    in_registry,
    parse_registry,
    qualified,
)

LOCAL_NAME: Final = "localhost/benchfleet-runner"
REMOTE_NAME: Final = "runner"
"""The repository under REGISTRY, as in specs/clusters.yaml's `.../benchfleet/runner@sha256:`."""
DOCKERFILE: Final = REPO_ROOT / "runner" / "Dockerfile"
OFFICIAL_PROVIDES: Final = ("torch",)
"""The official base's CUDA torch satisfies the pin, so no torch wheel goes into its context."""
Base = Literal["auto", "official", "local"]


class ImageError(RuntimeError):
    """A build or push step failed, or the registry disagrees with podman; says which."""


def project_version(pyproject: Path = REPO_ROOT / "pyproject.toml") -> str:
    version = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"]
    return str(version)


def local_image(version: str | None = None) -> str:
    """`localhost/benchfleet-runner:<project version>`, the tag `make image` builds."""
    return f"{LOCAL_NAME}:{version or project_version()}"


def official_base(dockerfile: Path = DOCKERFILE) -> str:
    """The Dockerfile's default BASE_IMAGE, registry named: one place says which official
    image, by digest."""
    match = re.search(r"^ARG BASE_IMAGE=(\S+)$", dockerfile.read_text(encoding="utf-8"), re.M)
    if match is None:
        raise ImageError(f"{dockerfile} has no `ARG BASE_IMAGE=...` line")
    return qualified(match.group(1))


def _output(podman: Podman, *arguments: str) -> str:
    completed = subprocess.run(
        podman.command(*arguments),
        env=podman.environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode:
        raise PodmanError(f"podman {' '.join(arguments)}: {completed.stderr.strip()[-2000:]}")
    return completed.stdout.strip()


def choose_base(podman: Podman, wanted: Base) -> tuple[str, str]:
    """(base image, why): the official image when it can be pulled, else the local one."""
    if wanted != "local":
        official = official_base()
        try:
            check_call(podman.command("pull", "--quiet", official), podman.environment())
            return official, "official image, pulled by digest"
        except PodmanError as error:
            if wanted == "official":
                raise
            reason = next((line for line in str(error).splitlines()[1:] if line), str(error))
            # The end of podman's message holds the cause (DNS, TLS, auth, unknown digest).
            note = f"official image not pullable (...{reason.strip()[-120:]}); "
    else:
        note = ""
    built = build_base_image(podman)
    return BASE_IMAGE, note + ("debootstrap + podman import" if built else "local base reused")


def base_python(podman: Podman, base: str) -> str:
    """`3.11`: the Python the base runs, which the wheels must be built for."""
    return _output(
        podman,
        "run",
        "--rm",
        "--network",
        "none",
        "--entrypoint",
        "python3",
        base,
        "-c",
        "import sys; print('%d.%d' % sys.version_info[:2])",
    )


@dataclass(frozen=True)
class Built:
    image: str
    image_id: str
    size_bytes: int
    base: str


def build(podman: Podman, workdir: Path, timings: Timings, wanted: Base = "auto") -> Built:
    """Build runner/Dockerfile as `localhost/benchfleet-runner:<version>`."""
    with timings.step("base image") as notes:
        base, why = choose_base(podman, wanted)
        notes.append(why)
    with timings.step("build context") as notes:
        if base == BASE_IMAGE:
            context = prepare_context(workdir / "context")
        else:
            context = prepare_context(
                workdir / "context",
                python_version=base_python(podman, base),
                base_provides=OFFICIAL_PROVIDES,
            )
        wheels = list((context / "wheels").iterdir())
        size = sum(wheel.stat().st_size for wheel in wheels)
        notes.append(f"pip download: {len(wheels)} wheels, {size / 1e9:.2f} GB")
    image = local_image()
    with timings.step("image build") as notes:
        build_image(podman, context, image=image, base=base)
        notes.append(image)
    # Its wheels (2.7 GB) are in the image now; a push that follows needs the disk.
    shutil.rmtree(context)
    image_id, size_text = _output(
        podman, "image", "inspect", "--format", "{{.Id}} {{.Size}}", image
    ).split()
    return Built(image, image_id, int(size_text), base)


@dataclass(frozen=True)
class Pushed:
    reference: ImageReference
    """`registry/path/runner:<tag>` as pushed."""
    digest: str
    """What the registry serves for the tag, equal to podman's --digestfile."""
    compressed_bytes: int
    """Config and layers as stored in the registry, i.e. what a node downloads."""

    @property
    def pinned(self) -> str:
        return f"{self.reference.name}@{self.digest}"


def push(
    podman: Podman,
    local: str,
    target: ImageReference,
    workdir: Path,
    insecure: bool,
) -> Pushed:
    """`podman push` `local` to `target` (name:tag), then ask the registry what it holds."""
    if not image_exists(podman, local):
        raise ImageError(f"{local} is not built here: run `make image` first")
    digestfile = workdir / "digest"
    check_call(
        podman.command(
            "push",
            f"--tls-verify={'false' if insecure else 'true'}",
            "--digestfile",
            str(digestfile),
            local,
            f"docker://{target}",
        ),
        podman.environment(),
    )
    pushed = check_digest(digestfile.read_text(encoding="utf-8").strip())
    manifest = OciClient(target.registry, insecure).manifest(target)
    if manifest.digest != pushed:
        raise ImageError(
            f"podman pushed {target} as {pushed}, but the registry serves {manifest.digest}"
        )
    return Pushed(target, manifest.digest, manifest.content_bytes)


def record(pushed: Pushed, local: str, path: Path = PUSH_RECORD) -> None:
    """Keep what was pushed for `make pin-image`, which then needs no arguments."""
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = {
        "image": pushed.reference.name,
        "tag": pushed.reference.tag,
        "digest": pushed.digest,
        "local_image": local,
        "pushed_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    path.write_text(json.dumps(entry, indent=2) + "\n", encoding="utf-8")


def _say(message: str) -> None:
    print(f"image: {message}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localrun.image", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    build_command = commands.add_parser("build", help="build the runner image")
    build_command.add_argument("--base", choices=["auto", "official", "local"], default="auto")
    push_command = commands.add_parser("push", help="push it, and record its digest")
    push_command.add_argument("--registry", default="", help="host[:port]/path")
    push_command.add_argument("--tag", default="", help="default: the project version")
    push_command.add_argument(
        "--insecure", action="store_true", help="plain HTTP (automatic for a loopback registry)"
    )
    arguments = parser.parse_args(argv)
    timings = Timings()
    with tempfile.TemporaryDirectory(prefix="benchfleet-image-") as scratch:
        try:
            with timings.step("install") as notes:
                notes.append(install_tools())
            podman = configure_podman(Path(scratch))
            if arguments.command == "build":
                built = build(podman, Path(scratch), timings, arguments.base)
                size = f"{built.size_bytes / 1e9:.2f} GB"
                _say(f"built {built.image} ({built.image_id[:12]}, {size}) from {built.base}")
                return 0
            target = in_registry(
                parse_registry(arguments.registry),
                REMOTE_NAME,
                arguments.tag or project_version(),
            )
            with timings.step("push") as notes:
                insecure = arguments.insecure or target.is_loopback
                pushed = push(podman, local_image(), target, Path(scratch), insecure)
                notes.append(f"{pushed.compressed_bytes / 1e9:.2f} GB in the registry")
            record(pushed, local_image())
            _say(f"pushed {target}; the registry serves it as {pushed.digest}")
            _say(f"recorded {PUSH_RECORD.relative_to(REPO_ROOT)}: now `make pin-image`")
            print(pushed.pinned)
            return 0
        except (PodmanError, ImageError, BadReference, OciError) as error:
            print(f"image: FAILED: {error}", file=sys.stderr)
            return 1
        finally:
            print(timings.table(), file=sys.stderr, flush=True)


if __name__ == "__main__":
    sys.exit(main())
