"""Start a PodPlan in podman as the kubelet would start the pod, on a host with no registry.

No base image can be pulled here, so the runner image is built FROM a Debian base made with
debootstrap; the Dockerfile is the one a cluster's image is built from, with the official
PyTorch base swapped in through a build argument.
"""

import hashlib
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from localrun.images import ImageMount
from localrun.pod import PodPlan, PodRun, PodSpecError
from localrun.reference import parse_reference
from localrun.streams import Watch, follow

REPO_ROOT: Final = Path(__file__).resolve().parents[1]
IMAGE_PACKAGES: Final = ("runner", "contract")
BASE_PACKAGES: Final = ("python3", "python3-venv", "ca-certificates", "g++", "python3-dev")
"""What debootstrap adds to Debian's minbase: Python 3.11 (the host wheels' Python) and its
venv, the public CAs a `url` model's download trusts (the official image has them), and what
inductor builds a compiled variant's CPU kernels with: a C++ compiler and Python's headers
(each kernel is a Python extension)."""
BASE_IMAGE: Final = (
    "localhost/benchfleet-base:bookworm-"
    + hashlib.sha256(",".join(BASE_PACKAGES).encode()).hexdigest()[:8]
)
"""Tagged by its packages: a base made before a package was added is not reused for it."""
RUNNER_IMAGE: Final = "localhost/benchfleet-runner:dev"
DEBIAN_MIRROR: Final = "http://deb.debian.org/debian"
# crun refuses this host's hybrid cgroup hierarchy, and no systemd runs here to manage cgroups.
GLOBAL_OPTIONS: Final = ("--runtime", "/usr/sbin/runc", "--cgroup-manager", "cgroupfs")
# podman's default ulimits exceed this host's hard limits, so every container start fails.
CONTAINERS_CONF: Final = "[containers]\ndefault_ulimits = []\n"
RUNNER_BASE_DISTRIBUTIONS: Final = ("pydantic",)
"""Of the base dependencies, what the runner imports at run time (the contract's models);
the rest of what it imports is the runner's extras, whole."""
RUNNER_EXTRAS: Final = ("runner", "runtimes")
"""The extras the image installs: the runner's, and the deployment runtimes' (ONNX Runtime
and torch's ONNX exporter's libraries, 123 MB installed beside torch's several GB)."""
CUDA_BUILDS: Final = "cuda"
"""The extra of GPU builds that an image whose torch is PyPI's installs in place of the CPU
builds they include (onnxruntime-gpu for onnxruntime: CUDA 13 and cuDNN 9, as PyPI's torch
2.13.0, whose libraries it loads). Each pin there names a distribution `<cpu build>-gpu`.
The official base's torch is built for CUDA 12.6, which they are not: it keeps the CPU
builds, and a GPU variant that needs them fails saying which provider is missing."""
RUNNER_LAKE_DISTRIBUTIONS: Final = ("boto3",)
"""Of the `lake` extra, what the runner imports where its pod names a result lake: the
store's client (boto3 with botocore, s3transfer and jmespath, 36 MB installed, botocore's
service descriptions most of it), not the Parquet and SQL libraries the collector reads the
lake with."""
FOREIGN_PLATFORMS: Final = (
    "manylinux_2_28_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
)
"""pip must be told every tag a foreign Python accepts; these cover numpy's and pydantic's."""
# An imported rootfs has no image config, and the Dockerfile extends PATH rather than set it.
_BASE_PATH: Final = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class PodmanError(RuntimeError):
    """A podman, pip or debootstrap step failed; the message carries its output."""


@dataclass(frozen=True)
class Podman:
    """How to call podman on this host."""

    containers_conf: Path

    def command(self, *arguments: str) -> list[str]:
        return ["podman", *GLOBAL_OPTIONS, *arguments]

    def environment(self) -> dict[str, str]:
        return {**os.environ, "CONTAINERS_CONF": str(self.containers_conf)}


def configure_podman(folder: Path) -> Podman:
    """Write the containers.conf this host needs into `folder`."""
    conf = folder / "containers.conf"
    conf.write_text(CONTAINERS_CONF, encoding="utf-8")
    return Podman(conf)


def run_arguments(plan: PodPlan, termination_log: Path, name: str | None = None) -> list[str]:
    """The `podman run` arguments that give the container what the pod spec gives it, and
    `name` where given.

    `termination_log` is the host file bind-mounted where the kubelet would read the
    termination message.
    """
    if plan.gpus:
        raise PodSpecError(
            f"Job {plan.job_name} asks for {plan.gpus} GPU(s); local podman runs are CPU only"
        )
    arguments = ["run", "--rm", *(("--name", name) if name else ())]
    if plan.read_only_root:
        # podman otherwise adds writable /run, /tmp and /var/tmp, which a pod does not have.
        arguments += ["--read-only", "--read-only-tmpfs=false"]
    for path in plan.tmpfs:
        # An emptyDir is executable; podman's tmpfs default (noexec) would break compiled kernels.
        arguments += ["--tmpfs", f"{path}:rw,exec,nosuid,nodev,mode=1777"]
    arguments += [
        "--user",
        f"{plan.run_as_user}:{plan.run_as_group}",
        "--cap-drop",
        "ALL",
        "--security-opt",
        "no-new-privileges",
        "--network",
        "none",
    ]
    if plan.cpu_limit is not None:
        arguments += ["--cpus", f"{plan.cpu_limit:g}"]
    if plan.memory_limit_bytes is not None:
        arguments += ["--memory", str(plan.memory_limit_bytes)]
    for mount in (*plan.mounts, *plan.image_files):
        mode = ":ro" if mount.read_only else ""
        arguments += ["-v", f"{mount.host_path}:{mount.container_path}{mode}"]
    for image in plan.images:
        arguments += image_mount(image)
    for variable, value in plan.env.items():
        # A Secret's value by name only: podman takes it from its own environment
        # (`secret_environment`), so it is never on a command line anyone may read.
        arguments += ["-e", variable if variable in plan.secret_env else f"{variable}={value}"]
    arguments += ["-v", f"{termination_log}:{plan.termination_message_path}"]
    arguments.append(plan.image)
    return arguments


def secret_environment(podman: Podman, plan: PodPlan) -> dict[str, str]:
    """podman's environment for running `plan`: its own, with the values the container's env
    takes from Secrets, which `run_arguments` passes by name."""
    return {**podman.environment(), **{name: plan.env[name] for name in plan.secret_env}}


def image_mount(image: ImageMount) -> list[str]:
    """podman's mount of an image volume: read-only unless asked otherwise, the files of the
    image podman pulled into its storage with containers/image, CRI-O's image library."""
    mount = f"type=image,source={image.reference},destination={image.container_path}"
    return ["--mount", mount]


def check_call(command: Sequence[str], env: dict[str, str] | None = None) -> None:
    """Run `command`; raise PodmanError with the tail of its output if it fails."""
    completed = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if completed.returncode:
        output = (completed.stdout + completed.stderr)[-4000:]
        raise PodmanError(f"{' '.join(command)} exited {completed.returncode}:\n{output}")


def image_exists(podman: Podman, image: str) -> bool:
    completed = subprocess.run(
        podman.command("image", "exists", image), env=podman.environment(), check=False
    )
    return completed.returncode == 0


def image_id(podman: Podman, image: str) -> str | None:
    """The ID `image` names here, None when it names none."""
    return _inspect(podman, image, "{{.Id}}")


def _inspect(podman: Podman, image: str, field: str) -> str | None:
    completed = subprocess.run(
        podman.command("image", "inspect", "--format", field, image),
        env=podman.environment(),
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode:
        return None
    return completed.stdout.strip()


def build_base_image(podman: Podman, image: str = BASE_IMAGE) -> bool:
    """Make `image` from a debootstrap bookworm rootfs with BASE_PACKAGES; False when it
    already exists.

    Debian's python3 is 3.11, the Python the torch wheel on this host is built for.
    """
    if image_exists(podman, image):
        return False
    with tempfile.TemporaryDirectory(prefix="benchfleet-rootfs-") as scratch:
        rootfs = Path(scratch) / "rootfs"
        check_call(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={','.join(BASE_PACKAGES)}",
                "bookworm",
                str(rootfs),
                DEBIAN_MIRROR,
            ]
        )
        archive = Path(scratch) / "rootfs.tar"
        check_call(["tar", "-C", str(rootfs), "-cf", str(archive), "."])
        check_call(
            podman.command("import", "--change", f"ENV PATH={_BASE_PATH}", str(archive), image),
            podman.environment(),
        )
    return True


def _distribution(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    return match.group().lower() if match else requirement


def runner_requirements(
    pyproject: Path = REPO_ROOT / "pyproject.toml", *, gpu_builds: bool = False
) -> list[str]:
    """The runner's run-time requirements, pinned as pyproject.toml pins them; with
    `gpu_builds`, the `cuda` extra's GPU builds in place of their CPU builds."""
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    base = {_distribution(requirement): requirement for requirement in project["dependencies"]}
    missing = [name for name in RUNNER_BASE_DISTRIBUTIONS if name not in base]
    if missing:
        raise PodmanError(f"{pyproject} declares no {', '.join(missing)}")
    extras: dict[str, list[str]] = project["optional-dependencies"]
    pins = [pin for name in RUNNER_EXTRAS for pin in extras[name]]
    if gpu_builds:
        builds = {_distribution(pin).removesuffix("-gpu"): pin for pin in extras[CUDA_BUILDS]}
        unmatched = sorted(set(builds) - {_distribution(pin) for pin in pins})
        if unmatched:
            raise PodmanError(f"{pyproject}'s {CUDA_BUILDS} extra replaces no {unmatched}")
        pins = [builds.get(_distribution(pin), pin) for pin in pins]
    lake = {_distribution(requirement): requirement for requirement in extras["lake"]}
    missing = [name for name in RUNNER_LAKE_DISTRIBUTIONS if name not in lake]
    if missing:
        raise PodmanError(f"{pyproject}'s lake extra declares no {', '.join(missing)}")
    return [
        *pins,
        *(lake[name] for name in RUNNER_LAKE_DISTRIBUTIONS),
        *(base[name] for name in RUNNER_BASE_DISTRIBUTIONS),
    ]


def prepare_context(
    folder: Path, *, python_version: str | None = None, base_provides: Collection[str] = ()
) -> Path:
    """Fill `folder` with what the Dockerfile copies: wheels/, requirements.txt, runner/ and
    contract/.

    Wheels are fetched on the host because builds here have no network. By default they suit
    the host's Python, which is the local base's; `python_version` ("3.11") fetches them for
    another base's Python instead. `base_provides` names distributions the base already has
    (the official image's CUDA torch): they stay in requirements.txt, where the base's copy
    satisfies them, but no wheel is fetched for them. Where the base brings no torch, PyPI's
    is installed, with the GPU builds made for its CUDA (CUDA_BUILDS).
    """
    folder.mkdir(parents=True, exist_ok=True)
    requirements = folder / "requirements.txt"
    pins = runner_requirements(gpu_builds="torch" not in base_provides)
    requirements.write_text("\n".join(pins) + "\n", encoding="utf-8")
    to_fetch = folder / "download-requirements.txt"
    to_fetch.write_text(
        "".join(f"{pin}\n" for pin in pins if _distribution(pin) not in base_provides),
        encoding="utf-8",
    )
    target: list[str] = []
    if python_version is not None:
        target = ["--python-version", python_version]
        target += [argument for tag in FOREIGN_PLATFORMS for argument in ("--platform", tag)]
    check_call(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--only-binary=:all:",
            *target,
            "--dest",
            str(folder / "wheels"),
            "-r",
            str(to_fetch),
        ]
    )
    # The runner and the contract it shares with synth and the collector (config.json, the
    # result): the two packages the image runs.
    for package in IMAGE_PACKAGES:
        shutil.copytree(
            REPO_ROOT / package,
            folder / package,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "Dockerfile"),
        )
    shutil.copy2(REPO_ROOT / "runner" / "Dockerfile", folder / "Dockerfile")
    return folder


def requirements_digest(context: Path) -> str:
    """sha256 of requirements.txt and the wheels' file names (a PyPI file never changes under
    its name), for the Dockerfile's REQUIREMENTS_SHA256."""
    digest = hashlib.sha256((context / "requirements.txt").read_bytes())
    for wheel in sorted((context / "wheels").iterdir()):
        digest.update(f"\0{wheel.name}\0{wheel.stat().st_size}".encode())
    return digest.hexdigest()


def build_image(
    podman: Podman, context: Path, image: str = RUNNER_IMAGE, base: str = BASE_IMAGE
) -> None:
    """`podman build` the runner image from `context`: with no network from the local base,
    which has everything; another base may lack g++, which the Dockerfile then installs from
    its distribution's mirror.

    The image `image` named before is removed once the tag has moved and nothing else names
    or uses it: every rebuild would otherwise leave one more runner image (5 GB) behind.
    """
    network = ("--network", "none") if base == BASE_IMAGE else ()
    replaced = image_id(podman, image)
    check_call(
        podman.command(
            "build",
            *network,
            "--build-arg",
            f"BASE_IMAGE={base}",
            "--build-arg",
            f"REQUIREMENTS_SHA256={requirements_digest(context)}",
            "--tag",
            image,
            str(context),
        ),
        podman.environment(),
    )
    if replaced is not None and _inspect(podman, replaced, "{{json .RepoTags}}") == "[]":
        # Without --force podman keeps an image a container still uses.
        subprocess.run(
            podman.command("image", "rm", replaced),
            env=podman.environment(),
            capture_output=True,
            check=False,
        )


def pull_images(podman: Podman, plan: PodPlan) -> None:
    """Pull `plan`'s image volumes as a kubelet would before starting it (a loopback
    registry over plain HTTP)."""
    for image in plan.images:
        if image.pull_policy == "Never":
            continue
        loopback = parse_reference(image.reference).is_loopback
        check_call(
            podman.command(
                "pull", "--quiet", f"--tls-verify={str(not loopback).lower()}", image.reference
            ),
            podman.environment(),
        )


@dataclass(frozen=True)
class Container:
    """A pod's running container, ended through podman (localrun/streams.py's Ending)."""

    podman: Podman
    name: str

    def _kill(self, signal_name: str) -> None:
        # The container may be gone already: its end is what was asked for.
        subprocess.run(
            self.podman.command("kill", "--signal", signal_name, self.name),
            env=self.podman.environment(),
            capture_output=True,
            check=False,
        )

    def terminate(self) -> None:
        self._kill("TERM")

    def kill(self) -> None:
        self._kill("KILL")


def run_pod(
    podman: Podman, plan: PodPlan, workdir: Path, timeout_s: float, watch: Watch | None = None
) -> PodRun:
    """Start `plan` in a container, its image volumes pulled first, and follow it to its end:
    `watch` hears its stderr as it comes and may stop it; `timeout_s` ends it."""
    pull_images(podman, plan)
    termination_log = workdir / f"termination-log-{plan.index}"
    termination_log.touch()
    # The kubelet makes the file writable by any user, so a non-root container can write it.
    termination_log.chmod(0o666)
    name = f"benchfleet-{plan.job_name}-{plan.index}-{secrets.token_hex(4)}"
    command = podman.command(*run_arguments(plan, termination_log, name))
    started = datetime.now(UTC)
    process = subprocess.Popen(
        command,
        env=secret_environment(podman, plan),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # Stopped through Container, not by a terminal's Ctrl-C reaching podman directly.
        start_new_session=True,
    )
    followed = follow(process, Container(podman, name), watch or Watch(), timeout_s)
    return PodRun(
        command=command,
        stdout=followed.stdout,
        stderr=followed.stderr,
        exit_code=process.returncode,
        termination_log=termination_log.read_text(encoding="utf-8"),
        started_at=started,
        finished_at=datetime.now(UTC),
        ended_early=followed.ended_early,
    )
