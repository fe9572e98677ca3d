"""Start a PodPlan as a plain process: `make demo`'s executor, for machines with no containers.

What a container isolates is mapped, not enforced. Container paths in the env become the host
folders holding the ConfigMaps' files and the unpacked image volumes (a folder of mounts, as
OCI_MODEL_PATH is, a folder of links to them); each emptyDir becomes a fresh folder (TMPDIR
for /tmp); files given for the image's own (`image_path` models) become links in a folder
that IMAGE_ROOT names; the termination log becomes a file the runner is pointed at; the CPU
limit becomes a CPU affinity mask, which the runner sizes its thread pool by when no cgroup
quota applies. The
memory limit, read-only root, user and network isolation are not enforced here: `make
e2e-container` runs the same plan in podman to check those.
"""

import math
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from contract.config import IMAGE_ROOT_ENV
from localrun.images import ImageStore
from localrun.pod import Mount, PodPlan, PodRun
from localrun.streams import ProcessGroup, Watch, follow

RUNNER_COMMAND: Final = (sys.executable, "-m", "runner")
"""The image's ENTRYPOINT, run with this interpreter, which has the runner installed."""


def _link(link: Path, target: Path) -> None:
    """A link at `link` to `target`, its folders made; one already there is kept."""
    link.parent.mkdir(parents=True, exist_ok=True)
    if not link.is_symlink():
        link.symlink_to(target)


def _host_path(value: str, folders: Mapping[str, Path], workdir: Path) -> str:
    """`value` with a leading container path replaced by the host folder standing in for it;
    a folder holding mounts (OCI_MODEL_PATH above each model's image volume) becomes a host
    folder of links to them."""
    for container_path, host in folders.items():
        if value == container_path or value.startswith(container_path.rstrip("/") + "/"):
            return str(host) + value[len(container_path) :]
    parent = value.rstrip("/") + "/"
    below = {path: host for path, host in folders.items() if path.startswith(parent)}
    if not value.startswith("/") or not below:
        return value
    tree = workdir / "mount-parents" / value.strip("/")
    for path, host in below.items():
        _link(tree / path.removeprefix(parent), host)
    return str(tree)


def _image_root(files: tuple[Mount, ...], workdir: Path) -> Path:
    """A folder standing in for the image's root: a link at each file's path in the image."""
    root = workdir / "image-root"
    for file in files:
        _link(root / file.container_path.lstrip("/"), file.host_path.resolve())
    return root


def _affinity(cpu_limit: float | None) -> Callable[[], None] | None:
    """A pre-exec hook pinning the child to as many CPUs as its limit rounds up to."""
    if cpu_limit is None:
        return None
    available = sorted(os.sched_getaffinity(0))
    chosen = set(available[: max(1, math.ceil(cpu_limit))])
    return lambda: os.sched_setaffinity(0, chosen)


def process_environment(
    plan: PodPlan, images: Mapping[str, Path] | None = None
) -> tuple[dict[str, str], Path]:
    """The child's env and its termination-log file; only the pod's env plus PATH, the
    scratch variables, and the caller's GPU selection and PYTHONPATH, so nothing else of the
    caller's shell leaks into the measurement. `images`: the host folder of each image
    volume, by the container path it is mounted at."""
    workdir = plan.workdir
    folders = {mount.container_path: mount.host_path for mount in plan.mounts}
    folders |= images or {}
    for path in plan.tmpfs:
        folder = workdir / f"emptydir{path.replace('/', '-')}"
        folder.mkdir(parents=True, exist_ok=True)
        folders[path] = folder
    scratch = folders.get("/tmp", workdir)
    termination_log = workdir / "termination-log"
    termination_log.write_text("", encoding="utf-8")
    env = {name: _host_path(value, folders, workdir) for name, value in plan.env.items()}
    env |= {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(scratch),
        "TMPDIR": str(scratch),
        "TERMINATION_LOG": str(termination_log),
    }
    if plan.image_files:
        env[IMAGE_ROOT_ENV] = str(_image_root(plan.image_files, workdir))
    # PYTHONPATH picks which checkout's runner `python -m runner` imports: the caller's, not
    # whichever one the environment's editable install points at.
    for name in ("CUDA_VISIBLE_DEVICES", "PYTHONPATH"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env, termination_log


def start_process(
    plan: PodPlan, images: Mapping[str, Path] | None = None
) -> tuple[subprocess.Popen[str], Path]:
    """Start the runner for `plan` as a child process; it and its termination-log file.
    `images`: the folders of its image volumes (ImageStore.mount_all), pulled by the caller,
    as a kubelet pulls before it starts the container."""
    env, termination_log = process_environment(plan, images)
    process = subprocess.Popen(
        RUNNER_COMMAND,
        env=env,
        cwd=plan.workdir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # The hook only calls sched_setaffinity: no lock or import a forked thread could hold.
        preexec_fn=_affinity(plan.cpu_limit),  # noqa: PLW1509
        # Its own process group, as a container is its own: a terminal's Ctrl-C reaches the
        # caller, which ends the pod as a kubelet would, and its end takes all it started.
        start_new_session=True,
    )
    return process, termination_log


def run_process(
    plan: PodPlan, timeout_s: float, store: ImageStore | None = None, watch: Watch | None = None
) -> PodRun:
    """Run the runner for `plan` as a child process and follow it to its end, its image
    volumes pulled into `store` (the default: this machine's) first; raises ImagePullError.
    `watch` hears its stderr as it comes and may stop it; `timeout_s` ends it as a Job's
    deadline would (localrun/streams.py).

    A GPU target runs too: on a machine without its GPU the runner's own result says
    device_missing, as it would on a mislabelled node.
    """
    images = (store or ImageStore()).mount_all(plan.images) if plan.images else {}
    started = datetime.now(UTC)
    process, termination_log = start_process(plan, images)
    followed = follow(process, ProcessGroup(process.pid), watch or Watch(), timeout_s)
    return PodRun(
        command=list(RUNNER_COMMAND),
        stdout=followed.stdout,
        stderr=followed.stderr,
        exit_code=process.returncode,
        termination_log=termination_log.read_text(encoding="utf-8"),
        started_at=started,
        finished_at=datetime.now(UTC),
        ended_early=followed.ended_early,
    )
