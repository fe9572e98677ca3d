"""What one workflow runs in one cluster: a Job per target, its config.json, its models.

Everything here is plain data, built before any cdk8s construct exists, because the Job's
name must carry a hash of its content: the same spec gives the same name (Flux leaves the
finished Job alone) and any change that would alter the run gives a new name (Flux creates
the new Job and prunes the old one; a Job's pod template is immutable, so editing it in place
would fail anyway).
"""

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any, Final

from contract.accuracy import gates_text, variant_gate
from contract.config import (
    CA_DIR,
    CA_ENV,
    CONFIG_DIR,
    CONFIG_FILE,
    DEFAULT_DOWNLOAD_BUDGET_S,
    DEFAULT_DOWNLOAD_BYTES,
    MODELS_DIR,
    OCI_DEFAULT_FILE,
    OCI_MODEL_PATH_ENV,
    OCI_MODELS_DIR,
    InputConfig,
    ModelConfig,
    PhaseConfig,
    RunConfig,
    VariantConfig,
    groups_text,
)
from contract.errors import DETERMINISTIC
from contract.layout import (
    APP,
    APP_LABEL,
    CAPACITY_ANNOTATION,
    COMPLETION_INDEX_KEY,
    DESCRIPTION_ANNOTATION,
    DEVICE_TYPE_ANNOTATION,
    GATES_ANNOTATION,
    GPU_RESOURCE,
    GROUPS_ANNOTATION,
    HOSTNAME_LABEL,
    JOB_LABEL,
    MANAGED_BY,
    MODELS_ANNOTATION,
    OWNER_ANNOTATION,
    REPEAT_LABEL,
    REPEAT_SET_LABEL,
    REUSES_ANNOTATION,
    SCHEDULED_AT_ANNOTATION,
    SCHEDULED_RUN_LABEL,
    SPEC_FILE_ANNOTATION,
    SPEC_SHA256_ANNOTATION,
    TARGET_LABEL,
    TOOL_VERSION_ANNOTATION,
    VARIANTS_ANNOTATION,
    WORKFLOW_LABEL,
)
from contract.records import reuses_text
from contract.reported import REPORTED_DIR, REPORTED_ENV, REPORTED_VOLUME, reported_configmap
from contract.schedule import scheduled_at
from synth.ca_bundles import CaBundle
from synth.catalogue import DEVICE_TYPES
from synth.committed import CommittedJob, JobSlot
from synth.digests import digest
from synth.fleet import Cluster, Fleet
from synth.limits import CONFIGMAP_LIMIT_BYTES
from synth.load import LoadedWorkflow, Specs
from synth.modelfiles import ModelBytes, ModelFiles
from synth.names import DIGEST_LENGTH, ca_bundle_name, job_name, model_bundle_name
from synth.recorded import Recorded
from synth.scratch import quantity, tmp_bytes
from synth.spec import MeasurePhase, ModelSpec, Phase, Scheduling, Target, Workflow
from synth.sweep import Variant

TOOL_VERSION: Final = version("benchfleet")
RUNNER_UID: Final = 10001
RUNNER_SERVICE_ACCOUNT: Final = "benchfleet-runner"
COLLECTOR_SERVICE_ACCOUNT: Final = "benchfleet-collector"
RUNNER_CONTAINER: Final = "runner"
CONFIG_VOLUME: Final = "config"
CA_VOLUME: Final = "ca-bundles"


def namespace_of(environment: str) -> str:
    """The namespace of an environment."""
    return f"benchfleet-{environment}"


def priority_class_name(name: str) -> str:
    """The PriorityClass object of a fleet priority class (cluster-scoped, so prefixed)."""
    return f"benchfleet-{name}"


@dataclass(frozen=True)
class ModelFile:
    """A committed model file, as a model ConfigMap carries it: a model's name, its bytes."""

    model: str
    content: ModelBytes

    @property
    def sha256(self) -> str:
        return self.content.sha256

    @property
    def size(self) -> int:
        return self.content.size

    @property
    def key(self) -> str:
        """Its key in the ConfigMap, and its file name under $MODEL_PATH."""
        return f"{self.model}.pt2"


@dataclass(frozen=True)
class ModelBundle:
    """Committed model files carried to the pods together, in one immutable ConfigMap.

    One object per bundle rather than per model: every object costs a round trip into cdk8s's
    Node.js process and a place in Flux's inventory, and a ConfigMap holds 1 MiB, which many
    small models share (synth of 1000 models took 4.6 s with one ConfigMap each).
    """

    name: str
    files: tuple[ModelFile, ...]

    def body(self, namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
        """The ConfigMap without its payload (see `binary_data`)."""
        models = ",".join(f.model for f in self.files)
        return {
            "metadata": {
                "name": self.name,
                "namespace": namespace,
                "labels": dict(labels),
                "annotations": {MODELS_ANNOTATION: models},
            },
            "immutable": True,
        }

    def binary_data(self) -> dict[str, str]:
        """The model files, base64-encoded as `binaryData` holds them."""
        return {f.key: base64.b64encode(f.content.data).decode() for f in self.files}


def bundle_models(workflow_id: str, files: list[ModelFile]) -> list[ModelBundle]:
    """`files` packed in name order into as few bundles as fit CONFIGMAP_LIMIT_BYTES each
    (keys count too), every bundle named by a hash of what it holds."""
    groups: list[list[ModelFile]] = []
    size = 0
    for file in sorted(files, key=lambda f: f.model):
        need = file.size + len(file.key)
        if not groups or size + need > CONFIGMAP_LIMIT_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(file)
        size += need
    return [
        ModelBundle(
            name=model_bundle_name(workflow_id, digest([(f.model, f.sha256) for f in group])),
            files=tuple(group),
        )
        for group in groups
    ]


@dataclass(frozen=True)
class CaConfigMap:
    """A CA bundle the workflow's downloads trust, as the immutable ConfigMap that carries it
    to the pods (never baked into the image), named by its content."""

    name: str
    bundle: CaBundle

    def body(self, namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
        return {
            "metadata": {"name": self.name, "namespace": namespace, "labels": dict(labels)},
            "immutable": True,
            "data": {self.bundle.key: self.bundle.text},
        }


def ca_config_maps(
    loaded: LoadedWorkflow, fleet: Fleet, model_files: ModelFiles
) -> dict[str, CaConfigMap]:
    """The ConfigMaps of the CA bundles the workflow's url models trust, by bundle key."""
    trusted = (_ca_bundle(model, fleet, model_files) for model in loaded.workflow.models)
    return {
        bundle.key: CaConfigMap(ca_bundle_name(loaded.workflow.id, bundle.sha256), bundle)
        for bundle in trusted
        if bundle is not None
    }


def _ca_bundle(model: ModelSpec, fleet: Fleet, model_files: ModelFiles) -> CaBundle | None:
    file = model.trusted_bundle(fleet)
    return model_files.ca_bundle(file) if file is not None else None


@dataclass(frozen=True)
class BenchmarkRun:
    """One workflow on one target in one cluster: an Indexed Job and its config ConfigMap."""

    name: str
    namespace: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    config: RunConfig
    job_spec: Mapping[str, Any]
    models: tuple[ModelBundle, ...]
    ca_bundles: tuple[CaConfigMap, ...]
    repeat: int
    """Which run of its variants (0 where the workflow runs them once)."""

    def pods(self) -> dict[str, int]:
        """Variant id -> the completion index (pod) that runs it."""
        config = self.config
        return {
            config.variants[position].id: index
            for index in range(config.completions)
            for position in config.positions(index)
        }

    def config_body(self) -> dict[str, Any]:
        text = self.config.model_dump_json(indent=2, exclude=_left_out(self.config)) + "\n"
        return {
            "metadata": self._metadata(),
            "immutable": True,
            "data": {CONFIG_FILE: text},
        }

    def job_body(self) -> dict[str, Any]:
        return {"metadata": self._metadata(), "spec": dict(self.job_spec)}

    def _metadata(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "namespace": self.namespace,
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
        }


def _phase(phase: Phase) -> PhaseConfig:
    return PhaseConfig(
        min_iterations=phase.min_iterations,
        min_time_s=phase.min_time,
        max_iterations=phase.max_iterations,
        max_time_s=phase.max_time,
        tail=phase.tail if isinstance(phase, MeasurePhase) else None,
    )


def _model_config(
    model: ModelSpec, files: Mapping[str, ModelFile], bundle: CaBundle | None
) -> ModelConfig:
    if model.name in files:
        sha = files[model.name].sha256
        return ModelConfig(source="file", location=f"{model.name}.pt2", sha256=sha)
    assert model.sha256 is not None  # the spec guarantees it
    if model.oci is not None:
        location = f"{model.name}/{model.oci_file or OCI_DEFAULT_FILE}"
        return ModelConfig(source="oci", location=location, sha256=model.sha256)
    if model.image_path is not None:
        return ModelConfig(source="image_path", location=model.image_path, sha256=model.sha256)
    assert model.url is not None
    return ModelConfig(
        source="url",
        location=model.url,
        sha256=model.sha256,
        size_bytes=model.download_bytes,
        download_budget_s=model.download_budget or DEFAULT_DOWNLOAD_BUDGET_S,
        ca_bundle=bundle.key if bundle is not None else None,
    )


def artifact_references(loaded: LoadedWorkflow) -> dict[str, str]:
    """The OCI reference of each `oci` model of the workflow, by model name."""
    return {m.name: m.oci for m in loaded.workflow.models if m.oci is not None}


def _image_volumes(
    config: RunConfig, artifacts: Mapping[str, str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The image volumes of the `oci` models a Job's config uses, and their mounts: each
    read-only at OCI_MODELS_DIR/<model>, pulled once per node by digest."""
    used = sorted(name for name in config.models if name in artifacts)
    volumes = [
        {
            "name": f"oci-{name}",
            "image": {"reference": artifacts[name], "pullPolicy": "IfNotPresent"},
        }
        for name in used
    ]
    mounts = [
        {"name": f"oci-{name}", "mountPath": f"{OCI_MODELS_DIR}/{name}", "readOnly": True}
        for name in used
    ]
    return volumes, mounts


def measurement_setup(
    loaded: LoadedWorkflow, target: Target, cluster: Cluster, image: str
) -> dict[str, object]:
    """What, besides the variant itself and its model's bytes, determines its number: the
    image (runner and torch), the measurement bounds, the device and its count, the resources,
    and the nodes it may run on. Priority, retries, deadline, parallelism, queue, description
    and owner decide when and whether it runs, not what it measures: they are left out, so
    changing them re-runs nothing already recorded (docs/synth.md has the table)."""
    benchmark = loaded.workflow.benchmark
    node_selector, _ = _placement(target, cluster)
    return {
        "image": image,
        "warmup": _phase(benchmark.warmup_phase).model_dump(mode="json"),
        "measure": _phase(benchmark.measure_phase).model_dump(mode="json"),
        "device_type": target.gpu_type,
        "gpus": target.gpus,
        "requests": dict(sorted(target.resources.requests.items())),
        "limits": dict(sorted(target.resources.limits.items())),
        "node_selector": dict(sorted(node_selector.items())),
        # Only when set, so that every variant id from before the option stays as it was.
        **({"interleave": True} if benchmark.interleave else {}),
    }


def committed_files(loaded: LoadedWorkflow, model_files: ModelFiles) -> dict[str, ModelFile]:
    """The workflow's committed model files, by model name."""
    return {
        model.name: ModelFile(model.name, model_files.read(model.file))
        for model in loaded.workflow.models
        if model.file is not None
    }


def model_configs(
    loaded: LoadedWorkflow, fleet: Fleet, model_files: ModelFiles
) -> dict[str, ModelConfig]:
    """Where each model of the workflow comes from, what its bytes hash to, and for a
    download its bounds and the CA bundle it trusts."""
    files = committed_files(loaded, model_files)
    return {
        m.name: _model_config(m, files, _ca_bundle(m, fleet, model_files))
        for m in loaded.workflow.models
    }


def identified_variants(
    loaded: LoadedWorkflow,
    fleet: Fleet,
    cluster: Cluster,
    target: Target,
    sources: Mapping[str, ModelConfig],
) -> list[tuple[Variant, str]]:
    """The target's variants in `cluster`, each with its id: its measurement, with its
    model's sha256 in it."""
    setup = measurement_setup(loaded, target, cluster, loaded.workflow.image or fleet.image)
    # Each scheduled run is a new identity, so nothing one run recorded stands in for the
    # next; only where there is one, so that no other workflow's ids change.
    scheduled = {"scheduled_run": loaded.schedule.run} if loaded.schedule else {}
    return [
        (
            variant,
            variant.variant_id(
                loaded.workflow.id,
                {**setup, "model_sha256": sources[variant.model].sha256, **scheduled},
            ),
        )
        for variant in loaded.variants
        if variant.target == target.key
    ]


def _left_out(config: RunConfig) -> set[str] | None:
    """What config.json leaves out: `groups` where there are none and `interleave` where it
    is off, so that it, and so every Job's content-hash name, stays byte for byte what it was
    before these options existed (no rename, no run under a new name)."""
    unset = {"groups"} if config.groups is None else set()
    unset |= set() if config.interleave else {"interleave"}
    return unset or None


def pod_groups(models: list[str], per_pod: int) -> tuple[tuple[int, ...], ...] | None:
    """Which variant positions each pod runs, given each variant's model in index order:
    the variants of one model together (a pod loads each of its models once), in their
    sweep order, cut into groups of `per_pod`. None for one variant per pod, which leaves
    config.json, and so the Job's name, as it was before groups existed."""
    if per_pod == 1:
        return None
    ordered = sorted(range(len(models)), key=lambda position: models[position])
    return tuple(
        tuple(ordered[start : start + per_pod]) for start in range(0, len(ordered), per_pod)
    )


def run_config(
    loaded: LoadedWorkflow,
    target: Target,
    variants: list[tuple[Variant, str]],
    models: Mapping[str, ModelConfig],
) -> RunConfig:
    """config.json of one target's Job: `variants` with their ids, in index order, and the
    groups its pods run them in."""
    workflow = loaded.workflow
    used = {variant.model for variant, _ in variants}
    groups = pod_groups([v.model for v, _ in variants], workflow.scheduling.variants_per_pod)
    return RunConfig(
        workflow=workflow.id,
        target=target.key,
        device_type=target.gpu_type,
        gpus=target.gpus,
        warmup=_phase(workflow.benchmark.warmup_phase),
        measure=_phase(workflow.benchmark.measure_phase),
        models={name: config for name, config in models.items() if name in used},
        variants=tuple(
            VariantConfig(
                index=index,
                id=variant_id,
                model=variant.model,
                precision=str(variant.precision),
                quantization=str(variant.quantization),
                batch_size=variant.batch_size,
                compile=variant.compile,
                inputs=tuple(InputConfig(shape=i.shape, dtype=i.dtype) for i in variant.inputs),
            )
            for index, (variant, variant_id) in enumerate(variants)
        ),
        groups=groups,
        interleave=workflow.benchmark.interleave,
    )


def accuracy_gates(workflow: Workflow, config: RunConfig) -> str:
    """The GATES_ANNOTATION of a Job running `config`: each variant's gate, from its
    precision's and quantization's defaults, the workflow's thresholds and its model's."""
    models = {model.name: model.accuracy for model in workflow.models}
    return gates_text(
        (
            variant.index,
            variant_gate(
                variant.precision,
                variant.quantization,
                workflow.benchmark.accuracy,
                models[variant.model],
            ),
        )
        for variant in config.variants
    )


def workflow_labels(workflow_id: str) -> dict[str, str]:
    """Labels every object of a workflow carries; the collector selects by them."""
    return {
        APP_LABEL: APP,
        WORKFLOW_LABEL: workflow_id,
        "backend": "kubernetes",
        "app.kubernetes.io/name": "benchfleet-runner",
        "app.kubernetes.io/instance": workflow_id,
        "app.kubernetes.io/part-of": APP,
        MANAGED_BY: APP,
    }


_FAILURE_RULES: Final = [
    # Preemption (spot reclaim, priority preemption, node drain) is not the benchmark's
    # fault: retry the index without spending its retries.
    {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
    {
        "action": "FailIndex",
        "onExitCodes": {
            "containerName": RUNNER_CONTAINER,
            "operator": "In",
            "values": sorted(int(code) for code in DETERMINISTIC),
        },
    },
]


@dataclass(frozen=True)
class _JobTemplate:
    """Everything a target's Job spec is made of, apart from the Job's own name."""

    config: RunConfig
    target: Target
    models: tuple[ModelBundle, ...]
    ca_bundles: tuple[CaConfigMap, ...]
    image: str
    cluster: Cluster
    priority: str
    scheduling: Scheduling
    parallelism: int
    labels: Mapping[str, str]
    artifacts: Mapping[str, str]
    """The OCI reference of each `oci` model, by model name."""
    spread: Mapping[str, str] | None = None
    """Where the target's variants run several times: the labels every repeat's pods share,
    whose pods of the same index a pod of this Job keeps away from."""

    def job_spec(self) -> dict[str, Any]:
        """The Job's spec with its own name left empty: what the name is hashed from, then
        filled in by `name_job_spec`."""
        completions = self.config.completions
        return {
            "completionMode": "Indexed",
            "completions": completions,
            "parallelism": min(self.parallelism, completions),
            "backoffLimitPerIndex": self.scheduling.retries,
            "activeDeadlineSeconds": int(self.scheduling.deadline),
            "podFailurePolicy": {"rules": _FAILURE_RULES},
            "template": {
                "metadata": {"labels": {**self.labels, JOB_LABEL: ""}},
                "spec": _pod_spec(self),
            },
        }


def name_job_spec(spec: dict[str, Any], name: str) -> dict[str, Any]:
    """`spec` with the Job's name in the places that hold it: its pods' label, the config.json
    ConfigMap (named like the Job) they mount, and for a grouped Job the ConfigMap of the
    variants an earlier attempt reported."""
    template = spec["template"]
    template["metadata"]["labels"][JOB_LABEL] = name
    volumes = {volume["name"]: volume for volume in template["spec"]["volumes"]}
    volumes[CONFIG_VOLUME]["configMap"]["name"] = name
    if REPORTED_VOLUME in volumes:
        volumes[REPORTED_VOLUME]["configMap"]["name"] = reported_configmap(name)
    return spec


def _placement(target: Target, cluster: Cluster) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The node selector and tolerations of a target's pods in `cluster`."""
    node_selector = cluster.node_selector(target.gpu_type)
    tolerations: list[dict[str, Any]] = []
    if DEVICE_TYPES[target.gpu_type].is_gpu:
        # GPU node pools are commonly tainted so that only GPU workloads land there.
        tolerations.append({"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"})
    if target.spot and cluster.spot is not None:
        node_selector.update(cluster.spot.node_selector)
        tolerations += [t.model_dump(exclude_none=True) for t in cluster.spot.tolerations]
    return node_selector, tolerations


def _pod_spec(template: _JobTemplate) -> dict[str, Any]:
    config, target, models = template.config, template.target, template.models
    image, cluster, priority = template.image, template.cluster, template.priority
    requests = dict(target.resources.requests)
    limits = dict(target.resources.limits)
    if target.gpus:
        requests[GPU_RESOURCE] = limits[GPU_RESOURCE] = str(target.gpus)
    node_selector, tolerations = _placement(target, cluster)
    volumes: list[dict[str, Any]] = [
        {"name": CONFIG_VOLUME, "configMap": {"name": ""}},
        {"name": "tmp", "emptyDir": {"sizeLimit": quantity(_tmp_bytes(config))}},
    ]
    mounts: list[dict[str, Any]] = [
        {"name": CONFIG_VOLUME, "mountPath": CONFIG_DIR, "readOnly": True},
        {"name": "tmp", "mountPath": "/tmp"},
    ]
    if models:
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
                                    if f.model in config.models
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
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
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


def _tmp_bytes(config: RunConfig) -> int:
    """What the Job's pods' /tmp must hold: what the pod that downloads most downloads."""
    pods = [
        {config.variants[position].model for position in config.positions(index)}
        for index in range(config.completions)
    ]
    downloads = {
        name: model.size_bytes or DEFAULT_DOWNLOAD_BYTES
        for name, model in config.models.items()
        if model.source == "url"
    }
    return tmp_bytes(pods, downloads)


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


def left_to_run(
    identified: list[tuple[Variant, str]], recorded: Recorded, repeat: int, spec_sha256: str
) -> tuple[list[tuple[Variant, str]], dict[str, list[str]]]:
    """The variants whose run `repeat` has no reusable recorded outcome, and the recorded
    successes that stand for the others (earlier Job: variant ids)."""
    pending: list[tuple[Variant, str]] = []
    reuses: dict[str, list[str]] = {}
    for variant, variant_id in identified:
        reusable = recorded.reusable(variant_id, repeat, spec_sha256)
        if reusable is None:
            pending.append((variant, variant_id))
        elif reusable.succeeded:
            reuses.setdefault(reusable.job, []).append(variant_id)
    return pending, reuses


def _repeat_labels(
    workflow_id: str, target: str, repeat: int, pending: list[tuple[Variant, str]]
) -> dict[str, str]:
    """The labels telling the repeat Jobs of a target apart and together. The repeat set is
    hashed from the variants in index order, not from the spec: repeats that reuse different
    recorded runs hold different variants at the same index, and must not avoid each other's
    nodes by index."""
    repeat_set = digest([workflow_id, target, [variant_id for _, variant_id in pending]])
    return {REPEAT_LABEL: str(repeat), REPEAT_SET_LABEL: repeat_set[:DIGEST_LENGTH]}


@dataclass(frozen=True)
class _Workflow:
    """What every Job of one workflow in one cluster is made from, besides its variants."""

    loaded: LoadedWorkflow
    fleet: Fleet
    cluster: Cluster
    bundles: tuple[ModelBundle, ...]
    sources: Mapping[str, ModelConfig]
    ca_bundles: Mapping[str, CaConfigMap]
    """By bundle key, as config.json names them."""

    def run(
        self,
        target: Target,
        repeat: int,
        pending: list[tuple[Variant, str]],
        reuses: Mapping[str, list[str]],
    ) -> BenchmarkRun:
        """The Job of `target`'s `repeat` running `pending`, which `reuses` stand in for
        the rest of."""
        loaded = self.loaded
        workflow = loaded.workflow
        namespace = namespace_of(workflow.environment)
        config = run_config(loaded, target, pending, self.sources)
        models = tuple(b for b in self.bundles if any(f.model in config.models for f in b.files))
        trusted = sorted({m.ca_bundle for m in config.models.values() if m.ca_bundle is not None})
        ca_bundles = tuple(self.ca_bundles[key] for key in trusted)
        template_labels = {**workflow_labels(workflow.id), TARGET_LABEL: target.key}
        spread = None
        if workflow.benchmark.repeats > 1:
            template_labels |= _repeat_labels(workflow.id, target.key, repeat, pending)
            spread = {
                WORKFLOW_LABEL: workflow.id,
                REPEAT_SET_LABEL: template_labels[REPEAT_SET_LABEL],
            }
        template = _JobTemplate(
            config=config,
            target=target,
            models=models,
            ca_bundles=ca_bundles,
            image=workflow.image or self.fleet.image,
            cluster=self.cluster,
            priority=workflow.scheduling.priority or self.fleet.default_priority,
            scheduling=workflow.scheduling,
            parallelism=workflow.parallelism_per_job,
            labels=template_labels,
            artifacts=artifact_references(loaded),
            spread=spread,
        )
        # The name is hashed from the content with an empty name in it, then filled in.
        job_spec = template.job_spec()
        content = {
            "config": config.model_dump(mode="json", exclude=_left_out(config)),
            "job": job_spec,
            "ns": namespace,
        }
        name = job_name(workflow.id, target.key, digest(content))
        labels = {**template_labels, JOB_LABEL: name, "app.kubernetes.io/version": TOOL_VERSION}
        schedule = loaded.schedule
        if schedule is not None:
            labels[SCHEDULED_RUN_LABEL] = str(schedule.run)
        if workflow.scheduling.queue is not None:
            labels["kueue.x-k8s.io/queue-name"] = workflow.scheduling.queue
        return BenchmarkRun(
            name=name,
            namespace=namespace,
            labels=labels,
            annotations={
                DESCRIPTION_ANNOTATION: workflow.description,
                OWNER_ANNOTATION: workflow.owner,
                SPEC_FILE_ANNOTATION: loaded.file,
                SPEC_SHA256_ANNOTATION: loaded.sha256,
                TOOL_VERSION_ANNOTATION: TOOL_VERSION,
                VARIANTS_ANNOTATION: str(len(pending)),
                # Which variants each pod runs, on the Job itself: the collector reads a
                # Job that dist/ no longer holds (an older revision) from the cluster.
                **({GROUPS_ANNOTATION: groups_text(config.groups)} if config.groups else {}),
                # Outside the name's hash, like the others: what the report shows beside
                # this Job's own results.
                **({REUSES_ANNOTATION: reuses_text(reuses)} if reuses else {}),
                # Outside the hash too: a gate judges the numbers, it changes none of them.
                GATES_ANNOTATION: accuracy_gates(workflow, config),
                # What the pods hold and how it is bought, in the fleet's words: gather keeps
                # them with each variant's allocated time, for the report to price.
                DEVICE_TYPE_ANNOTATION: target.gpu_type,
                CAPACITY_ANNOTATION: "spot" if target.spot else "on-demand",
                **(
                    {SCHEDULED_AT_ANNOTATION: scheduled_at(schedule.period_start)}
                    if schedule is not None
                    else {}
                ),
            },
            config=config,
            job_spec=name_job_spec(job_spec, name),
            models=models,
            ca_bundles=ca_bundles,
            repeat=repeat,
        )


def waits_for_first_run(loaded: LoadedWorkflow) -> bool:
    """Whether `loaded` is scheduled and `benchfleet schedule` has not started a run of it:
    until then it runs nothing (every run, the first too, is started by a commit)."""
    return loaded.workflow.scheduling.every is not None and loaded.schedule is None


def may_stay(
    loaded: LoadedWorkflow,
    fleet: Fleet,
    cluster: Cluster,
    model_files: ModelFiles,
    recorded: Recorded,
    *,
    committed: Mapping[JobSlot, CommittedJob],
) -> dict[JobSlot, CommittedJob]:
    """The Jobs of `committed` (git's HEAD) that a record arriving would otherwise rename:
    without a record, each runs every variant its target and repeat have left to run, and
    more. Only these make a render differ from one without `committed`."""
    if not committed:
        return {}
    sources = model_configs(loaded, fleet, model_files)
    found = {}
    for target in loaded.workflow.targets:
        repeats = [
            r for r in range(loaded.workflow.benchmark.repeats) if (target.key, r) in committed
        ]
        if not repeats:
            continue
        identified = identified_variants(loaded, fleet, cluster, target, sources)
        for repeat in repeats:
            held = committed[target.key, repeat]
            pending, _ = left_to_run(identified, recorded, repeat, loaded.sha256)
            if held.name not in recorded.jobs and {v for _, v in pending} < held.variant_ids:
                found[target.key, repeat] = held
    return found


def plan_runs(
    loaded: LoadedWorkflow,
    fleet: Fleet,
    cluster: Cluster,
    model_files: ModelFiles,
    recorded: Recorded,
    *,
    staying: Mapping[JobSlot, CommittedJob],
) -> list[BenchmarkRun]:
    """The Jobs (one per target and repeat) that `loaded` needs in `cluster`: each runs the
    target's variants whose run of that repeat `recorded` holds no reusable outcome of; a
    repeat with none left has no Job, and a Job `recorded` holds is done and left out.

    A record arriving never renames a Job that may be running. Where the committed dist/
    holds a Job of a target and repeat that may stay (`may_stay`: `staying`) and the spec
    gives it the same name with the same variants, it stays as it is: renamed, Flux would
    prune it and what it measured would run again. Its variants that a record now covers
    are measured twice, and the report keeps the newer run."""
    workflow = loaded.workflow
    if waits_for_first_run(loaded):
        return []
    files = committed_files(loaded, model_files)
    sources = model_configs(loaded, fleet, model_files)
    jobs = _Workflow(
        loaded,
        fleet,
        cluster,
        tuple(bundle_models(workflow.id, list(files.values()))),
        sources,
        ca_config_maps(loaded, fleet, model_files),
    )
    runs = []
    for target in workflow.targets:
        identified = identified_variants(loaded, fleet, cluster, target, sources)
        for repeat in range(workflow.benchmark.repeats):
            pending, reuses = left_to_run(identified, recorded, repeat, loaded.sha256)
            run = jobs.run(target, repeat, pending, reuses) if pending else None
            held = staying.get((target.key, repeat))
            kept = [pair for pair in identified if held and pair[1] in held.variant_ids]
            if held is not None and kept:
                others = [pair for pair in identified if pair not in kept]
                _, stand_in = left_to_run(others, recorded, repeat, loaded.sha256)
                same = jobs.run(target, repeat, kept, stand_in)
                run = same if same.name == held.name else run
            if run is not None and run.name not in recorded.jobs:
                runs.append(run)
    return runs


def cluster_runs(specs: Specs, loaded: LoadedWorkflow, cluster: Cluster) -> list[BenchmarkRun]:
    """The Jobs `make synth` writes for `loaded` in `cluster` from `specs`: plan_runs over
    what results/ records, keeping the committed Jobs that may stay."""
    stored = specs.recorded[loaded.workflow.id, cluster.name]
    committed = specs.committed.jobs.get((loaded.workflow.id, cluster.name), {})
    staying = may_stay(loaded, specs.fleet, cluster, specs.model_files, stored, committed=committed)
    return plan_runs(loaded, specs.fleet, cluster, specs.model_files, stored, staying=staying)
