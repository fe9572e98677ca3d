"""The pod template of a target's Job: the runner container, what it mounts (config.json,
the models, CA bundles, the reported ConfigMap of a grouped Job), where it may run, and how
it keeps away from its other repeats. Hand-built as plain dicts, hashed into the Job's name
and handed to cdk8s as one JSON patch (docs/synth.md, "Why hand-built pod dicts")."""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from contract.config import (
    CA_DIR,
    CA_ENV,
    CONFIG_DIR,
    CONFIG_FILE,
    DEFAULT_DOWNLOAD_BYTES,
    MODELS_DIR,
    OCI_MODEL_PATH_ENV,
    OCI_MODELS_DIR,
    POD_NAME_ENV,
    RECORDED_INPUTS_KEY,
    RunConfig,
)
from contract.layout import COMPLETION_INDEX_KEY, GPU_RESOURCE, HOSTNAME_LABEL, REPEAT_LABEL
from contract.reported import REPORTED_DIR, REPORTED_ENV, REPORTED_VOLUME, reported_configmap
from synth.fleet import Cluster, ResultsStore
from synth.model_sources import CaConfigMap, ModelBundle
from synth.names import RUNNER_SERVICE_ACCOUNT, config_part_name, priority_class_name
from synth.placement import placement
from synth.scratch import quantity, tmp_bytes
from synth.spec import Target
from synth.store_env import store_env

RUNNER_UID: Final = 10001
RUNNER_CONTAINER: Final = "runner"
CONFIG_VOLUME: Final = "config"
CA_VOLUME: Final = "ca-bundles"


@dataclass(frozen=True)
class PodTemplate:
    """Everything a target's pods are made of, apart from their Job's name."""

    config: RunConfig
    target: Target
    models: tuple[ModelBundle, ...]
    ca_bundles: tuple[CaConfigMap, ...]
    image: str
    cluster: Cluster
    priority: str
    artifacts: Mapping[str, str]
    """The OCI reference of each `oci` model, by model name."""
    spread: Mapping[str, str] | None = None
    """Where the target's variants run several times: the labels every repeat's pods share,
    whose pods of the same index a pod of this Job keeps away from."""
    config_parts: int = 1
    """The ConfigMaps config.json travels in: 1, the one named like the Job; more where it
    is too large for one (synth.run_config.config_parts)."""
    results_store: ResultsStore | None = None
    """The cluster's results store, where it has one."""
    store_ca: CaConfigMap | None = None
    """The CA bundle its endpoint's certificate comes from, one of `ca_bundles`."""


def name_pod(spec: dict[str, Any], name: str) -> None:
    """Fills the Job's `name` into the pod spec's volumes that hold it: the config.json
    ConfigMap (named like the Job) or its parts' ConfigMaps, and for a grouped Job the
    ConfigMap of the variants an earlier attempt reported."""
    volumes = {volume["name"]: volume for volume in spec["volumes"]}
    config = volumes[CONFIG_VOLUME]
    if "configMap" in config:
        config["configMap"]["name"] = name
    else:
        for number, source in enumerate(config["projected"]["sources"], start=1):
            source["configMap"]["name"] = config_part_name(name, number)
    if REPORTED_VOLUME in volumes:
        volumes[REPORTED_VOLUME]["configMap"]["name"] = reported_configmap(name)


def pod_spec(template: PodTemplate) -> dict[str, Any]:
    """The pod spec of a target's Job, with the Job's name left empty (see `name_pod`)."""
    config, target, models = template.config, template.target, template.models
    image, cluster, priority = template.image, template.cluster, template.priority
    requests = dict(target.resources.requests)
    limits = dict(target.resources.limits)
    if target.gpus:
        requests[GPU_RESOURCE] = limits[GPU_RESOURCE] = str(target.gpus)
    node_selector, tolerations = placement(target, cluster)
    volumes: list[dict[str, Any]] = [
        _config_volume(template.config_parts),
        {"name": "tmp", "emptyDir": {"sizeLimit": quantity(_tmp_bytes(config))}},
    ]
    mounts: list[dict[str, Any]] = [
        {"name": CONFIG_VOLUME, "mountPath": CONFIG_DIR, "readOnly": True},
        {"name": "tmp", "mountPath": "/tmp"},
    ]
    if models:
        used = config.delivered
        volumes.append(
            {
                "name": "models",
                "projected": {
                    "sources": [
                        {
                            "configMap": {
                                "name": bundle.name,
                                "items": [
                                    {"key": f.key, "path": f.key}
                                    for f in bundle.files
                                    if f.model in used
                                ],
                            }
                        }
                        for bundle in models
                    ]
                },
            }
        )
        mounts.append({"name": "models", "mountPath": MODELS_DIR, "readOnly": True})
    image_volumes, image_mounts = _image_volumes(config, template.artifacts)
    volumes += image_volumes
    mounts += image_mounts
    env: list[dict[str, Any]] = [
        {"name": "WORKFLOW_ID", "value": config.workflow},
        {"name": "MODEL_PATH", "value": MODELS_DIR},
        {"name": "CONFIG_PATH", "value": f"{CONFIG_DIR}/{CONFIG_FILE}"},
        {
            "name": "VARIANT_INDEX",
            "valueFrom": {
                "fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX_KEY}']"}
            },
        },
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": POD_NAME_ENV, "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "RUNNER_IMAGE", "value": image},
    ]
    if template.ca_bundles:
        volumes.append(
            {
                "name": CA_VOLUME,
                "projected": {
                    "sources": [
                        {
                            "configMap": {
                                "name": ca.name,
                                "items": [{"key": ca.bundle.key, "path": ca.bundle.key}],
                            }
                        }
                        for ca in template.ca_bundles
                    ]
                },
            }
        )
        mounts.append({"name": CA_VOLUME, "mountPath": CA_DIR, "readOnly": True})
        env.append({"name": CA_ENV, "value": CA_DIR})
    if image_volumes:
        env.append({"name": OCI_MODEL_PATH_ENV, "value": OCI_MODELS_DIR})
    if template.results_store is not None:
        ca = template.store_ca
        ca_file = f"{CA_DIR}/{ca.bundle.key}" if ca is not None else None
        env += store_env(template.results_store, cluster.name, config.workflow, ca_file)
    if config.groups is not None:
        # Written by the collector once an attempt of an index ends having measured some of
        # its group, so that the retry runs only the rest (contract/reported.py); optional,
        # because until then there is none.
        volumes.append({"name": REPORTED_VOLUME, "configMap": {"name": "", "optional": True}})
        mounts.append({"name": REPORTED_VOLUME, "mountPath": REPORTED_DIR, "readOnly": True})
        env.append({"name": REPORTED_ENV, "value": REPORTED_DIR})
    spec: dict[str, Any] = {
        "restartPolicy": "Never",
        "serviceAccountName": RUNNER_SERVICE_ACCOUNT,
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "priorityClassName": priority_class_name(priority),
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUNNER_UID,
            "runAsGroup": RUNNER_UID,
            "fsGroup": RUNNER_UID,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                "name": RUNNER_CONTAINER,
                "image": image,
                "imagePullPolicy": "IfNotPresent",
                "env": env,
                "resources": {"requests": requests, "limits": limits},
                "volumeMounts": mounts,
                # The runner writes its result there; if it dies before writing (OOM kill,
                # segfault), the log tail is kept instead, for the collector to explain.
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "FallbackToLogsOnError",
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "readOnlyRootFilesystem": True,
                    "runAsNonRoot": True,
                    "capabilities": {"drop": ["ALL"]},
                },
            }
        ],
        "volumes": volumes,
    }
    if node_selector:
        spec["nodeSelector"] = dict(sorted(node_selector.items()))
    if tolerations:
        spec["tolerations"] = tolerations
    if template.spread is not None:
        spec["affinity"] = _apart_from_other_repeats(template.spread)
    return spec


def _config_volume(parts: int) -> dict[str, Any]:
    """The volume at CONFIG_DIR, its ConfigMaps' names left empty (see `name_pod`): one
    ConfigMap, or the parts' ConfigMaps projected together, so that the runner finds them
    beside each other (contract.config.read_config_bytes)."""
    if parts == 1:
        return {"name": CONFIG_VOLUME, "configMap": {"name": ""}}
    sources = [{"configMap": {"name": ""}} for _ in range(parts)]
    return {"name": CONFIG_VOLUME, "projected": {"sources": sources}}


def _tmp_bytes(config: RunConfig) -> int:
    """What the Job's pods' /tmp must hold: what the pod that downloads most downloads."""
    recorded = {RECORDED_INPUTS_KEY} if config.recorded_inputs is not None else set()
    pods = [
        {config.variants[position].model for position in config.positions(index)} | recorded
        for index in range(config.completions)
    ]
    # A model's stages are downloaded into the same pod as it.
    downloads = {
        name: sum(
            program.size_bytes or DEFAULT_DOWNLOAD_BYTES
            for program in (model, *model.stages().values())
            if program.source == "url"
        )
        for name, model in config.models.items()
    }
    recording = config.recorded_inputs
    if recording is not None and recording.source == "url":
        downloads[RECORDED_INPUTS_KEY] = recording.size_bytes or DEFAULT_DOWNLOAD_BYTES
    return tmp_bytes(pods, {name: size for name, size in downloads.items() if size})


def _apart_from_other_repeats(shared: Mapping[str, str]) -> dict[str, Any]:
    """Keep a pod off the nodes running the same index of another repeat: the same variant,
    when the repeats run the same variants in the same order (which `shared` says).

    A preference, not a requirement: a cluster with fewer fitting nodes than repeats still
    runs them all, side by side (a required term would leave the extra pods Pending until
    the others finish). The index and repeat come from the incoming pod's own labels
    (`matchLabelKeys`, `mismatchLabelKeys`: GA in Kubernetes 1.33), since one pod template
    serves every index."""
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": dict(shared)},
                        "matchLabelKeys": [COMPLETION_INDEX_KEY],
                        "mismatchLabelKeys": [REPEAT_LABEL],
                        "topologyKey": HOSTNAME_LABEL,
                    },
                }
            ]
        }
    }


def _image_volume_name(program: str) -> str:
    """The image volume of a `program_name`: `oci-<model>` for a model (as before stages),
    `<stage>-<model>` for a stage, which no model's can be (a volume name has no dot)."""
    model, _, stage = program.partition(".")
    return f"{stage}-{model}" if stage else f"oci-{model}"


def _image_volumes(
    config: RunConfig, artifacts: Mapping[str, str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The image volumes of the `oci` programs (and recorded inputs) a Job's config uses, and
    their mounts: each read-only at OCI_MODELS_DIR/<name>, pulled once per node by digest."""
    used = sorted(name for name in config.delivered if name in artifacts)
    volumes = [
        {
            "name": _image_volume_name(name),
            "image": {"reference": artifacts[name], "pullPolicy": "IfNotPresent"},
        }
        for name in used
    ]
    mounts = [
        {
            "name": _image_volume_name(name),
            "mountPath": f"{OCI_MODELS_DIR}/{name}",
            "readOnly": True,
        }
        for name in used
    ]
    return volumes, mounts
