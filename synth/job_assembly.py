"""The last pass of planning a workflow's Jobs: a target's repeat, with the variants it runs
and the recorded runs standing in for the rest, assembled into a `BenchmarkRun`: config.json,
the Job spec around the pod template, the labels and annotations, and the name hashed from
all of it."""

from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any, Final

from contract.accuracy import gates_text, variant_gate
from contract.config import (
    CONFIG_FILE,
    RunConfig,
    config_part_file,
    groups_text,
)
from contract.errors import (
    CONVERTED_DETERMINISTIC,
    DETERMINISTIC,
    PIPELINE_DETERMINISTIC,
    RECORDED_DETERMINISTIC,
)
from contract.layout import (
    APP,
    APP_LABEL,
    CAPACITY_ANNOTATION,
    DESCRIPTION_ANNOTATION,
    DEVICE_TYPE_ANNOTATION,
    GATES_ANNOTATION,
    GROUPS_ANNOTATION,
    JOB_LABEL,
    MANAGED_BY,
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
from contract.schedule import scheduled_at
from contract.variant import CONVERTED
from synth.digests import digest
from synth.fleet import Cluster, Fleet
from synth.identity import IdentifiedVariant
from synth.load import LoadedWorkflow
from synth.model_sources import CaConfigMap, ModelBundle, Sources, artifact_references
from synth.names import DIGEST_LENGTH, config_part_name, job_name, namespace_of
from synth.pod_template import RUNNER_CONTAINER, PodTemplate, name_pod, pod_spec
from synth.run_config import config_parts, config_text, left_out, run_config
from synth.spec import Scheduling, Target, Workflow

TOOL_VERSION: Final = version("benchfleet")


@dataclass(frozen=True)
class BenchmarkRun:
    """One workflow on one target in one cluster: an Indexed Job and its config ConfigMaps."""

    name: str
    namespace: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    config: RunConfig
    config_parts: tuple[str, ...]
    """config.json's text as its ConfigMaps hold it: whole, or in parts
    (`synth.run_config.config_parts`)."""
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

    def config_bodies(self) -> list[dict[str, Any]]:
        """The ConfigMaps holding config.json: the one named like the Job, or one per part."""
        parts = self.config_parts
        if len(parts) == 1:
            data = {CONFIG_FILE: parts[0]}
            return [{"metadata": self._metadata(), "immutable": True, "data": data}]
        return [
            {
                "metadata": self._metadata(config_part_name(self.name, number)),
                "immutable": True,
                "data": {config_part_file(number, len(parts)): part},
            }
            for number, part in enumerate(parts, start=1)
        ]

    def job_body(self) -> dict[str, Any]:
        return {"metadata": self._metadata(), "spec": dict(self.job_spec)}

    def _metadata(self, name: str | None = None) -> dict[str, Any]:
        return {
            "name": name or self.name,
            "namespace": self.namespace,
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
        }


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


_PREEMPTED: Final = {
    # Preemption (spot reclaim, priority preemption, node drain) is not the benchmark's
    # fault: retry the index without spending its retries.
    "action": "Ignore",
    "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
}


def _failure_rules(config: RunConfig) -> list[dict[str, Any]]:
    """The Job's podFailurePolicy: an exit a retry would only repeat fails its index at once,
    a runtime's failure only in a Job that converts its program, a stage's only in a Job
    running a model between stages and a recording's only in a Job replaying one (so no
    other Job's content, and name, changes with those failure classes)."""
    converts = any(variant.runtime in CONVERTED for variant in config.variants)
    pipelines = any(model.stages() for model in config.models.values())
    codes = (
        DETERMINISTIC
        | (CONVERTED_DETERMINISTIC if converts else frozenset())
        | (PIPELINE_DETERMINISTIC if pipelines else frozenset())
        | (RECORDED_DETERMINISTIC if config.recorded_inputs is not None else frozenset())
    )
    return [
        _PREEMPTED,
        {
            "action": "FailIndex",
            "onExitCodes": {
                "containerName": RUNNER_CONTAINER,
                "operator": "In",
                "values": sorted(int(code) for code in codes),
            },
        },
    ]


def _job_spec(
    scheduling: Scheduling, parallelism: int, labels: Mapping[str, str], pod: PodTemplate
) -> dict[str, Any]:
    """The Job's spec with its own name left empty: what the name is hashed from, then
    filled in by `_name_job_spec`."""
    completions = pod.config.completions
    return {
        "completionMode": "Indexed",
        "completions": completions,
        "parallelism": min(parallelism, completions),
        "backoffLimitPerIndex": scheduling.retries,
        "activeDeadlineSeconds": int(scheduling.deadline),
        "podFailurePolicy": {"rules": _failure_rules(pod.config)},
        "template": {
            "metadata": {"labels": {**labels, JOB_LABEL: ""}},
            "spec": pod_spec(pod),
        },
    }


def _name_job_spec(spec: dict[str, Any], name: str) -> dict[str, Any]:
    """`spec` with the Job's name in the places that hold it: its pods' label and the
    ConfigMaps their template names after the Job (`name_pod`)."""
    template = spec["template"]
    template["metadata"]["labels"][JOB_LABEL] = name
    name_pod(template["spec"], name)
    return spec


def _repeat_labels(
    workflow_id: str, target: str, repeat: int, pending: list[IdentifiedVariant]
) -> dict[str, str]:
    """The labels telling the repeat Jobs of a target apart and together. The repeat set is
    hashed from the variants in index order, not from the spec: repeats that reuse different
    recorded runs hold different variants at the same index, and must not avoid each other's
    nodes by index."""
    repeat_set = digest([workflow_id, target, [variant_id for _, variant_id in pending]])
    return {REPEAT_LABEL: str(repeat), REPEAT_SET_LABEL: repeat_set[:DIGEST_LENGTH]}


@dataclass(frozen=True)
class JobAssembly:
    """What every Job of one workflow in one cluster is made from, besides its variants."""

    loaded: LoadedWorkflow
    fleet: Fleet
    cluster: Cluster
    bundles: tuple[ModelBundle, ...]
    sources: Sources
    ca_bundles: Mapping[str, CaConfigMap]
    """By bundle key, as config.json names them."""
    store_ca: CaConfigMap | None = None
    """The CA bundle of the cluster's results store's endpoint, where it names one."""

    def run(
        self,
        target: Target,
        repeat: int,
        pending: list[IdentifiedVariant],
        reuses: Mapping[str, list[str]],
    ) -> BenchmarkRun:
        """The Job of `target`'s `repeat` running `pending`, which `reuses` stand in for
        the rest of."""
        loaded = self.loaded
        workflow = loaded.workflow
        namespace = namespace_of(workflow.environment)
        config = run_config(loaded, target, pending, self.sources)
        config_texts = config_parts(config_text(config))
        used = config.delivered
        models = tuple(b for b in self.bundles if any(f.model in used for f in b.files))
        trusted = {p.ca_bundle: self.ca_bundles[p.ca_bundle] for p in used.values() if p.ca_bundle}
        if self.store_ca is not None:
            trusted[self.store_ca.bundle.key] = self.store_ca
        ca_bundles = tuple(trusted[key] for key in sorted(trusted))
        template_labels = {**workflow_labels(workflow.id), TARGET_LABEL: target.key}
        spread = None
        if workflow.benchmark.repeats > 1:
            template_labels |= _repeat_labels(workflow.id, target.key, repeat, pending)
            spread = {
                WORKFLOW_LABEL: workflow.id,
                REPEAT_SET_LABEL: template_labels[REPEAT_SET_LABEL],
            }
        pod = PodTemplate(
            config=config,
            target=target,
            models=models,
            ca_bundles=ca_bundles,
            image=workflow.image or self.fleet.image,
            cluster=self.cluster,
            priority=workflow.scheduling.priority or self.fleet.default_priority,
            artifacts=artifact_references(loaded),
            spread=spread,
            config_parts=len(config_texts),
            results_store=self.fleet.results_store_of(self.cluster),
            store_ca=self.store_ca,
        )
        # The name is hashed from the content with an empty name in it, then filled in.
        job_spec = _job_spec(
            workflow.scheduling, workflow.parallelism_per_job, template_labels, pod
        )
        content = {
            "config": config.model_dump(mode="json", exclude=left_out(config)),
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
            config_parts=config_texts,
            job_spec=_name_job_spec(job_spec, name),
            models=models,
            ca_bundles=ca_bundles,
            repeat=repeat,
        )
