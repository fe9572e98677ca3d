"""Rules that relate a workflow's fields to each other, to the fleet and to the repository.

They run on a structurally valid Workflow and report each problem at the field a user has
to change, so `targets[0].gpu_type` rather than the whole file.
"""

import io
import math
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from contract.archive import Program, UnsafeArchive
from contract.config import RECORDED_INPUTS_KEY, Stage, tail_iterations
from contract.inputs import (
    Dimension,
    ExpectedInput,
    GivenInput,
    handover_misfit,
    inputs_misfit,
    per_sample,
)
from contract.params import params_text
from contract.quantity import parse_quantity
from contract.recorded import (
    BadRecording,
    RecordedContents,
    Recording,
    contents_disagree,
    read_recording,
    recording_misfit,
)
from contract.variant import RUN_SETTINGS, Quantization, Runtime, layers_taken, takes_layer
from contract.weights import LayerRecord, LinearWeights
from synth.catalogue import (
    DEVICE_TYPES,
    runtime_unoffered_because,
    unoffered_because,
    variant_unrun_because,
)
from synth.fleet import Cluster, Fleet
from synth.kubernetes import IMAGE_VOLUMES_ON, version_text
from synth.limits import MAX_VARIANTS_CEILING
from synth.modelfiles import ModelFiles
from synth.names import (
    DNS_LABEL_MAX,
    indexed_pod_suffix,
    job_name,
    model_bundle_name,
    placeholder_digest,
)
from synth.repeats import repeats
from synth.scratch import TMP_BASE_BYTES, quantity, tmp_bytes
from synth.spec import InputSpec, ModelSpec, Workflow
from synth.sweep import Variant, idle_excludes, idle_includes
from synth.yaml_source import Loc


@dataclass(frozen=True)
class Finding:
    """A problem at a location in one workflow file."""

    loc: Loc
    message: str
    hint: str | None = None


def check_workflow(
    workflow: Workflow, variants: list[Variant], fleet: Fleet, model_files: ModelFiles
) -> list[Finding]:
    """Every cross-field problem of `workflow`, whose expansion is `variants`."""
    return [
        *_unique_names(workflow),
        *_models_have_inputs(workflow),
        *_families_hold_together(workflow),
        *_pinned_files_match(workflow, model_files),
        *_model_files_are_plain_programs(workflow, variants, model_files),
        *_stage_inputs_are_the_chains(workflow),
        *_clusters_can_run_targets(workflow, fleet),
        *_clusters_can_mount_artifacts(workflow, fleet),
        *_selectors_refer_to_something(workflow),
        *_variant_count(workflow, variants),
        *_excludes_remove_something(workflow),
        *_includes_add_something(workflow),
        *_devices_support_variants(workflow, variants),
        *_runtimes_take_variants(workflow, variants),
        *_derived_names_fit(workflow, variants),
        *_parallelism_and_deadline(workflow, variants),
        *_interleave_needs_groups(workflow),
        *_fixed_rate(workflow),
        *_scratch_fits_the_pods(workflow, variants),
    ]


def target_clusters(workflow: Workflow, fleet: Fleet) -> list[Cluster]:
    """The clusters a workflow runs in: those it names, or all of them."""
    names = workflow.clusters or [cluster.name for cluster in fleet.clusters]
    return [fleet.cluster(name) for name in names]


def _unique_names(workflow: Workflow) -> Iterator[Finding]:
    for index, first in repeats(model.name for model in workflow.models):
        name = workflow.models[index].name
        yield Finding(
            ("models", index, "name"), f"model name {name!r} is already used by models[{first}]"
        )
    for index, first in repeats(target.key for target in workflow.targets):
        target = workflow.targets[index]
        yield Finding(
            ("targets", index, "name" if target.name else "gpu_type"),
            f"target name {target.key!r} is already used by targets[{first}]",
            "give each target a distinct name, e.g. a100-large and a100-small",
        )
    clusters = workflow.clusters or []
    for index, first in repeats(clusters):
        yield Finding(
            ("clusters", index),
            f"cluster {clusters[index]!r} is already listed at clusters[{first}]",
            "the workflow runs once in each cluster it lists; remove the repeat",
        )


def _models_have_inputs(workflow: Workflow) -> Iterator[Finding]:
    if workflow.benchmark.default_inputs is not None:
        return
    for index, model in enumerate(workflow.models):
        if model.inputs is None:
            yield Finding(
                ("models", index),
                f"model {model.name!r} has no inputs",
                "set benchmark.inputs (or the design note's benchmark.input_shape) for all "
                "models, or inputs on this model",
            )


def _families_hold_together(workflow: Workflow) -> Iterator[Finding]:
    """A family's members each carry params, the same names, each member at other values:
    what the report compares along is then a param, never a difference of names."""
    first: dict[str, tuple[int, ModelSpec]] = {}
    for index, model in enumerate(workflow.models):
        if model.params is not None and model.family is None:
            yield Finding(
                ("models", index, "params"),
                f"model {model.name} has params but no family",
                "name its family: the report compares params only within a family",
            )
            continue
        if model.family is None:
            continue
        if model.params is None:
            yield Finding(
                ("models", index, "family"),
                f"model {model.name} is in family {model.family} but has no params",
                "give its params, e.g. {action_chunk: 8}: what tells the members apart",
            )
            continue
        if model.family not in first:
            first[model.family] = (index, model)
            continue
        _, other = first[model.family]
        assert other.params is not None  # a family's first member with params
        if sorted(model.params) != sorted(other.params):
            yield Finding(
                ("models", index, "params"),
                f"model {model.name} of family {model.family} has params "
                f"{', '.join(sorted(model.params))}; {other.name} has "
                f"{', '.join(sorted(other.params))}",
                "every member of a family names the same params",
            )
    for family in first:
        members = [(i, m) for i, m in enumerate(workflow.models) if m.family == family]
        seen: dict[str, str] = {}
        for index, model in members:
            if model.params is None:
                continue  # said above
            words = params_text(model.params)
            if words in seen:
                yield Finding(
                    ("models", index, "params"),
                    f"models {seen[words]} and {model.name} of family {family} both have "
                    f"params {words}",
                    "each member of a family is another program: give each its own values",
                )
            seen.setdefault(words, model.name)


def _pinned_files_match(workflow: Workflow, model_files: ModelFiles) -> Iterator[Finding]:
    for index, model in enumerate(workflow.models):
        if model.file is None or model.sha256 is None:
            continue
        actual = model_files.read(model.file).sha256
        if actual != model.sha256:
            yield Finding(
                ("models", index, "sha256"),
                f"{model.file} has sha256 {actual}, not the pinned {model.sha256}",
                "the file changed since it was pinned: update sha256 if the change is intended",
            )


def _model_files_are_plain_programs(
    workflow: Workflow, variants: list[Variant], model_files: ModelFiles
) -> Iterator[Finding]:
    declared: dict[str, tuple[ExpectedInput, ...]] = {}
    # The layers of each model: read from its committed file, else as its spec records them.
    linear: dict[str, LinearWeights | None] = {
        model.name: model.layers.weights for model in workflow.models if model.layers
    }
    for index, model in enumerate(workflow.models):
        stages: dict[Stage, Program] = {}
        for stage, spec in model.stages().items():
            if spec.file is None:
                continue
            try:
                stages[stage] = model_files.program(spec.file)
            except UnsafeArchive as error:
                yield _refused((index, stage), spec.file, error)
        if "preprocess" in stages:
            # The variant's inputs are the chain's: the preprocess takes them.
            declared[model.name] = stages["preprocess"].inputs
        if model.file is None:
            continue
        try:
            program = model_files.program(model.file)
        except UnsafeArchive as error:
            yield _refused((index,), model.file, error)
            continue
        linear[model.name] = program.linear
        if model.preprocess is None:
            declared[model.name] = program.inputs
        yield from _stages_fit_the_model(index, model, program, stages)
        yield from _recorded_layers_are_the_files(index, model.layers, program.linear)
    yield from _inputs_fit_models(workflow, variants, declared)
    yield from _recording_fits_models(workflow, variants, declared, model_files)
    yield from _quantizations_reach_layers(workflow, variants, linear)


def _recording_fits_models(
    workflow: Workflow,
    variants: list[Variant],
    declared: dict[str, tuple[ExpectedInput, ...]],
    model_files: ModelFiles,
) -> Iterator[Finding]:
    """The recording (`benchmark.recorded_inputs`) against the chain's inputs of each model
    whose archive declares them (its preprocess's, where it has one: the recording feeds
    the chain's first stage), at each batch size (contract.recorded): a committed file as it
    is, one from elsewhere as its `contents:` records it; what the runner would refuse, said
    here."""
    recorded = workflow.benchmark.recorded_inputs
    if recorded is None:
        return
    loc: Loc = ("benchmark", "recorded_inputs")
    if recorded.file is not None:
        found = _committed_recording(recorded.file, recorded.sha256, recorded.contents, model_files)
        for where, message, hint in found.problems:
            yield Finding((*loc, *where), message, hint)
        recording = found.recording
    else:
        recording = recorded.contents.recording() if recorded.contents else None
    if recording is None:
        return
    said: set[str] = set()
    for variant in variants:
        expected = declared.get(variant.model)
        if not expected or not variant.inputs:
            continue
        given = [GivenInput(spec.shape, spec.dtype) for spec in variant.inputs]
        misfit = recording_misfit(variant.model, variant.batch_size, recording, given, expected)
        if misfit is not None and misfit not in said:
            said.add(misfit)
            yield Finding(
                loc,
                misfit,
                "record the chain's inputs (its preprocess's, where it has one) by the names "
                "`benchfleet export` lists, in the spec's dtypes",
            )


@dataclass(frozen=True)
class _Committed:
    recording: Recording | None
    """None where the file is no recording."""
    problems: list[tuple[tuple[str, ...], str, str | None]]
    """Each problem's field under `recorded_inputs`, message and hint."""


def _committed_recording(
    file: str, sha256: str | None, contents: RecordedContents | None, model_files: ModelFiles
) -> _Committed:
    """A committed recording read as the runner reads it, and what is wrong with it or with
    what the spec pins or records of it."""
    content = model_files.read(file)
    problems: list[tuple[tuple[str, ...], str, str | None]] = []
    if sha256 is not None and content.sha256 != sha256:
        problems.append(
            (
                ("sha256",),
                f"{file} has sha256 {content.sha256}, not the pinned {sha256}",
                "the file changed since it was pinned: update sha256 if the change is intended",
            )
        )
    try:
        recording = read_recording(io.BytesIO(content.data), content.size)
    except BadRecording as error:
        problems.append(
            (
                ("file",),
                f"{file} is no recording the runner reads: {error}",
                "save the samples with safetensors, named <input name>.<sample> "
                "(docs/specs.md, Recorded inputs)",
            )
        )
        return _Committed(None, problems)
    if contents is not None and (disagreement := contents_disagree(recording, contents)):
        problems.append(
            (("contents",), f"{file}: {disagreement}", "set contents: to what the file holds")
        )
    return _Committed(recording, problems)


def _refused(where: tuple[int | str, ...], file: str, error: UnsafeArchive) -> Finding:
    return Finding(
        ("models", *where, "file"),
        f"{file} is refused: {error}",
        "the runner would refuse it too; re-export the model with torch.export.export "
        "and save it with torch.export.save, with tensors only",
    )


def _stages_fit_the_model(
    index: int, model: ModelSpec, program: Program, files: Mapping[Stage, Program]
) -> Iterator[Finding]:
    """What each stage hands the next must be what that one takes, per sample: the
    preprocess's outputs (its committed file's, else its `outputs:` record) against the
    model's committed file's inputs, the model's outputs against the postprocess's inputs
    (its file's, else its `inputs:` record). The runner would hand the one to the other on
    every query, and refuse the pair in its pod (stage_mismatch)."""
    hint = (
        "export the stages together (`benchfleet export --preprocess/--postprocess` prints "
        "each one's inputs: and outputs:), each on what the stage before it returns"
    )
    pre, post = model.preprocess, model.postprocess
    if pre is not None:
        given = _given(files.get("preprocess"), pre.outputs)
        misfit = _misfit_of(given, program.inputs)
        if misfit:
            field = "file" if "preprocess" in files else "outputs"
            yield Finding(
                ("models", index, "preprocess", field),
                f"the preprocess returns what model {model.name} cannot take: {misfit}",
                hint,
            )
    if post is not None:
        given = per_sample(program.outputs)
        taken = files["postprocess"].inputs if "postprocess" in files else _expected(post.inputs)
        misfit = _misfit_of(given, taken)
        if misfit:
            field = "file" if "postprocess" in files else "inputs"
            yield Finding(
                ("models", index, "postprocess", field),
                f"model {model.name} returns what its postprocess cannot take: {misfit}",
                hint,
            )


def _given(program: Program | None, recorded: list[InputSpec] | None) -> list[GivenInput] | None:
    """What a stage hands on per sample: its committed file's outputs, else its record."""
    if program is not None:
        return per_sample(program.outputs)
    if recorded is None:
        return None
    return [GivenInput(tuple(spec.shape), spec.dtype) for spec in recorded]


def _expected(recorded: list[InputSpec] | None) -> tuple[ExpectedInput, ...]:
    """A stage's recorded inputs as a program's, any batch."""
    return tuple(
        ExpectedInput(
            f"input {position}",
            (Dimension(1, None), *(Dimension(size, size) for size in spec.shape)),
            spec.dtype,
        )
        for position, spec in enumerate(recorded or ())
    )


def _misfit_of(given: list[GivenInput] | None, expected: Sequence[ExpectedInput]) -> str | None:
    """Why `given` per sample does not fit `expected`; None where it does or either is
    unknown."""
    return handover_misfit(given, expected) if given is not None and expected else None


def _stage_inputs_are_the_chains(workflow: Workflow) -> Iterator[Finding]:
    """What a preprocess records it takes (its `inputs:`) must be the inputs the runner
    draws for the chain: the entry's `inputs`, else the benchmark's."""
    for index, model in enumerate(workflow.models):
        stage = model.preprocess
        chain = model.inputs or workflow.benchmark.default_inputs
        if stage is None or stage.inputs is None or chain is None:
            continue
        said = _inputs_text(stage.inputs)
        if said != _inputs_text(chain):
            yield Finding(
                ("models", index, "preprocess", "inputs"),
                f"the preprocess takes {said}, but the chain's inputs are {_inputs_text(chain)}",
                "with a preprocess, a model's inputs: are what the preprocess takes (the raw "
                "observation): set them to its inputs:",
            )


def _inputs_text(inputs: list[InputSpec]) -> str:
    shown = ", ".join(f"[{', '.join(map(str, i.shape))}] {i.dtype}" for i in inputs)
    return f"({shown})"


def _recorded_layers_are_the_files(
    index: int, recorded: LayerRecord | None, found: LinearWeights | None
) -> Iterator[Finding]:
    """A committed file's `layers:` must be its own: the runner would refuse it otherwise."""
    if recorded is None or (found is not None and recorded.weights.agrees_with(found)):
        return
    held = LayerRecord.of(found).flow() if found is not None else "no weights synth can read"
    yield Finding(
        ("models", index, "layers"),
        f"the model's file holds {held}, not the layers recorded here",
        "set layers: to the line `benchfleet export` prints for this file, or remove it: "
        "synth reads a committed file's layers itself",
    )


def _shapes(weights: LinearWeights, shown: int = 8) -> str:
    listed = ", ".join(f"{out}x{in_}" for out, in_ in weights.shapes[:shown])
    more = len(weights.shapes) - shown
    return f"{listed}{f' and {more} more' if more > 0 else ''}"


def _quantizations_reach_layers(
    workflow: Workflow, variants: list[Variant], linear: dict[str, LinearWeights | None]
) -> Iterator[Finding]:
    """A quantized variant whose kernel takes none of its model's Linear layers (its committed
    file's, or those its spec records) would fail in its pod (the runner refuses to measure
    the float model under a quantized label): said here, once per model, quantization and
    kind of device."""
    devices = {target.key: DEVICE_TYPES[target.gpu_type] for target in workflow.targets}
    files = {model.name for model in workflow.models if model.file is not None}
    seen: set[tuple[str, Quantization, bool]] = set()
    for variant in variants:
        weights, device = linear.get(variant.model), devices[variant.target]
        key = (variant.model, variant.quantization, device.is_gpu)
        if (
            weights is None
            or variant.quantization is Quantization.NONE
            or variant.quantization not in device.quantizations  # said by the device check
            or key in seen
            or any(takes_layer(variant.quantization, device.is_gpu, *s) for s in weights.shapes)
        ):
            continue
        seen.add(key)
        recorded = "" if variant.model in files else ", as its layers: records"
        held = (
            f"the model's are {_shapes(weights)} (out x in features{recorded})"
            if weights.shapes
            else f"the model has none{recorded}"
        )
        yield Finding(
            variant.origins["quantization"],
            f"{variant.quantization} takes no linear layer of model {variant.model!r} on "
            f"{device.name}: its kernel takes {layers_taken(variant.quantization, device.is_gpu)}"
            f", and {held}",
            f"exclude it for this model ({{model: {variant.model}, quantization: "
            f"{variant.quantization}}} in sweep.exclude), or quantize a model with such layers",
        )


def _inputs_fit_models(
    workflow: Workflow, variants: list[Variant], declared: dict[str, tuple[ExpectedInput, ...]]
) -> Iterator[Finding]:
    """The spec's inputs against what each archive declares (contract.inputs, no torch): a
    shape written with the batch in it, a batch a static-batch export refuses, an integer
    input where the model takes floats. One finding per distinct misfit."""
    seen: set[tuple[str, int | None]] = set()
    for variant in variants:
        expected = declared.get(variant.model)
        if not expected or not variant.inputs:
            continue  # no file, no inputs (said elsewhere), or inputs the archive does not spell
        given = [GivenInput(spec.shape, spec.dtype) for spec in variant.inputs]
        misfit = inputs_misfit(variant.model, variant.batch_size, given, expected)
        # A shape that does not fit is said once per model; a batch, once per batch size.
        key = (variant.model, variant.batch_size if misfit and misfit.is_batch else None)
        if misfit is None or key in seen:
            continue
        seen.add(key)
        if misfit.is_batch:
            loc = variant.origins.get("batch_size") or ("benchmark", "batch_size")
            yield Finding(loc, misfit.message)
        elif misfit.has_extra_dimension:
            yield Finding(
                _inputs_loc(workflow, variant.model),
                misfit.message,
                "inputs are per sample: leave the batch dimension out (batch_size sets it)",
            )
        else:
            yield Finding(_inputs_loc(workflow, variant.model), misfit.message)


def _inputs_loc(workflow: Workflow, model: str) -> Loc:
    """Where the model's inputs are written: its own, or the benchmark's for every model."""
    index = next(i for i, spec in enumerate(workflow.models) if spec.name == model)
    if workflow.models[index].inputs is not None:
        return ("models", index, "inputs")
    if workflow.benchmark.input_shape is not None:
        return ("benchmark", "input_shape")
    return ("benchmark", "inputs")


def _clusters_can_mount_artifacts(workflow: Workflow, fleet: Fleet) -> Iterator[Finding]:
    """An `oci` model (or recording) is an image volume, which the API server drops (and so
    refuses the pod) where the feature is not on by default."""
    older = [c for c in target_clusters(workflow, fleet) if c.version < IMAGE_VOLUMES_ON]
    if not older:
        return
    named = ", ".join(f"{c.name} ({c.kubernetes_version})" for c in older)
    able = [c.name for c in fleet.clusters if c.version >= IMAGE_VOLUMES_ON]
    recorded = workflow.benchmark.recorded_inputs
    located: list[tuple[Loc, str]] = []
    for index, model in enumerate(workflow.models):
        if model.oci:
            located.append((("models", index, "oci"), "model"))
        for stage in ("preprocess", "postprocess"):
            program = getattr(model, stage)
            if program is not None and program.oci:
                located.append((("models", index, stage, "oci"), f"{stage} stage"))
    if recorded is not None and recorded.oci is not None:
        located.append((("benchmark", "recorded_inputs", "oci"), "recording"))
    for loc, what in located:
        yield Finding(
            loc,
            f"an oci {what} is mounted as an image volume, which Kubernetes enables by "
            f"default from {version_text(IMAGE_VOLUMES_ON)}; cluster(s) {named} run older",
            f"clusters that can mount it: {', '.join(able) or 'none'} (set the workflow's "
            "clusters); if a cluster was upgraded, update its kubernetes_version in "
            f"specs/clusters.yaml; or serve the {what} by url",
        )


def _clusters_can_run_targets(workflow: Workflow, fleet: Fleet) -> Iterator[Finding]:
    clusters = target_clusters(workflow, fleet)
    for index, target in enumerate(workflow.targets):
        lacking = [c.name for c in clusters if target.gpu_type not in c.device_types]
        if lacking:
            able = [c.name for c in fleet.clusters if target.gpu_type in c.device_types]
            yield Finding(
                ("targets", index, "gpu_type"),
                f"{target.gpu_type} is not available in cluster(s) {', '.join(lacking)}",
                f"clusters with {target.gpu_type}: {', '.join(able) or 'none'}; "
                "set the workflow's clusters accordingly",
            )
        if target.spot:
            no_spot = [c.name for c in clusters if c.spot is None]
            if no_spot:
                yield Finding(
                    ("targets", index, "spot"),
                    f"cluster(s) {', '.join(no_spot)} have no spot nodes configured",
                    "describe them under spot: in specs/clusters.yaml, or set spot: false",
                )
    if workflow.scheduling.queue is not None:
        no_kueue = [c.name for c in clusters if c.kueue is None]
        if no_kueue:
            yield Finding(
                ("scheduling", "queue"),
                f"cluster(s) {', '.join(no_kueue)} do not run Kueue",
                "set kueue: {cluster_queue: NAME} for them in specs/clusters.yaml, or remove queue",
            )


def _selectors_refer_to_something(workflow: Workflow) -> Iterator[Finding]:
    if workflow.sweep is None:
        return
    models = [model.name for model in workflow.models]
    targets = [target.key for target in workflow.targets]
    known_models, known_targets = set(models), set(targets)
    matrix = workflow.sweep.matrix
    swept = {dimension: set(getattr(matrix, dimension) or ()) for dimension in RUN_SETTINGS}
    for kind, selectors in (
        ("exclude", workflow.sweep.exclude),
        ("include", workflow.sweep.include),
    ):
        for index, selector in enumerate(selectors):
            loc = ("sweep", kind, index)
            if selector.model is not None and selector.model not in known_models:
                yield Finding(
                    (*loc, "model"),
                    f"no model is named {selector.model!r}",
                    f"models: {', '.join(models)}",
                )
            if selector.target is not None and selector.target not in known_targets:
                yield Finding(
                    (*loc, "target"),
                    f"no target is named {selector.target!r}",
                    f"targets: {', '.join(targets)}",
                )
            if kind == "include":
                continue
            for dimension in RUN_SETTINGS:
                value = getattr(selector, dimension)
                if value is not None and value not in swept[dimension]:
                    yield Finding(
                        (*loc, dimension),
                        f"{dimension} {value} is not in sweep.matrix.{dimension}, "
                        "so this exclude matches nothing",
                        "exclude only combinations the matrix produces",
                    )


def _excludes_remove_something(workflow: Workflow) -> Iterator[Finding]:
    """An exclude that removes nothing new is a repeat, or narrower than an earlier one: its
    author meant another combination, and what they meant to leave out runs."""
    for index in idle_excludes(workflow):
        yield Finding(
            ("sweep", "exclude", index),
            "this exclude removes no variant: each one it matches is excluded by an earlier "
            "entry already",
            "remove it, or name the combination it was meant to exclude",
        )


def _includes_add_something(workflow: Workflow) -> Iterator[Finding]:
    """An include that adds nothing is a mistake that looks like a measurement: its author
    expects a variant the matrix already runs, or meant other values."""
    for index in idle_includes(workflow):
        yield Finding(
            ("sweep", "include", index),
            "this include adds no variant: each one it names is already in the matrix or in "
            "an earlier include",
            "remove it, or name the value it was meant to add",
        )


def _variant_count(workflow: Workflow, variants: list[Variant]) -> Iterator[Finding]:
    cap = workflow.scheduling.max_variants
    where: Loc = ("sweep", "matrix") if workflow.sweep else ("models",)
    if not variants:
        yield Finding(("sweep", "exclude"), "every variant is excluded; nothing would run")
    elif len(variants) > cap:
        yield Finding(
            where,
            f"the workflow expands to {len(variants)} variants, more than scheduling."
            f"max_variants ({cap})",
            "exclude combinations, split the workflow, or raise scheduling.max_variants "
            f"(at most {MAX_VARIANTS_CEILING})",
        )


def _devices_support_variants(workflow: Workflow, variants: list[Variant]) -> Iterator[Finding]:
    devices = {target.key: DEVICE_TYPES[target.gpu_type] for target in workflow.targets}
    reported: set[tuple[str, Loc]] = set()
    for variant in variants:
        device = devices[variant.target]
        capability = device.compute_capability
        for dimension, supported, why in (
            ("precision", device.precisions, None),
            (
                "quantization",
                device.quantizations,
                unoffered_because(variant.quantization, capability),
            ),
            ("runtime", device.runtimes, runtime_unoffered_because(variant.runtime, capability)),
        ):
            value = getattr(variant, dimension)
            loc = variant.origins[dimension]
            if value in supported or (variant.target, loc) in reported:
                continue
            reported.add((variant.target, loc))
            yield Finding(
                loc,
                f"{dimension} {value} is not supported on {device.name} ({device.architecture}),"
                f" which target {variant.target!r} uses{f': {why}' if why else ''}",
                _unsupported_hint(workflow, variant.target, dimension, value, loc),
            )


def _runtimes_take_variants(workflow: Workflow, variants: list[Variant]) -> Iterator[Finding]:
    """A runtime that cannot express a variant's quantization or precision on its target is
    refused here, where it is written, rather than run eager or failed in the pod."""
    devices = {target.key: DEVICE_TYPES[target.gpu_type] for target in workflow.targets}
    reported: set[tuple[Loc, str]] = set()
    for variant in variants:
        device = devices[variant.target]
        why = variant_unrun_because(
            variant.runtime, variant.precision, variant.quantization, device.compute_capability
        )
        loc = variant.origins["runtime"]
        if why is None or (loc, why) in reported:
            continue
        reported.add((loc, why))
        settings = f"precision {variant.precision}, quantization {variant.quantization}"
        swept = loc[:2] == ("sweep", "matrix")
        yield Finding(
            loc,
            f"runtime {variant.runtime} cannot run {variant.model} at {settings} on "
            f"{device.name}: {why}",
            (
                f"add {{runtime: {variant.runtime}, precision: {variant.precision}, "
                f"quantization: {variant.quantization}}} to sweep.exclude"
                if swept
                else "choose another runtime or other settings for these variants"
            ),
        )


def _unsupported_hint(
    workflow: Workflow, target: str, dimension: str, value: object, loc: Loc
) -> str:
    """The change that fixes an unsupported value where it is written: an exclude only where
    some other target runs the value, else dropping it from the matrix."""
    if loc[:2] == ("sweep", "matrix"):
        elsewhere = [
            t.key
            for t in workflow.targets
            if value in getattr(DEVICE_TYPES[t.gpu_type], f"{dimension}s")
        ]
        if elsewhere:
            return f"add {{target: {target}, {dimension}: {value}}} to sweep.exclude"
        return f"remove {value} from sweep.matrix.{dimension}: no target of this workflow runs it"
    if loc[:2] == ("sweep", "include"):
        return f"give this include a target that runs {dimension} {value}, or remove it"
    device = DEVICE_TYPES[next(t.gpu_type for t in workflow.targets if t.key == target)]
    allowed = ", ".join(sorted(str(item) for item in getattr(device, f"{dimension}s")))
    return f"choose one of {allowed} for target {target!r}"


def _derived_names_fit(workflow: Workflow, variants: list[Variant]) -> Iterator[Finding]:
    digest = placeholder_digest()
    per_target = Counter(variant.target for variant in variants)
    for index, target in enumerate(workflow.targets):
        count = per_target[target.key]
        name = job_name(workflow.id, target.key, digest) + indexed_pod_suffix(max(count, 1))
        if len(name) > DNS_LABEL_MAX:
            field = "name" if target.name else "gpu_type"
            yield Finding(
                ("targets", index, field),
                f"the derived pod hostname {name!r} is {len(name)} characters; Kubernetes "
                f"allows {DNS_LABEL_MAX}",
                f"shorten the workflow id ({len(workflow.id)} characters) or the target name "
                f"({len(target.key)}) by {len(name) - DNS_LABEL_MAX}",
            )
    if any(model.file is not None for model in workflow.models):
        name = model_bundle_name(workflow.id, digest)
        if len(name) > DNS_LABEL_MAX:
            yield Finding(
                ("id",),
                f"the derived ConfigMap name {name!r} is {len(name)} characters; at most "
                f"{DNS_LABEL_MAX} fit a label value",
                f"shorten the workflow id by {len(name) - DNS_LABEL_MAX}",
            )


def _parallelism_and_deadline(workflow: Workflow, variants: list[Variant]) -> Iterator[Finding]:
    scheduling = workflow.scheduling
    jobs = workflow.jobs_per_cluster
    if scheduling.max_parallel < jobs:
        repeats = workflow.benchmark.repeats
        counted = (
            f"the number of targets ({jobs}); each target's Job"
            if repeats == 1
            else f"the number of Jobs ({len(workflow.targets)} targets x {repeats} repeats); "
            "each Job"
        )
        yield Finding(
            ("scheduling", "max_parallel"),
            f"max_parallel ({scheduling.max_parallel}) is below {counted} needs at least one pod",
            f"raise max_parallel to at least {jobs}"
            + ("" if repeats == 1 else ", or lower benchmark.repeats"),
        )
        return
    benchmark = workflow.benchmark
    per_variant = benchmark.warmup_phase.min_time + benchmark.measure_min_s
    share = workflow.parallelism_per_job
    per_target = Counter(variant.target for variant in variants)
    for target in workflow.targets:
        count = per_target[target.key]
        # A pod runs its group in sequence: the waves are of pods, each as long as its group.
        group = min(scheduling.variants_per_pod, count)
        pods = math.ceil(count / group) if count else 0
        waves = math.ceil(pods / share)
        needed = waves * group * per_variant
        if needed > scheduling.deadline:
            grouped = f", {group} per pod, {share} pods" if group > 1 else f", {share}"
            yield Finding(
                ("scheduling", "deadline"),
                f"target {target.key!r} needs at least {needed:g}s ({count} variants{grouped} "
                f"at a time, {per_variant:g}s of minimum warmup and measurement "
                f"each), more than the deadline of {scheduling.deadline:g}s",
                "raise the deadline or max_parallel, or shorten min_time",
            )


def _interleave_needs_groups(workflow: Workflow) -> Iterator[Finding]:
    # Rounds alternate between the variants of one pod: with one variant per pod there is
    # nothing to alternate with, and the option would silently do nothing.
    if workflow.benchmark.interleave and workflow.scheduling.variants_per_pod == 1:
        yield Finding(
            ("benchmark", "interleave"),
            "interleave needs several variants per pod; scheduling.variants_per_pod is 1",
            "set scheduling.variants_per_pod above 1 (the variants to compare share a pod), "
            "or drop interleave",
        )


def _fixed_rate(workflow: Workflow) -> Iterator[Finding]:
    """A fixed rate the runner can issue, a deadline the run can judge, a tail its length
    can hold; and no fixed-rate setting where the closed loop would silently ignore it."""
    benchmark = workflow.benchmark
    if benchmark.scenario != "fixed_rate":
        for name in ("rate_hz", "deadline"):
            if getattr(benchmark, name) is not None:
                yield Finding(
                    ("benchmark", name),
                    f"{name} applies to scenario: fixed_rate; this workflow's scenario is "
                    f"{benchmark.scenario}",
                    f"set benchmark.scenario: fixed_rate, or drop {name}",
                )
        return
    if benchmark.interleave:
        yield Finding(
            ("benchmark", "interleave"),
            "interleave alternates variants in closed-loop rounds; a fixed_rate run keeps "
            "each variant on its own clock",
            "drop interleave, or use scenario: single_stream",
        )
    # Above MAX_RATE_HZ is the spec's own error (synth/spec.py), said where it is read.
    if benchmark.rate_hz is None:
        yield Finding(
            ("benchmark", "scenario"),
            "scenario fixed_rate needs benchmark.rate_hz",
            "e.g. rate_hz: 30 for a 30 Hz control loop",
        )
        return
    yield from _fixed_rate_length(workflow, benchmark.rate_hz)


def _fixed_rate_length(workflow: Workflow, rate: float) -> Iterator[Finding]:
    benchmark = workflow.benchmark
    measure = benchmark.measure_phase
    if benchmark.deadline is not None and benchmark.deadline > benchmark.measure_min_s:
        yield Finding(
            ("benchmark", "deadline"),
            f"deadline {benchmark.deadline:g}s is longer than the run "
            f"({benchmark.measure_min_s:g}s of queries at {rate:g} Hz)",
            "a deadline is judged per query: keep it within a few periods "
            f"({1 / rate:g}s each), or lengthen benchmark.measure",
        )
    if measure.tail is not None:
        needed = tail_iterations(measure.tail)
        # Open loop: a run can hold no more queries than arrive before its max_time.
        arriving = math.floor(measure.max_time * rate)
        if arriving < needed:
            yield Finding(
                ("benchmark", "measure", "tail"),
                f"{measure.tail} needs {needed} queries; at {rate:g} Hz only {arriving} arrive "
                f"within measure.max_time ({measure.max_time:g}s)",
                f"raise measure.max_time to at least {math.ceil(needed / rate)}s, or ask "
                "for a lower tail",
            )


_INDUCTOR_BUILDS: Final = frozenset({Runtime.INDUCTOR, Runtime.AOTINDUCTOR})
"""The runtimes whose build writes inductor's generated code and kernels to the pod's /tmp."""


def _scratch_fits_the_pods(workflow: Workflow, variants: list[Variant]) -> Iterator[Finding]:
    """A target's pods may write what its `ephemeral-storage` limit allows, and a pod that
    writes to its /tmp (it downloads a url model, or compiles with inductor, whatever
    delivers the model) needs room there for torch's caches and inductor's kernels
    (TMP_BASE_BYTES) and the url models it downloads. The Jobs' groups depend on what is
    left to run, so the check takes the worst any pod could meet: the largest model alone,
    or with several variants per pod the largest ones together, one per variant, in a pod
    that also compiles where any variant of the target does."""
    indexes = {model.name: index for index, model in enumerate(workflow.models)}
    recorded = workflow.benchmark.recorded_inputs
    # Every pod downloads a url recording, whichever models it runs.
    replayed = (
        {RECORDED_INPUTS_KEY: recorded.download_bytes}
        if recorded is not None and recorded.download_bytes
        else {}
    )
    for target_index, target in enumerate(workflow.targets):
        limit = target.resources.limits.get("ephemeral-storage")
        if limit is None:
            continue
        on_target = [v for v in variants if v.target == target.key]
        compiles = any(v.runtime in _INDUCTOR_BUILDS for v in on_target)
        downloads = {
            name: size
            for name in {v.model for v in on_target}
            if (size := _downloads(workflow.models[indexes[name]])) > 0
        }
        if not downloads and not replayed and not compiles:
            continue
        per_pod = workflow.scheduling.variants_per_pod
        largest = sorted(downloads, key=lambda name: (-downloads[name], name))[:per_pod]
        need = tmp_bytes([[*largest, *replayed]], {**downloads, **replayed})
        if need <= parse_quantity(limit):
            continue
        if not largest and replayed:
            yield Finding(
                ("benchmark", "recorded_inputs", "size" if recorded and recorded.size else "url"),
                f"the recorded inputs need {_gib(need)} of /tmp with torch's caches, more "
                f"than target {target.key!r}'s ephemeral-storage limit of {limit}",
                "raise the target's ephemeral-storage limit, or give the recording's size",
            )
            continue
        if not largest:
            yield Finding(
                ("targets", target_index, "resources", "limits", "ephemeral-storage"),
                f"target {target.key!r} compiles variants with inductor, which needs "
                f"{_gib(need)} of /tmp for its generated code, headers and kernels (and "
                f"torch's caches), more than the target's ephemeral-storage limit of {limit}",
                f"raise the limit to at least {quantity(need)}, or run the target's variants "
                "eager (runtime: eager); a pod over its limit is evicted",
            )
            continue
        first = workflow.models[indexes[largest[0]]]
        together = f" (with {', '.join(largest[1:])} in one pod)" if len(largest) > 1 else ""
        yield Finding(
            ("models", indexes[first.name], "size" if first.size is not None else "url"),
            f"model {first.name}{together} needs {_gib(need)} of /tmp "
            f"({_gib(need - TMP_BASE_BYTES)} of downloads, {_gib(TMP_BASE_BYTES)} for torch's "
            "caches), more than target "
            f"{target.key!r}'s ephemeral-storage limit of {limit}",
            "raise the target's ephemeral-storage limit"
            + (", or lower scheduling.variants_per_pod" if len(largest) > 1 else "")
            + ("" if first.size is not None else "; a url model without a size may be 1Gi"),
        )


def _downloads(model: ModelSpec) -> int:
    """What a pod downloads of `model`: its program's bytes and its stages'."""
    return sum(program.download_bytes for program in model.programs().values())


def _gib(count: int) -> str:
    return f"{count / (1 << 30):.1f} GiB"
