"""Warnings: what is valid but likely not what the author meant. They are printed by `make
synth` and change nothing: the specs are still written."""

from contract.archive import UnsafeArchive
from contract.layout import FLEET_FILE
from contract.variant import Quantization
from synth.catalogue import DEVICE_TYPES, QUANTIZATION_KERNELS
from synth.load import LoadedWorkflow, Specs
from synth.problems import Problem, problem_at

THIN_QUANTIZATION: float = 0.5
"""Below this share of a model's parameters, an int8 quantization measures mostly fp32."""


def warnings(specs: Specs) -> list[Problem]:
    """Every warning about `specs`."""
    return [
        *unpinned_images(specs),
        *thin_quantizations(specs),
        *slow_quantizations(specs),
        *unchecked(specs),
    ]


def unchecked(specs: Specs) -> list[Problem]:
    """What valid specs leave to their pods to find out, as warnings (`validate` and `plan`
    list them under "unchecked")."""
    return [*unchecked_quantizations(specs), *unchecked_recordings(specs)]


def unpinned_images(specs: Specs) -> list[Problem]:
    """Warnings for runner images named by tag: a tag can move, so last week's numbers and
    today's may come from different code. A digest cannot."""
    places = [(specs.fleet_source, FLEET_FILE.as_posix(), specs.fleet.image)]
    places += [(w.source, w.file, w.workflow.image) for w in specs.workflows if w.workflow.image]
    return [
        problem_at(
            source,
            file,
            ("image",),
            f"image {image!r} is named by tag, not by digest",
            "pin it as name@sha256:<digest> so that every run measures the same runner"
            + ("; ':latest' changes under you" if _is_latest(image) else ""),
            severity="warning",
        )
        for source, file, image in places
        if image is not None and "@sha256:" not in image
    ]


def _is_latest(image: str) -> bool:
    """Whether `image` names ':latest', explicitly or by giving no tag at all."""
    name = image.rsplit("/", 1)[-1]
    return name.endswith(":latest") or ":" not in name


def _quantized(loaded: LoadedWorkflow, model: str) -> list[str]:
    """The quantizations `model`'s variants try, in name order."""
    return sorted(
        {
            str(v.quantization)
            for v in loaded.variants
            if v.model == model and v.quantization is not Quantization.NONE
        }
    )


def thin_quantizations(specs: Specs) -> list[Problem]:
    """Warnings for quantized variants of models whose Linear layers, the only ones the
    runner quantizes (docs/runner.md), hold under THIN_QUANTIZATION of the parameters (as the
    committed file says, or the spec's `layers:`): the result would be labelled quantized and
    measure mostly the float model."""
    found = []
    for loaded in specs.workflows:
        workflow = loaded.workflow
        for index, model in enumerate(workflow.models):
            if model.file is not None:
                try:
                    share = specs.model_files.program(model.file).linear_share
                except UnsafeArchive:
                    continue  # refused as an error already
            elif model.layers is not None:
                share = model.layers.weights.share
            else:
                continue
            quantized = _quantized(loaded, model.name)
            if share is None or share >= THIN_QUANTIZATION or not quantized:
                continue
            found.append(
                problem_at(
                    loaded.source,
                    loaded.file,
                    ("models", index, "file" if model.file is not None else "layers"),
                    f"{', '.join(quantized)} quantizes Linear layers only, {share:.0%} of "
                    f"{model.name}'s parameters: its quantized results would measure mostly the "
                    "float model",
                    "exclude the quantization for this model, or read its results with the "
                    "result's applied.quantized_weight_share beside them",
                    severity="warning",
                )
            )
    return found


def slow_quantizations(specs: Specs) -> list[Problem]:
    """Warnings for quantized CPU variants at a precision their CPU kernel runs on a scalar
    path (int4 at fp32 or fp16): valid, and measured, but many times slower than the model
    unquantized, which is seldom the question."""
    found = []
    for loaded in specs.workflows:
        cpu_targets = {
            t.key for t in loaded.workflow.targets if not DEVICE_TYPES[t.gpu_type].is_gpu
        }
        seen = set()
        for variant in loaded.variants:
            fast = QUANTIZATION_KERNELS[variant.quantization].cpu_vectorized
            where = (variant.origins["quantization"], variant.precision)
            if variant.target not in cpu_targets or variant.precision in fast or where in seen:
                continue
            seen.add(where)
            found.append(
                problem_at(
                    loaded.source,
                    loaded.file,
                    variant.origins["quantization"],
                    f"{variant.quantization} at {variant.precision} on a CPU runs its kernel's "
                    f"scalar path (vectorized for {', '.join(sorted(fast))} only): expect it "
                    "several times slower than the unquantized model",
                    f"measure it at {', '.join(sorted(fast))} to see what the kernel is for",
                    severity="warning",
                )
            )
    return found


def unchecked_quantizations(specs: Specs) -> list[Problem]:
    """Warnings for quantized variants of models synth cannot read (url, oci, image_path)
    whose entry records no `layers:` (written before export printed them): whether their
    kernels take any of the model's layers is known only in their pods, where a variant that
    finds none fails (unsupported_variant)."""
    found = []
    for loaded in specs.workflows:
        for index, model in enumerate(loaded.workflow.models):
            quantized = _quantized(loaded, model.name)
            if model.file is not None or model.layers is not None or not quantized:
                continue
            found.append(
                problem_at(
                    loaded.source,
                    loaded.file,
                    ("models", index, model.source),
                    f"{', '.join(quantized)} of model {model.name!r} cannot be checked before "
                    f"its pod: synth does not read a model from {model.source}, and this entry "
                    "records no layers",
                    "add the layers: line `benchfleet export` prints for its file (`make "
                    "push-model` prints it too); without it, a variant whose kernel takes none "
                    "of the model's layers fails in its pod (unsupported_variant, exit 6)",
                    severity="warning",
                )
            )
    return found


def unchecked_recordings(specs: Specs) -> list[Problem]:
    """Warnings for recorded inputs synth cannot read (url, oci, image_path) whose entry
    records no `contents:`: whether they fit the models' inputs is known only in the pods,
    where a misfit fails every variant (inputs_mismatch, exit 12)."""
    found = []
    for loaded in specs.workflows:
        recorded = loaded.workflow.benchmark.recorded_inputs
        if recorded is None or recorded.file is not None or recorded.contents is not None:
            continue
        found.append(
            problem_at(
                loaded.source,
                loaded.file,
                ("benchmark", "recorded_inputs", recorded.source),
                f"the recorded inputs cannot be held to the models before their pods: synth "
                f"does not read a recording from {recorded.source}, and this entry records no "
                "contents",
                "add contents: (docs/specs.md, Recorded inputs); without it, a recording that "
                "does not fit fails every variant in its pod (inputs_mismatch, exit 12)",
                severity="warning",
            )
        )
    return found
