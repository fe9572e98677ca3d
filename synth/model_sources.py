"""Where a workflow's models (and its recorded inputs, delivered the same way under
RECORDED_INPUTS_KEY) come from, and what carries them to its pods: the committed files
packed into ConfigMaps, the CA bundles its downloads trust, and each file's entry in
config.json (source, location, sha256, download bounds, the layers a model's spec
records)."""

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from contract.config import (
    DEFAULT_DOWNLOAD_BUDGET_S,
    RECORDED_INPUTS_KEY,
    ModelConfig,
    ProgramConfig,
    RecordedConfig,
    program_name,
)
from contract.layout import MODELS_ANNOTATION
from synth.ca_bundles import CaBundle
from synth.digests import digest
from synth.fleet import Fleet, ResultsStore
from synth.load import LoadedWorkflow
from synth.modelfiles import ModelBytes, ModelFiles
from synth.names import ca_bundle_name, model_bundle_name
from synth.object_budget import CONFIGMAP_DATA_BYTES
from synth.spec import ModelSpec, ProgramSpec


@dataclass(frozen=True)
class ModelFile:
    """A committed model file, as a model ConfigMap carries it: a model's name, its bytes."""

    model: str
    """The program's name (contract.config.program_name): a model's, or a stage's; or
    RECORDED_INPUTS_KEY."""
    content: ModelBytes
    suffix: str = ".pt2"

    @property
    def sha256(self) -> str:
        return self.content.sha256

    @property
    def size(self) -> int:
        return self.content.size

    @property
    def key(self) -> str:
        """Its key in the ConfigMap, and its file name under $MODEL_PATH."""
        return f"{self.model}{self.suffix}"


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
    """`files` packed in name order into as few bundles as fit CONFIGMAP_DATA_BYTES each
    (keys count too), every bundle named by a hash of what it holds."""
    groups: list[list[ModelFile]] = []
    size = 0
    for file in sorted(files, key=lambda f: f.model):
        need = file.size + len(file.key)
        if not groups or size + need > CONFIGMAP_DATA_BYTES:
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
    delivered = loaded.workflow.delivered.values()
    trusted = (_ca_bundle(file, fleet, model_files) for file in delivered)
    return {
        bundle.key: CaConfigMap(ca_bundle_name(loaded.workflow.id, bundle.sha256), bundle)
        for _, bundle in filter(None, trusted)
    }


def store_ca_config_map(
    loaded: LoadedWorkflow, store: ResultsStore | None, model_files: ModelFiles
) -> CaConfigMap | None:
    """The ConfigMap of the CA bundle the results store's endpoint is trusted by, where it
    names one: named and keyed like a download's, so one bundle trusted by both is one."""
    if store is None or store.ca_bundle is None:
        return None
    bundle = model_files.ca_bundle(store.ca_bundle)
    return CaConfigMap(ca_bundle_name(loaded.workflow.id, bundle.sha256), bundle)


def _ca_bundle(
    program: ProgramSpec, fleet: Fleet, model_files: ModelFiles
) -> tuple[str, CaBundle] | None:
    """The repository file of the bundle `program` trusts, and the bundle; None: none."""
    file = program.trusted_bundle(fleet)
    return (file, model_files.ca_bundle(file)) if file is not None else None


def _source_fields(
    name: str,
    program: ProgramSpec,
    files: Mapping[str, ModelFile],
    trusted: tuple[str, CaBundle] | None,
) -> dict[str, Any]:
    """Where file `name` (a `program_name`, or RECORDED_INPUTS_KEY) comes from and what its
    bytes hash to, as ProgramConfig's fields: one reading of the sources for a model, its
    stages and the recorded inputs."""
    if name in files:
        return {"source": "file", "location": files[name].key, "sha256": files[name].sha256}
    assert program.sha256 is not None  # the spec guarantees it
    if program.oci is not None:
        location = f"{name}/{program.oci_file or program.oci_default}"
        return {"source": "oci", "location": location, "sha256": program.sha256}
    if program.image_path is not None:
        return {"source": "image_path", "location": program.image_path, "sha256": program.sha256}
    assert program.url is not None
    return {
        "source": "url",
        "location": program.url,
        "sha256": program.sha256,
        "size_bytes": program.download_bytes,
        "download_budget_s": program.download_budget or DEFAULT_DOWNLOAD_BUDGET_S,
        "ca_bundle": trusted[1].key if trusted is not None else None,
        "ca_bundle_file": trusted[0] if trusted is not None else None,
    }


def _model_config(
    model: ModelSpec, files: Mapping[str, ModelFile], fleet: Fleet, model_files: ModelFiles
) -> ModelConfig:
    stages = {
        stage: ProgramConfig(
            **_source_fields(
                program_name(model.name, stage), spec, files, _ca_bundle(spec, fleet, model_files)
            )
        )
        for stage, spec in model.stages().items()
    }
    fields = _source_fields(model.name, model, files, _ca_bundle(model, fleet, model_files))
    facts = {"family": model.family, "params": model.params, "layers": model.layers}
    return ModelConfig(**fields, **facts, **stages)


def artifact_references(loaded: LoadedWorkflow) -> dict[str, str]:
    """The OCI reference of each `oci` file of the workflow (a model's, a stage's, the
    recorded inputs'), by the name it goes by (`Workflow.delivered`)."""
    delivered = loaded.workflow.delivered.items()
    return {name: file.oci for name, file in delivered if file.oci is not None}


def committed_files(loaded: LoadedWorkflow, model_files: ModelFiles) -> dict[str, ModelFile]:
    """The workflow's committed files (a model's, a stage's, the recorded inputs'), by the
    name each goes by (`Workflow.delivered`)."""
    return {
        name: ModelFile(name, model_files.read(file.file), PurePosixPath(file.file).suffix)
        for name, file in loaded.workflow.delivered.items()
        if file.file is not None
    }


@dataclass(frozen=True)
class Sources:
    """Where a workflow's files come from, as config.json carries them."""

    models: Mapping[str, ModelConfig]
    """Each model's, with its stages', by model name."""
    recorded: RecordedConfig | None = None
    """The recorded inputs'; None: there are none."""


def sources(loaded: LoadedWorkflow, fleet: Fleet, model_files: ModelFiles) -> Sources:
    """Where each model of the workflow (and its stages, and the recorded inputs) comes from,
    what its bytes hash to, and for a download its bounds and the CA bundle it trusts."""
    files = committed_files(loaded, model_files)
    models = {m.name: _model_config(m, files, fleet, model_files) for m in loaded.workflow.models}
    recorded = loaded.workflow.benchmark.recorded_inputs
    if recorded is None:
        return Sources(models)
    trusted = _ca_bundle(recorded, fleet, model_files)
    fields = _source_fields(RECORDED_INPUTS_KEY, recorded, files, trusted)
    return Sources(models, RecordedConfig(**fields, contents=recorded.contents))
