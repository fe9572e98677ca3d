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

from contract.config import DEFAULT_DOWNLOAD_BUDGET_S, ModelConfig
from contract.layout import MODELS_ANNOTATION
from synth.ca_bundles import CaBundle
from synth.digests import digest
from synth.fleet import Fleet
from synth.load import LoadedWorkflow
from synth.modelfiles import ModelBytes, ModelFiles
from synth.names import ca_bundle_name, model_bundle_name
from synth.object_budget import CONFIGMAP_DATA_BYTES
from synth.spec import DeliveredFile, ModelSpec, RecordedInputsSpec


@dataclass(frozen=True)
class ModelFile:
    """A committed model file, as a model ConfigMap carries it: a model's name, its bytes."""

    model: str
    """The model's name, or RECORDED_INPUTS_KEY."""
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


def _ca_bundle(
    delivered: DeliveredFile, fleet: Fleet, model_files: ModelFiles
) -> tuple[str, CaBundle] | None:
    """The repository file of the bundle `delivered` trusts, and the bundle; None: none."""
    file = delivered.trusted_bundle(fleet)
    return (file, model_files.ca_bundle(file)) if file is not None else None


def _model_config(
    name: str,
    model: DeliveredFile,
    files: Mapping[str, ModelFile],
    trusted: tuple[str, CaBundle] | None,
) -> ModelConfig:
    layers = model.layers if isinstance(model, ModelSpec) else None
    facts: dict[str, object] = (
        {"family": model.family, "params": model.params}
        if isinstance(model, ModelSpec)
        else {"contents": model.contents}
        if isinstance(model, RecordedInputsSpec)
        else {}
    )
    if name in files:
        file = files[name]
        return ModelConfig(
            source="file", location=file.key, sha256=file.sha256, layers=layers, **facts
        )
    assert model.sha256 is not None  # the spec guarantees it
    if model.oci is not None:
        location = f"{name}/{model.oci_file or model.oci_default}"
        return ModelConfig(
            source="oci", location=location, sha256=model.sha256, layers=layers, **facts
        )
    if model.image_path is not None:
        return ModelConfig(
            source="image_path",
            location=model.image_path,
            sha256=model.sha256,
            layers=layers,
            **facts,
        )
    assert model.url is not None
    return ModelConfig(
        source="url",
        location=model.url,
        sha256=model.sha256,
        size_bytes=model.download_bytes,
        download_budget_s=model.download_budget or DEFAULT_DOWNLOAD_BUDGET_S,
        ca_bundle=trusted[1].key if trusted is not None else None,
        ca_bundle_file=trusted[0] if trusted is not None else None,
        layers=layers,
        **facts,
    )


def artifact_references(loaded: LoadedWorkflow) -> dict[str, str]:
    """The OCI reference of each `oci` file of the workflow, by the name it goes by."""
    delivered = loaded.workflow.delivered.items()
    return {name: file.oci for name, file in delivered if file.oci is not None}


def committed_files(loaded: LoadedWorkflow, model_files: ModelFiles) -> dict[str, ModelFile]:
    """The workflow's committed files, by the name each goes by (a model's name)."""
    return {
        name: ModelFile(name, model_files.read(file.file), PurePosixPath(file.file).suffix)
        for name, file in loaded.workflow.delivered.items()
        if file.file is not None
    }


def model_configs(
    loaded: LoadedWorkflow, fleet: Fleet, model_files: ModelFiles
) -> dict[str, ModelConfig]:
    """Where each model of the workflow (and its recorded inputs, under RECORDED_INPUTS_KEY)
    comes from, what its bytes hash to, and for a download its bounds and the CA bundle it
    trusts."""
    files = committed_files(loaded, model_files)
    return {
        name: _model_config(name, file, files, _ca_bundle(file, fleet, model_files))
        for name, file in loaded.workflow.delivered.items()
    }
