"""Helpers to read rendered manifests and check them against the schemas Kubernetes and Flux
themselves publish, plus the rules those schemas do not express."""

import re
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import PurePosixPath
from typing import Any

import yaml

from synth.quantity import parse_quantity
from tests.conftest import TEST_DATA

CRDS = TEST_DATA / "crds"
KUBERNETES_VERSION = "1.33.0"
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
CONFIGMAP_LIMIT = 1024 * 1024


def objects(files: Mapping[PurePosixPath, str]) -> Iterator[tuple[PurePosixPath, dict[str, Any]]]:
    """Every Kubernetes object in the rendered files (kustomize's own files excluded)."""
    for path, text in sorted(files.items()):
        if path.name == "kustomization.yaml":
            continue
        for document in yaml.load_all(text, Loader=yaml.CSafeLoader):
            yield path, document


@cache
def crd_schema(api_version: str, kind: str) -> dict[str, Any]:
    """The openAPIV3Schema of `kind` at `api_version`, from the vendored CRDs."""
    group, version = api_version.split("/")
    for path in sorted(CRDS.rglob("*.yaml")):
        crd = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
        if crd["spec"]["group"] == group and crd["spec"]["names"]["kind"] == kind:
            for served in crd["spec"]["versions"]:
                if served["name"] == version:
                    return served["schema"]["openAPIV3Schema"]  # type: ignore[no-any-return]
    raise LookupError(f"no CRD for {api_version} {kind} in {CRDS}")


def is_custom_resource(obj: Mapping[str, Any]) -> bool:
    return str(obj["apiVersion"]).split("/")[0].endswith(("fluxcd.io", "x-k8s.io"))


def rule_violations(obj: Mapping[str, Any]) -> list[str]:
    """What our manifests must satisfy beyond the schemas."""
    found = []
    meta = obj["metadata"]
    name = meta["name"]
    for key, value in meta.get("labels", {}).items():
        if len(value) > 63 or not LABEL_VALUE.fullmatch(value):
            found.append(f"label {key}={value!r} is not a valid label value")
    if obj["kind"] in ("Job", "ConfigMap", "Namespace", "ServiceAccount") and (
        len(name) > 63 or not DNS_LABEL.fullmatch(name)
    ):
        found.append(f"name {name!r} is not a DNS label")
    if obj["kind"] == "ConfigMap":
        size = sum(len(v) for v in obj.get("data", {}).values())
        size += sum(len(v) * 3 // 4 for v in obj.get("binaryData", {}).values())
        if size > CONFIGMAP_LIMIT:
            found.append(f"ConfigMap {name} holds {size} bytes")
        if obj.get("immutable") is not True:
            found.append(f"ConfigMap {name} is mutable")
    if obj["kind"] == "Job":
        found += _job_violations(obj)
    return found


def _job_violations(job: Mapping[str, Any]) -> list[str]:
    found = []
    spec = job["spec"]
    name = job["metadata"]["name"]
    if "ttlSecondsAfterFinished" in spec:
        found.append("a TTL makes Flux re-create, and so re-run, the finished Job")
    if spec.get("completionMode") == "Indexed":
        hostname = f"{name}-{spec['completions'] - 1}"
        if len(hostname) > 63:
            found.append(f"pod hostname {hostname!r} is not a DNS label")
    pod = spec["template"]["spec"]
    if pod["restartPolicy"] != "Never":
        found.append("restartPolicy must be Never with backoffLimitPerIndex")
    if pod.get("automountServiceAccountToken") is not False:
        found.append("the runner must not get a service account token")
    security = pod["securityContext"]
    if not (security.get("runAsNonRoot") and security.get("runAsUser", 0) > 10000):
        found.append("pods must run as a non-root uid above 10000")
    if security.get("seccompProfile", {}).get("type") != "RuntimeDefault":
        found.append("seccomp must be RuntimeDefault")
    mounts = set()
    for container in pod["containers"]:
        found += _container_violations(container)
        mounts |= {m["mountPath"] for m in container["volumeMounts"]}
    if "/tmp" not in mounts:
        found.append("a read-only root needs a writable /tmp")
    return found


def _container_violations(container: Mapping[str, Any]) -> list[str]:
    found = []
    context = container["securityContext"]
    if context.get("allowPrivilegeEscalation") is not False:
        found.append("privilege escalation must be off")
    if context.get("readOnlyRootFilesystem") is not True:
        found.append("the root filesystem must be read-only")
    if context.get("capabilities", {}).get("drop") != ["ALL"]:
        found.append("all capabilities must be dropped")
    if ":" not in container["image"].rsplit("/", 1)[-1] and "@" not in container["image"]:
        found.append("the image needs a tag or digest")
    resources = container["resources"]
    for key in ("cpu", "memory"):
        if key not in resources["requests"] or key not in resources["limits"]:
            found.append(f"{key} needs a request and a limit")
        elif parse_quantity(resources["requests"][key]) > parse_quantity(resources["limits"][key]):
            found.append(f"{key} request is above its limit")
    gpu = "nvidia.com/gpu"
    if resources["requests"].get(gpu) != resources["limits"].get(gpu):
        found.append("GPU request and limit differ")
    return found
