"""Turn a Job and its ConfigMaps from dist/ into what a kubelet would start for one index.

Only the parts of the pod spec that synth emits are understood; anything else is an error
rather than silently dropped, so a local run never differs from the cluster unnoticed.
"""

import base64
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from contract.dist import Manifest
from contract.lake import CREDENTIAL_KEYS
from contract.layout import COMPLETION_INDEX_KEY, JOB_NAME_LABEL
from contract.quantity import parse_quantity
from localrun.images import ImageMount


class PodSpecError(ValueError):
    """The Job uses a pod feature this local stand-in for the kubelet does not implement."""


class ContainerConfigError(PodSpecError):
    """A Secret the container's env needs is missing or unreadable: a kubelet leaves the
    container waiting with CreateContainerConfigError, in its words, and tries again."""


SecretLookup = Callable[[str], Mapping[str, str] | None]
"""A Secret's data (decoded) by its name in the pod's namespace, None where there is no such
Secret; raises ContainerConfigError where it cannot be read."""


def caller_credentials(name: str) -> Mapping[str, str]:
    """How `localrun` resolves a Secret with no cluster to read it from: every Secret holds
    the caller's own standard AWS credential variables (a results store's keys) and nothing
    else. The values go only into the pod's environment, never onto a command line or disk."""
    del name  # every name resolves alike: the caller has no namespace of Secrets
    return {key: os.environ[key] for key in CREDENTIAL_KEYS if key in os.environ}


@dataclass(frozen=True)
class Mount:
    """A host folder bind-mounted into the container."""

    host_path: Path
    container_path: str
    read_only: bool


@dataclass(frozen=True)
class PodPlan:
    """One index of an Indexed Job, ready to start as a process or a container."""

    job_name: str
    index: int
    workdir: Path
    """Holds the volumes' files; executors keep the pod's other files here too."""
    image: str
    env: dict[str, str]
    mounts: tuple[Mount, ...]
    images: tuple[ImageMount, ...]
    """Image volumes: pulled and mounted read-only by the executor, as a runtime would."""
    tmpfs: tuple[str, ...]
    """Container paths backed by an emptyDir (a tmpfs in podman)."""
    run_as_user: int
    run_as_group: int
    read_only_root: bool
    cpu_limit: float | None
    memory_limit_bytes: int | None
    gpus: int
    termination_message_path: str
    secret_env: frozenset[str] = frozenset()
    """The names in `env` whose values came from a Secret: passed on by name only (never on a
    command line) and never shown."""
    image_files: tuple[Mount, ...] = ()
    """Files standing in for the runner image's own at their paths in it (`image_path`
    models): a local try's (`localrun run --image-file`), read-only."""


@dataclass(frozen=True)
class PodRun:
    """What a finished pod left: how it was started, its streams, exit code and termination
    message, whichever executor ran it."""

    command: list[str]
    stdout: str
    stderr: str
    exit_code: int
    termination_log: str
    started_at: datetime | None = None
    """When the container started, as a kubelet's status says it (after any image pull)."""
    finished_at: datetime | None = None
    ended_early: str | None = None
    """Why its executor ended it before it ended on its own (`stopped`, its deadline)."""


def _configmap_files(configmap: Manifest) -> dict[str, bytes]:
    files = {key: value.encode() for key, value in configmap.get("data", {}).items()}
    for key, value in configmap.get("binaryData", {}).items():
        files[key] = base64.b64decode(value)
    return files


def _write_items(
    source: Manifest, configmaps: dict[str, Manifest], folder: Path, job_name: str
) -> None:
    name = source["name"]
    if name not in configmaps and source.get("optional"):
        return  # a kubelet mounts an optional ConfigMap that is not there as an empty folder
    if name not in configmaps:
        raise PodSpecError(f"Job {job_name} mounts ConfigMap {name}, which dist/ does not hold")
    files = _configmap_files(configmaps[name])
    items = source.get("items") or [{"key": key, "path": key} for key in files]
    for item in items:
        if item["key"] not in files:
            raise PodSpecError(f"ConfigMap {name} has no key {item['key']} (Job {job_name})")
        target = folder / item["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(files[item["key"]])


def _materialise_volume(
    volume: Manifest, configmaps: dict[str, Manifest], folder: Path, job_name: str
) -> bool:
    """Write a volume's files into `folder`; False for an emptyDir (the runtime provides it)."""
    if "emptyDir" in volume:
        return False
    folder.mkdir(parents=True)
    if "configMap" in volume:
        _write_items(volume["configMap"], configmaps, folder, job_name)
    elif "projected" in volume:
        for source in volume["projected"]["sources"]:
            if set(source) != {"configMap"}:
                raise PodSpecError(f"Job {job_name}: projected source {sorted(source)}")
            _write_items(source["configMap"], configmaps, folder, job_name)
    else:
        raise PodSpecError(f"Job {job_name}: volume {volume['name']} of an unsupported kind")
    return True


def image_mounts(job_name: str, spec: Manifest) -> tuple[ImageMount, ...]:
    """The image volumes a pod `spec`'s container mounts, each whole and read-only (a
    kubelet refuses the rest too)."""
    (container,) = spec["containers"]
    volumes = {volume["name"]: volume for volume in spec.get("volumes", [])}
    found = []
    for mount in container.get("volumeMounts", []):
        source = volumes[mount["name"]].get("image")
        if source is None:
            continue
        if mount.get("subPath") or mount.get("subPathExpr") or mount.get("readOnly") is False:
            raise PodSpecError(f"Job {job_name}: image volume {mount['name']} mounted {mount}")
        policy = source.get("pullPolicy", "IfNotPresent")
        found.append(ImageMount(source["reference"], policy, mount["mountPath"]))
    return tuple(found)


def downward_fields(pod_name: str, node_name: str, index: int, job_name: str) -> dict[str, str]:
    """The values the downward API gives a Job's pod, by fieldPath (the Job controller's
    label naming its Job among them)."""
    return {
        f"metadata.annotations['{COMPLETION_INDEX_KEY}']": str(index),
        f"metadata.labels['{JOB_NAME_LABEL}']": job_name,
        "spec.nodeName": node_name,
        "metadata.name": pod_name,
    }


@dataclass(frozen=True)
class ContainerEnv:
    """A container's environment as a kubelet resolves it."""

    values: dict[str, str]
    from_secrets: frozenset[str]


def _secret_value(
    reference: Manifest,
    secrets: SecretLookup,
    read: dict[str, Mapping[str, str] | None],
    namespace: str,
) -> str | None:
    """A secretKeyRef's value; None where an optional one's Secret or key is missing, as a
    kubelet leaves it unset. ContainerConfigError, in a kubelet's words, where a required one's
    is."""
    name, key = reference["name"], reference["key"]
    if name not in read:
        read[name] = secrets(name)
    data = read[name]
    optional = bool(reference.get("optional"))
    if data is None:
        if optional:
            return None
        raise ContainerConfigError(f'secret "{name}" not found')
    if key not in data:
        if optional:
            return None
        where = f"{namespace}/{name}" if namespace else name
        raise ContainerConfigError(f"couldn't find key {key} in Secret {where}")
    return data[key]


def container_env(
    container: Manifest,
    fields: Mapping[str, str],
    index: int,
    job_name: str,
    secrets: SecretLookup,
    *,
    namespace: str = "",
) -> ContainerEnv:
    """The env a kubelet gives `container`: values, the downward API's `fields` and Secrets'
    keys through `secrets` (of `namespace`, where there is one), each Secret read once."""
    if container.get("envFrom"):
        raise PodSpecError(f"Job {job_name}: envFrom {container['envFrom']}")
    env = {"JOB_COMPLETION_INDEX": str(index)}
    from_secrets: set[str] = set()
    read: dict[str, Mapping[str, str] | None] = {}
    for entry in container.get("env", []):
        source = entry.get("valueFrom", {})
        if "value" in entry:
            env[entry["name"]] = entry["value"]
        elif set(source) == {"secretKeyRef"}:
            value = _secret_value(source["secretKeyRef"], secrets, read, namespace)
            if value is not None:
                env[entry["name"]] = value
                from_secrets.add(entry["name"])
        else:
            path = source.get("fieldRef", {}).get("fieldPath")
            if path not in fields:
                raise PodSpecError(f"Job {job_name}: env {entry['name']} from {entry}")
            env[entry["name"]] = fields[path]
    return ContainerEnv(env, frozenset(from_secrets))


def pod_plan(
    job: Manifest,
    configmaps: dict[str, Manifest],
    index: int,
    workdir: Path,
    secrets: SecretLookup = caller_credentials,
) -> PodPlan:
    """What the kubelet would run for `index` of `job`, with volumes written under `workdir`
    and Secrets resolved through `secrets` (by default the caller's own AWS credentials)."""
    job_name = job["metadata"]["name"]
    completions = job["spec"].get("completions", 1)
    if not 0 <= index < completions:
        raise PodSpecError(f"Job {job_name} has indexes 0..{completions - 1}, not {index}")
    fields = downward_fields(f"{job_name}-{index}-local", "localhost", index, job_name)
    spec = job["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    env = container_env(container, fields, index, job_name, secrets)
    return plan_pod(job_name, index, spec, configmaps, workdir, env=env)


def plan_pod(
    job_name: str,
    index: int,
    spec: Manifest,
    configmaps: dict[str, Manifest],
    workdir: Path,
    *,
    env: ContainerEnv,
) -> PodPlan:
    """What a kubelet runs for a pod `spec` of `job_name`'s `index`, with its container's
    resolved `env`; the volumes' files are written under `workdir`."""
    (container,) = spec["containers"]
    workdir.mkdir(parents=True, exist_ok=True)
    mounts: list[Mount] = []
    tmpfs: list[str] = []
    volumes = {volume["name"]: volume for volume in spec.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        if "image" in volume:
            continue
        folder = workdir / f"volume-{mount['name']}"
        if _materialise_volume(volume, configmaps, folder, job_name):
            mounts.append(Mount(folder, mount["mountPath"], mount.get("readOnly", False)))
        else:
            tmpfs.append(mount["mountPath"])
    limits = container.get("resources", {}).get("limits", {})
    pod_security = spec.get("securityContext", {})
    container_security = container.get("securityContext", {})
    return PodPlan(
        job_name=job_name,
        index=index,
        workdir=workdir,
        image=container["image"],
        env=env.values,
        secret_env=env.from_secrets,
        mounts=tuple(mounts),
        images=image_mounts(job_name, spec),
        tmpfs=tuple(tmpfs),
        run_as_user=container_security.get("runAsUser", pod_security.get("runAsUser", 0)),
        run_as_group=container_security.get("runAsGroup", pod_security.get("runAsGroup", 0)),
        read_only_root=container_security.get("readOnlyRootFilesystem", False),
        cpu_limit=float(parse_quantity(limits["cpu"])) if "cpu" in limits else None,
        memory_limit_bytes=int(parse_quantity(limits["memory"])) if "memory" in limits else None,
        gpus=int(limits.get("nvidia.com/gpu", 0)),
        termination_message_path=container.get("terminationMessagePath", "/dev/termination-log"),
    )
