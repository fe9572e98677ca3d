"""Helpers to read rendered manifests and check them against the schemas Kubernetes and Flux
themselves publish, plus the rules those schemas do not express."""

import re
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import PurePosixPath
from typing import Any

import jsonschema
import yaml

from contract.quantity import parse_quantity
from tests.conftest import TEST_DATA

CRDS = TEST_DATA / "crds"
KUBERNETES_VERSION = "1.33.0"
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
LABEL_KEY = re.compile(
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
)
PATH_PART = re.compile(r"[A-Za-z0-9][-A-Za-z0-9_.]*")
CONFIGMAP_LIMIT = 1024 * 1024
ANNOTATIONS_LIMIT = 256 * 1024
UNTAGGED_IMAGE = "the image needs a tag or digest"


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
    return (
        str(obj["apiVersion"])
        .split("/")[0]
        .endswith(("fluxcd.io", "x-k8s.io", "monitoring.coreos.com"))
    )


def _end_anchored(schema: Any) -> Any:
    """`schema` with its patterns read as the API server reads them (Go's RE2, where `$`
    ends the text), not as `re.search` does, where `$` also matches before a final line
    break: a name with one would pass here and be refused there."""
    if isinstance(schema, dict):
        return {
            key: value.removesuffix("$") + r"\Z"
            if key == "pattern" and isinstance(value, str)
            else _end_anchored(value)
            for key, value in schema.items()
        }
    if isinstance(schema, list):
        return [_end_anchored(item) for item in schema]
    return schema


def crd_violations(obj: Mapping[str, Any]) -> list[str]:
    """Where a Flux, Kueue or Prometheus Operator object breaks its CRD's schema."""
    schema = _end_anchored(crd_schema(obj["apiVersion"], obj["kind"]))
    validator = jsonschema.Draft202012Validator(schema)
    return [error.message for error in validator.iter_errors(obj)]


def tree_violations(files: Mapping[PurePosixPath, str]) -> list[str]:
    """What a rendered tree breaks: its paths, and every object's rules (and CRD)."""
    found = [
        f"path {path.as_posix()!r} has a part that is not a plain name"
        for path in files
        if not all(PATH_PART.fullmatch(part) for part in path.parts)
    ]
    for path, obj in objects(files):
        where = f"{path}:{obj['kind']}/{obj['metadata']['name']!r}"
        found += [f"{where}: {problem}" for problem in rule_violations(obj)]
        if is_custom_resource(obj):
            found += [f"{where}: {problem}" for problem in crd_violations(obj)]
    return found


def _label_violations(what: str, labels: Mapping[str, str]) -> list[str]:
    found = []
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if len(name) > 63 or len(prefix) > 253 or not LABEL_KEY.fullmatch(key):
            found.append(f"{what} key {key!r} is not a valid label key")
        if len(value) > 63 or not LABEL_VALUE.fullmatch(value):
            found.append(f"{what} {key}={value!r} is not a valid label value")
    return found


def rule_violations(obj: Mapping[str, Any]) -> list[str]:
    """What our manifests must satisfy beyond the schemas."""
    meta = obj["metadata"]
    name = meta["name"]
    found = _label_violations("label", meta.get("labels", {}))
    if obj["kind"] in ("Job", "ConfigMap", "Namespace", "ServiceAccount") and (
        len(name) > 63 or not DNS_LABEL.fullmatch(name)
    ):
        found.append(f"name {name!r} is not a DNS label")
    namespace = meta.get("namespace", "")
    if len(namespace) > 63 or not DNS_LABEL.fullmatch(namespace or "x"):
        found.append(f"namespace {namespace!r} is not a DNS label")
    annotations = meta.get("annotations", {})
    size = sum(len(key.encode()) + len(value.encode()) for key, value in annotations.items())
    if size > ANNOTATIONS_LIMIT:
        found.append(f"annotations of {size} bytes")
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
    found += _label_violations("nodeSelector", pod.get("nodeSelector", {}))
    for toleration in pod.get("tolerations", []):
        found += _label_violations("toleration", {toleration["key"]: toleration.get("value", "")})
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
        found.append(UNTAGGED_IMAGE)
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
