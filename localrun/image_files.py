"""`localrun run --image-file PATH=FILE`: a model baked into the runner image (`image_path`),
tried from a file on this machine.

A pod finds an `image_path` model in its image. A local try runs the runner of this checkout,
not the image, so it is given the file the image would hold, at the path the spec names: a
link below IMAGE_ROOT for a process, a read-only bind mount in podman. The file must be the
one the spec pins: its sha256 is checked before any pod starts, so a wrong file stops the try
at once with advice for a local file, rather than failing every pod with advice for an image.

Reading the file out of a locally built runner image instead would need podman, root and the
5 GB image (`make image`), where whoever builds that image has the file at hand; a pod of the
image itself is what `make e2e-container` runs.
"""

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from contract.config import RECORDED_INPUTS_KEY, RunConfig
from contract.dist import Workload, config_text
from contract.text import shown
from localrun.pod import Mount, PodPlan

OPTION = "--image-file"


class ImageFileError(ValueError):
    """An --image-file that cannot stand in for the image's file, or a model without one."""


@dataclass(frozen=True)
class ImagePathModel:
    """An `image_path` model of the workflow: its name and the digest the spec pins."""

    model: str
    sha256: str


def parse_image_files(values: Iterable[str]) -> dict[str, Path]:
    """`PATH=FILE` values by the path in the image; raises ImageFileError for one that is not."""
    found: dict[str, Path] = {}
    for value in values:
        path, equals, file = value.partition("=")
        if not equals or not path.startswith("/") or not file:
            raise ImageFileError(
                f"{OPTION} {shown(value)}: give PATH=FILE, the model's absolute image_path in "
                "the image and the file on this machine"
            )
        if path in found:
            raise ImageFileError(f"{OPTION} gives {shown(path)} twice")
        found[path] = Path(file)
    return found


def _configs(workload: Workload) -> dict[str, RunConfig]:
    """Each Job's config.json, by the Job's name."""
    names = [job["metadata"]["name"] for job in workload.jobs]
    texts = {name: config_text(workload.configmaps, name) for name in names}
    return {name: RunConfig.model_validate_json(text) for name, text in texts.items() if text}


def image_path_models(configs: Iterable[RunConfig]) -> dict[str, ImagePathModel]:
    """Every `image_path` model of `configs` (and recorded inputs, by RECORDED_INPUTS_KEY),
    by its path in the image."""
    return {
        model.location: ImagePathModel(name, model.sha256)
        for config in configs
        for name, model in config.delivered.items()
        if model.source == "image_path"
    }


def _is_recording(name: str) -> bool:
    return name == RECORDED_INPUTS_KEY


def _named(name: str) -> str:
    """What is baked into the image, in words: a model, or the recorded inputs."""
    return "the recorded inputs" if _is_recording(name) else f"model {name}"


def _delivered_to(config: RunConfig, index: int) -> set[str]:
    """The files a pod of `config` at `index` reads: its variants' models, the recording."""
    recorded = {RECORDED_INPUTS_KEY} if config.recorded_inputs is not None else set()
    return {variant.model for variant in config.group(index)} | recorded


def image_files(
    given: Mapping[str, Path], workload: Workload, plans: Sequence[PodPlan]
) -> tuple[Mount, ...]:
    """The files standing in for the image's at each path `given` names, checked against the
    workload: every `image_path` model the `plans` run has one, each is the file its spec
    pins, and each names a path of an `image_path` model. Raises ImageFileError."""
    configs = _configs(workload)
    models = image_path_models(configs.values())
    if unknown := sorted(set(given) - set(models)):
        paths = ", ".join(sorted(models)) or "none"
        raise ImageFileError(
            f"{OPTION} {shown(unknown[0])}: no image_path model of the workflow is there; its "
            f"image_path models are at: {paths}"
        )
    used = {
        name
        for plan in plans
        if plan.job_name in configs
        for name in _delivered_to(configs[plan.job_name], plan.index)
    }
    for path, model in sorted(models.items()):
        if model.model in used and path not in given:
            raise ImageFileError(
                f"{_named(model.model)} {'are' if _is_recording(model.model) else 'is'} baked "
                f"into the runner image at {path}: give the file "
                f"the image is built with, `{OPTION} {path}=FILE`"
            )
    return tuple(_checked(path, file, models[path]) for path, file in sorted(given.items()))


def _checked(path: str, file: Path, model: ImagePathModel) -> Mount:
    try:
        with file.open("rb") as opened:
            actual = hashlib.file_digest(opened, "sha256").hexdigest()
    except OSError as error:
        raise ImageFileError(f"{OPTION} {path}={file}: {error.strerror}") from error
    if actual != model.sha256:
        raise ImageFileError(
            f"{OPTION} {path}={file}: the file has sha256 {actual}, but the spec pins "
            f"{model.sha256} for {_named(model.model)}: give the file the image is built with, "
            "or, if the model changed on purpose, its sha256 in the spec (then `make synth`)"
        )
    return Mount(file, path, read_only=True)
