"""The workflow spec language: one benchmark workflow per YAML file under `specs/workflows/`.

The models validate structure and each field on its own; facts that need the fleet config or
the repository (does the cluster exist, does the model file fit a ConfigMap) come through the
validation context as a `SpecContext`. Rules that relate fields to each other (is bf16
supported on every target the sweep reaches) live in `synth.checks`, which reports each
problem at the field that causes it.
"""

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Annotated, ClassVar, Final, Literal, Self, TypeVar

from pydantic import (
    BeforeValidator,
    Field,
    GetJsonSchemaHandler,
    ModelWrapValidatorHandler,
    StrictBool,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

from contract.accuracy import AccuracyGate
from contract.config import (
    DEFAULT_DOWNLOAD_BYTES,
    MAX_RATE_HZ,
    MAX_VARIANTS_PER_POD,
    MODEL_SOURCES,
    OCI_DEFAULT_FILE,
    RECORDED_INPUTS_KEY,
    STAGES,
    ModelSource,
    ScenarioConfig,
    Stage,
    Tail,
    program_name,
    tail_iterations,
)
from contract.layout import GPU_RESOURCE, KUSTOMIZATION_FILE, WORKLOADS
from contract.params import Params
from contract.quantity import parse_quantity
from contract.recorded import RecordedContents
from contract.variant import SPELLINGS, Precision, Quantization, Runtime
from contract.weights import LayerRecord
from synth.base import SpecModel
from synth.catalogue import DEVICE_TYPES, RESOURCE_PRESETS
from synth.fields import (
    ClusterName,
    Count,
    Duration,
    EnvironmentName,
    HttpsUrl,
    ImageRef,
    ModelName,
    ObjectName,
    PinnedImageRef,
    Quantity,
    Sha256,
    TargetName,
    WorkflowId,
)
from synth.fleet import DeviceTypeName, Fleet
from synth.hints import SpecError, unknown, with_problems
from synth.limits import (
    MAX_CA_BUNDLE_BYTES,
    MAX_DESCRIPTION_CHARS,
    MAX_MODEL_BYTES,
    MAX_MODELS,
    MAX_OWNER_CHARS,
    MAX_PATH_CHARS,
    MAX_REPEATS,
    MAX_VARIANTS_CEILING,
    MIN_SCHEDULE_PERIOD_SECONDS,
)
from synth.modelfiles import ModelFiles
from synth.object_budget import CONFIGMAP_DATA_BYTES
from synth.repo_files import Missing, RepoFileError, TooLarge
from synth.resource_checks import resource_problems
from synth.texts import Text

RESERVED_WORKFLOW_IDS: Final = frozenset({PurePosixPath(KUSTOMIZATION_FILE).stem})
"""A workflow's file is dist/<cluster>/workloads/<id>.yaml; these ids would name a file
synth writes there for itself."""


@dataclass(frozen=True)
class SpecContext:
    """What validation may consult beyond the file itself."""

    fleet: Fleet
    model_files: ModelFiles
    """The repository's model files, named relative to its root; read once for the render."""


def _context(info: ValidationInfo) -> SpecContext | None:
    context = info.context
    return context if isinstance(context, SpecContext) else None


# References to the fleet are looked up before their names' own checks: `priority: High`
# is a known class in the wrong case, and saying so (did you mean 'high'?) helps more than
# saying that upper case is not DNS-label safe.


def _check_known_cluster(name: object, info: ValidationInfo) -> object:
    context = _context(info)
    if context is not None and isinstance(name, str):
        known = [cluster.name for cluster in context.fleet.clusters]
        if name not in known:
            raise unknown("cluster", name, known, where="in specs/clusters.yaml")
    return name


KnownCluster = Annotated[ClusterName, BeforeValidator(_check_known_cluster)]


def _spelled(value: object) -> object:
    return SPELLINGS.get(value, value) if isinstance(value, str) else value


QuantizationName = Annotated[
    Quantization,
    BeforeValidator(
        _spelled,
        json_schema_input_type=Quantization | Literal[tuple(SPELLINGS)],
    ),
]
"""A quantization, also as the design note spells it (`int4`); variants carry the name."""


class InputSpec(SpecModel):
    """One input tensor of the model, described per sample (without the batch dimension)."""

    shape: list[Count] = Field(min_length=1, max_length=8)
    """Sizes of one sample, e.g. [3, 224, 224] for an image; the batch size is prepended."""
    dtype: Literal["float32", "float16", "bfloat16", "int64", "int32", "uint8", "bool"] = "float32"
    """The dtype the model was exported with; float inputs follow the variant's precision."""


class AccuracyGateSpec(AccuracyGate, SpecModel):
    """Thresholds on how far a variant's outputs may be from the untouched program's fp32
    outputs on the same inputs (docs/runner.md, "Accuracy"). Each threshold given replaces
    that threshold's default, which depends on the variant's precision and quantization
    (docs/specs.md lists them); those left out keep theirs. A variant outside its gate is
    measured and stored, flagged `accuracy_failed`, and never ranked best. The gate judges
    stored numbers: editing it re-runs nothing and renames no Job."""


class LayersSpec(LayerRecord, SpecModel):
    """What `benchfleet export` and `make push-model` read of the model's program, printed as
    its `layers:` line: its Linear layers by weight shape and its parameters. synth judges
    each quantized variant by it where it cannot read the model itself (`url`, `oci`,
    `image_path`): one that would find no layer its kernel takes is refused here, not in its
    pod. A committed `file`'s must be the file's own, and the runner refuses a program whose
    layers are not those recorded."""


class ProgramSpec(SpecModel):
    """A file the pods are given, from exactly one source: a `torch.export` program
    (`.pt2`), a model's or a stage's run around it, or recorded inputs' `.safetensors`
    (RecordedInputsSpec). Every source is written here once, for all of them; the runner
    reaches and checks each file alike (runner/loading.py)."""

    _kind: ClassVar[str] = "a program"
    _what: ClassVar[str] = "model"
    _suffix: ClassVar[str] = ".pt2"
    _archive: ClassVar[str] = "torch.export archive"
    oci_default: ClassVar[str] = OCI_DEFAULT_FILE
    """The file's path inside an `oci` artifact that names none."""
    _missing_hint: ClassVar[str] = "run `make models` to build the example models"
    _wrong_suffix_hint: ClassVar[str] = (
        "export the model with torch.export.save(); pickled modules are not loaded "
        "because unpickling runs arbitrary code"
    )

    file: str | None = None
    """A file committed to this repository, relative to its root (a model's `.pt2`, a
    recording's `.safetensors`). It travels to the pod in a ConfigMap, so it must fit in
    1 MiB."""
    image_path: Annotated[str, Text("image_path", MAX_PATH_CHARS, one_line=True)] | None = None
    """An absolute path to the file baked into the runner image, for files too big for a
    ConfigMap. Needs `sha256`."""
    url: HttpsUrl | None = None
    """An https URL (port 443, no credentials) the runner downloads the file from. Needs
    `sha256`, which is what guards the download: the workflow's pods get egress to DNS and to
    port 443 anywhere, since a NetworkPolicy cannot name hosts."""
    oci: PinnedImageRef | None = None
    """An OCI artifact holding the file, by digest (`registry/repository@sha256:...`, as
    `make push-model` prints it; no credentials: the nodes pull with theirs): the node pulls
    it and mounts it read-only into the pod as an image volume, which needs Kubernetes 1.35
    or newer (each cluster's `kubernetes_version`). Needs `sha256`, the file's own
    digest."""
    oci_file: Annotated[str, Text("oci_file", MAX_PATH_CHARS, one_line=True)] | None = None
    """The file's path inside the `oci` artifact, for an artifact holding several files;
    default `model.pt2` (where `make push-model` packs a model), for a recording
    `recorded-inputs.safetensors`."""
    sha256: Sha256 | None = None
    """The expected digest of the file. Required for `image_path`, `url` and `oci`; optional
    for `file`, where it pins the committed bytes."""
    size: Quantity | None = None
    """For a `url` file: the most bytes its download may hold, as a number of bytes or a
    quantity such as `440M` or `1.5Gi` (the file's size, or a little more). The runner stops
    a download that grows past it, and synth sizes the pod's /tmp for it and checks that
    against the target's `ephemeral-storage` limit. Default: 1Gi."""
    download_budget: Duration | None = None
    """For a `url` file: how long its download may take in all, retries included, e.g.
    `45m`. Default: 30m."""
    ca_bundle: Annotated[str, Text("ca_bundle", MAX_PATH_CHARS, one_line=True)] | None = None
    """For a `url` file: a PEM file of CA certificates in this repository (relative to its
    root) that the download trusts besides the runner image's own CAs, where the file's
    server has a certificate from your company's CA. Default: the fleet's `ca_bundle`."""

    @field_validator("file")
    @classmethod
    def _file_fits_a_configmap(cls, file: str | None, info: ValidationInfo) -> str | None:
        context = _context(info)
        if file is None or context is None:
            return file
        if PurePosixPath(file).suffix != cls._suffix:
            raise SpecError(f"{file!r} is not a {cls._suffix} file", cls._wrong_suffix_hint)
        try:
            context.model_files.read(file)
        except Missing:
            raise SpecError(
                f"{cls._what} file {file!r} does not exist",
                f"paths are relative to the repository root; {cls._missing_hint}",
            ) from None
        except TooLarge as error:
            raise SpecError(
                f"{cls._what} file {file!r} is {error.size:,} bytes; a ConfigMap holds at most "
                f"{CONFIGMAP_DATA_BYTES:,} bytes (1 MiB)",
                "push it as an OCI artifact (`make push-model`) and use oci + sha256, or serve "
                "it over https and use url + sha256",
            ) from None
        except RepoFileError as error:
            raise SpecError(
                error.message,
                error.hint or f"for a {cls._what} baked into the image, use image_path instead",
            ) from None
        return file

    @field_validator("ca_bundle")
    @classmethod
    def _ca_bundle_is_pem(cls, file: str | None, info: ValidationInfo) -> str | None:
        context = _context(info)
        if file is not None and context is not None:
            check_ca_bundle_file(context.model_files, file)
        return file

    @field_validator("size")
    @classmethod
    def _size_is_whole_bytes(cls, size: str | None) -> str | None:
        if size is not None:
            model_bytes(size)
        return size

    @field_validator("download_budget")
    @classmethod
    def _budget_is_positive(cls, budget: float | None) -> float | None:
        if budget is not None and budget < 1:
            raise SpecError("download_budget must be at least 1 second")
        return budget

    @model_validator(mode="wrap")
    @classmethod
    def _download_fields_on_url_models(
        cls, data: object, handler: ModelWrapValidatorHandler[Self]
    ) -> Self:
        found: list[tuple[tuple[str | int, ...], SpecError]] = []
        if isinstance(data, Mapping) and data.get("url") is None:
            found = [
                (
                    (key,),
                    SpecError(
                        f"{key} applies to a {cls._what} downloaded from its url",
                        f"remove {key}: a file or image_path {cls._what} is not downloaded",
                    ),
                )
                for key in _DOWNLOAD_KEYS
                if data.get(key) is not None
            ]
        return with_problems(handler, data, found)

    @field_validator("image_path")
    @classmethod
    def _image_path_is_absolute(cls, image_path: str | None) -> str | None:
        if image_path is not None and not image_path.startswith("/"):
            raise SpecError(
                f"image_path {image_path!r} must be absolute: it is a path inside the image",
                "e.g. /opt/models/llama.pt2",
            )
        return image_path

    @field_validator("oci_file")
    @classmethod
    def _oci_file_is_inside(cls, oci_file: str | None) -> str | None:
        if oci_file is None:
            return None
        parts = oci_file.split("/")
        if oci_file.startswith("/") or any(part in ("", ".", "..") for part in parts):
            raise SpecError(
                f"oci_file {oci_file!r} must be a plain relative path inside the artifact",
                f"e.g. {OCI_DEFAULT_FILE} or weights/resnet50.pt2: no leading '/', no '.' or "
                "'..', no empty parts",
            )
        if PurePosixPath(oci_file).suffix != cls._suffix:
            raise SpecError(
                f"oci_file {oci_file!r} is not a {cls._suffix} file",
                f"name the {cls._archive} inside the artifact",
            )
        return oci_file

    @model_validator(mode="after")
    def _exactly_one_source(self) -> Self:
        sources = [key for key in MODEL_SOURCES if getattr(self, key) is not None]
        what, suffix = self._what, self._suffix
        if len(sources) != 1:
            found = ", ".join(sources) if sources else "none"
            raise SpecError(
                f"{self._kind} needs exactly one of file, image_path, url or oci (found: {found})",
                f"file for a committed {suffix} up to 1 MiB; oci, url or image_path with "
                "sha256 for larger ones",
            )
        if self.oci_file is not None and sources[0] != "oci":
            raise SpecError(
                f"oci_file names a file inside an oci artifact; this {what} has none",
                f"remove oci_file, or give the {what}'s artifact as oci",
            )
        if sources[0] != "file" and self.sha256 is None:
            raise SpecError(
                f"{self._kind} from {sources[0]} needs sha256",
                "the runner verifies the digest before loading; compute it with "
                f"`sha256sum {what.replace(' ', '-')}{suffix}`"
                + (" (`make push-model` prints it)" if sources[0] == "oci" else ""),
            )
        return self

    @property
    def source(self) -> ModelSource:
        """Which of the sources this file comes from."""
        return next(key for key in MODEL_SOURCES if getattr(self, key) is not None)

    def trusted_bundle(self, fleet: Fleet) -> str | None:
        """The CA bundle this file's download trusts: its own, else the fleet's; None for
        a file that is not downloaded."""
        return (self.ca_bundle or fleet.ca_bundle) if self.url is not None else None

    @property
    def download_bytes(self) -> int:
        """What the pod's /tmp must hold of this file: its `size` for a url file (the
        default bound without one), nothing for the others."""
        if self.url is None:
            return 0
        return model_bytes(self.size) if self.size is not None else DEFAULT_DOWNLOAD_BYTES


class StageSpec(ProgramSpec):
    """A program run around a model on every query (`preprocess` before it, `postprocess`
    after it), delivered like a model. Only the model is cast, quantized and compiled."""

    _kind: ClassVar[str] = "a stage"
    inputs: list[InputSpec] | None = Field(default=None, min_length=1)
    """What the program takes per sample, as `benchfleet export` prints it: synth checks it
    against the stage before (for `preprocess`, the model entry's `inputs`)."""
    outputs: list[InputSpec] | None = Field(default=None, min_length=1)
    """What the program returns per sample, as `benchfleet export` prints it: synth checks a
    preprocess's against the model's committed file."""


class ModelSpec(ProgramSpec):
    """A model to benchmark: a `torch.export` program (`.pt2`) from exactly one source, and
    the stages run around it, if any."""

    _kind: ClassVar[str] = "a model"
    name: ModelName
    """Names the model in results and in Kubernetes object names."""
    inputs: list[InputSpec] | None = Field(default=None, min_length=1)
    """This model's inputs, where they differ from `benchmark.inputs`; with a `preprocess`,
    the chain's: what the preprocess takes."""
    accuracy: AccuracyGateSpec | None = None
    """This model's accuracy thresholds, over `benchmark.accuracy`'s (each one given replaces
    that threshold, the others stay)."""
    family: ModelName | None = None
    """The family this program is a member of: several exported programs of one policy or
    network, each at other `params`, which the report compares along each param, only within
    the family (e.g. `pi0-small`)."""
    params: Params | None = None
    """The program's parameters within its `family`, the knobs a team trades against rate,
    e.g. `{action_chunk: 8, denoise_steps: 10}`: whole numbers, numbers or short words, up to
    8. Every member of a family names the same params, each member at other values."""
    layers: LayersSpec | None = None
    """The program's layers, as `benchfleet export` or `make push-model` prints them, e.g.
    `{linear: {1000x2048: 1}, parameters: 25557032}`. Without it, whether a quantization can
    reach a `url`, `oci` or `image_path` model's layers is known only in its pod (`make plan`
    and `benchfleet validate` say so)."""
    preprocess: StageSpec | None = None
    """A program run on each query's inputs before the model (an image's normalisation, an
    observation's packing): the runner times it, the model and the postprocess per query, and
    the chain's latency is the variant's."""
    postprocess: StageSpec | None = None
    """A program run on the model's outputs (an argmax, actions clamped to joint limits)."""

    def stages(self) -> dict[Stage, StageSpec]:
        """The stages this model runs between, by name, in the order they run."""
        found = {stage: getattr(self, stage) for stage in STAGES}
        return {stage: spec for stage, spec in found.items() if spec is not None}

    def programs(self) -> dict[str, ProgramSpec]:
        """The programs this entry names, its own and its stages', by `program_name`."""
        stages = self.stages().items()
        return {self.name: self, **{program_name(self.name, s): p for s, p in stages}}


class RecordedContentsSpec(RecordedContents, SpecModel):
    """What a recording holds (`contract/recorded.py`): its samples' count, and each input's
    shape per sample and dtype, by the program's name for the input."""


class RecordedInputsSpec(ProgramSpec):
    """Recorded inputs that every variant replays instead of drawn ones: a `.safetensors`
    file of samples named `<input name>.<sample>` (docs/specs.md, "Recorded inputs"),
    delivered as a model is, from exactly one source."""

    _suffix: ClassVar[str] = ".safetensors"
    _kind: ClassVar[str] = "a recording"
    _what: ClassVar[str] = "recording"
    _archive: ClassVar[str] = "safetensors file"
    oci_default: ClassVar[str] = "recorded-inputs.safetensors"
    _missing_hint: ClassVar[str] = "record it as docs/policies.md shows"
    _wrong_suffix_hint: ClassVar[str] = (
        "save the recorded samples with safetensors (docs/policies.md): a pickle is not read"
    )

    contents: RecordedContentsSpec | None = None
    """What the file holds, e.g. `{samples: 300, inputs: {obs_image: {shape: [3, 224, 224],
    dtype: float32}}}`: where synth cannot read the file (`url`, `oci`, `image_path`), it
    holds the models' inputs to this instead, and the runner refuses a file that holds other
    contents. A committed `file`'s must be the file's own."""


_DOWNLOAD_KEYS: Final = ("size", "download_budget", "ca_bundle")


def model_bytes(size: str) -> int:
    """A model's `size` in bytes; SpecError unless whole bytes within MAX_MODEL_BYTES."""
    count = parse_quantity(size)
    if count != count.to_integral_value():
        raise SpecError(f"size {size} is not a whole number of bytes", "e.g. 440M, 1.5Gi")
    if count > MAX_MODEL_BYTES:
        raise SpecError(
            f"size {size} is more than {MAX_MODEL_BYTES // 1024**3} GiB",
            "the runner runs a model on one device, and no GPU holds more; check the unit "
            "(M is 10^6 bytes, Mi 2^20)",
        )
    return int(count)


def check_ca_bundle_file(files: ModelFiles, file: str) -> None:
    """Raise SpecError unless `file` is a committed PEM bundle of certificates."""
    try:
        files.ca_bundle(file)
    except Missing:
        raise SpecError(
            f"CA bundle {file!r} does not exist",
            "paths are relative to the repository root; commit the CA's certificate (PEM)",
        ) from None
    except TooLarge as error:
        raise SpecError(
            f"CA bundle {file!r} is {error.size:,} bytes; at most {MAX_CA_BUNDLE_BYTES:,} "
            "are allowed",
            "a bundle needs your company's CA certificates only: the image trusts the public "
            "CAs already",
        ) from None
    except RepoFileError as error:
        raise SpecError(error.message, error.hint) from None


class Phase(SpecModel):
    """A run of iterations that stops once BOTH minimums are met, or at EITHER maximum.

    This is MLPerf LoadGen's rule: a count alone is too short on a fast model, a duration alone
    too few samples on a slow one.
    """

    min_iterations: StrictInt = Field(ge=0)
    """Run at least this many iterations."""
    min_time: Duration
    """And for at least this long."""
    max_iterations: StrictInt = Field(ge=1)
    """Stop after this many iterations, even if min_time has not passed."""
    max_time: Duration
    """Stop after this long, even if min_iterations have not run."""

    @field_validator("max_iterations")
    @classmethod
    def _max_iterations_not_below_min(cls, value: int, info: ValidationInfo) -> int:
        minimum = info.data.get("min_iterations")
        if minimum is not None and value < minimum:
            raise SpecError(f"max_iterations ({value}) is below min_iterations ({minimum})")
        return value

    @field_validator("max_time")
    @classmethod
    def _max_time_not_below_min(cls, value: float, info: ValidationInfo) -> float:
        minimum = info.data.get("min_time")
        if minimum is not None and value < minimum:
            raise SpecError(f"max_time ({value:g}s) is below min_time ({minimum:g}s)")
        if value == 0:
            raise SpecError("max_time must be more than 0 seconds")
        return value


class WarmupPhase(Phase):
    """Untimed iterations before measuring, to fill caches and trigger lazy initialisation."""

    min_iterations: StrictInt = Field(default=10, ge=0)
    """Run at least this many iterations."""
    min_time: Duration = 1.0
    """And for at least this long."""
    max_iterations: StrictInt = Field(default=10_000, ge=1)
    """Stop after this many iterations, even if min_time has not passed."""
    max_time: Duration = 60.0
    """Stop after this long, even if min_iterations have not run."""


class MeasurePhase(Phase):
    """The timed iterations; every one is recorded."""

    min_iterations: StrictInt = Field(default=100, ge=1)
    """Run at least this many iterations."""
    min_time: Duration = 5.0
    """And for at least this long."""
    max_iterations: StrictInt = Field(default=1_000_000, ge=1)
    """Stop after this many iterations, even if min_time has not passed."""
    max_time: Duration = 300.0
    """Stop after this long, even if min_iterations have not run."""
    tail: Tail | None = None
    """A tail percentile to make reliable (p90, p95, p99 or p99.9): run on until 10
    iterations lie beyond it (p99: 1000, p99.9: 10,000), within the maximums; the result
    says if a maximum came first."""

    @field_validator("tail")
    @classmethod
    def _tail_within_maximum(cls, tail: Tail | None, info: ValidationInfo) -> Tail | None:
        return _tail_fits(tail, info.data.get("max_iterations"))


def _tail_fits(tail: Tail | None, maximum: int | None) -> Tail | None:
    """`tail`, refused where `maximum` iterations cannot make it reliable."""
    if tail is not None and maximum is not None and maximum < tail_iterations(tail):
        raise SpecError(
            f"{tail} needs {tail_iterations(tail)} iterations to be reliable; "
            f"max_iterations is {maximum}",
            f"raise max_iterations to {tail_iterations(tail)}, or ask for a lower tail",
        )
    return tail


class Benchmark(SpecModel):
    """What each variant feeds the model, in which format, and how long it measures."""

    inputs: list[InputSpec] | None = Field(default=None, min_length=1)
    """The model's inputs, per sample. Models may override them."""
    input_shape: list[Count] | None = Field(default=None, min_length=2, max_length=9)
    """The design note's form: one input's full shape, batch first, e.g. [1, 3, 224, 224].
    Shorthand for `inputs: [{shape: [3, 224, 224]}]` and `batch_size: 1`."""
    batch_size: Count | None = None
    """Samples per iteration; sweep it with `sweep.matrix.batch_size`. Default 1."""
    precision: Precision = Precision.FP32
    """The numeric format of variants that do not sweep it."""
    quantization: QuantizationName = Quantization.NONE
    """The quantization of variants that do not sweep it."""
    runtime: Runtime = Runtime.EAGER
    """What runs the model of variants that do not sweep it: `eager`, torch calling the
    loaded program's module; `inductor`, that module compiled with `torch.compile` in the
    pod; `aotinductor`, the program compiled ahead of time into a package and loaded from
    it; `onnxruntime`, the program exported to ONNX and run by an ONNX Runtime session;
    `tensorrt`, Torch-TensorRT engines (GPU only). Each is built in the pod from the
    verified program, timed apart (`conversion_s`), and held to the same accuracy gate."""
    warmup: WarmupPhase = Field(default_factory=WarmupPhase)
    """Untimed iterations first, to fill caches and trigger lazy initialisation."""
    measure: MeasurePhase = Field(default_factory=MeasurePhase)
    """The timed iterations."""
    repeats: StrictInt = Field(default=1, ge=1, le=MAX_REPEATS)
    """Run every variant this many times, each in a pod of its own (on separate nodes where
    the cluster has enough), so the report can state the between-run noise and judge a
    change against it."""
    iterations: Count | None = None
    """The design note's form of `measure.min_iterations`."""
    tail: Tail | None = None
    """The short form of `measure.tail` (issue #33's name): a tail percentile to make
    reliable, p90, p95, p99 or p99.9."""
    warmup_iterations: Annotated[StrictInt, Field(ge=0)] | None = None
    """The design note's form of `warmup.min_iterations`."""
    accuracy: AccuracyGateSpec | None = None
    """Accuracy thresholds for every variant, over the defaults of its precision and
    quantization; `models[i].accuracy` overrides them per model."""
    recorded_inputs: RecordedInputsSpec | None = None
    """Recorded inputs to replay, in order and wrapping, instead of drawn ones: a
    `.safetensors` file of real samples, delivered like a model (`file`, `url`, `oci`,
    `image_path`, with `sha256`). It must hold every model's inputs by name, in the dtypes
    `inputs` gives; the accuracy pass compares outputs on these samples too, and results
    carry the file's sha256."""
    scenario: Literal["single_stream", "fixed_rate"] = "single_stream"
    """How queries arrive. `single_stream`: the closed loop, each iteration as soon as the
    last one ends. `fixed_rate`: one query every 1 / `rate_hz` seconds on a clock, open
    loop (a late query delays none of the next arrivals; its queueing counts in its
    latency), each missed when it ends later than `deadline` after its arrival; the
    measure phase's counts are then queries (docs/runner.md)."""
    rate_hz: Annotated[float, Field(gt=0)] | None = None
    """`fixed_rate`: queries per second, at most 1000 (contract.config.MAX_RATE_HZ)."""
    deadline: Duration | None = None
    """`fixed_rate`: how long after its scheduled arrival a query may end; default one
    period (1 / rate_hz)."""
    interleave: StrictBool = False
    """Measure the variants of one model that share a pod (`scheduling.variants_per_pod`
    above 1) in alternating rounds, A B B A, within the measure phase's bounds, so their
    comparison is paired: same node, same moments. Each result keeps its median of every
    round, and the report compares any two of them round by round, with a 95 % interval,
    also across `repeats` (docs/runner.md; the report's pairing: docs/report.md)."""

    @field_validator("rate_hz")
    @classmethod
    def _rate_the_runner_can_issue(cls, rate: float | None) -> float | None:
        if rate is not None and rate > MAX_RATE_HZ:
            raise SpecError(
                f"rate_hz {rate:g} is above the {MAX_RATE_HZ:g} Hz the runner's issue clock "
                "can keep (its error would be a large share of the period)",
                f"ask for at most {MAX_RATE_HZ:g} Hz, or batch the queries (batch_size)",
            )
        return rate

    @field_validator("iterations")
    @classmethod
    def _iterations_within_measure(cls, value: int | None, info: ValidationInfo) -> int | None:
        return _legacy_minimum(value, info.data.get("measure"), "iterations", "measure")

    @field_validator("tail")
    @classmethod
    def _tail_within_measure(cls, value: Tail | None, info: ValidationInfo) -> Tail | None:
        measure = info.data.get("measure")
        if isinstance(measure, MeasurePhase):
            _tail_fits(value, measure.max_iterations)
        return value

    @field_validator("warmup_iterations")
    @classmethod
    def _warmup_iterations_within_warmup(
        cls, value: int | None, info: ValidationInfo
    ) -> int | None:
        return _legacy_minimum(value, info.data.get("warmup"), "warmup_iterations", "warmup")

    @model_validator(mode="wrap")
    @classmethod
    def _one_form_each(cls, data: object, handler: ModelWrapValidatorHandler[Self]) -> Self:
        # Checked as written, so that each is said beside the fields' own mistakes.
        data, renamed = _without_compile(data)
        return with_problems(
            handler, data, [*renamed, *(((), error) for error in _two_forms(data))]
        )

    @property
    def default_inputs(self) -> list[InputSpec] | None:
        """The inputs of models that name none, whichever form the spec used."""
        if self.input_shape is not None:
            return [InputSpec(shape=self.input_shape[1:])]
        return self.inputs

    @property
    def default_batch_size(self) -> int:
        """The batch size of variants that do not sweep it."""
        if self.input_shape is not None:
            return self.input_shape[0]
        return self.batch_size or 1

    @property
    def scenario_config(self) -> ScenarioConfig | None:
        """config.json's fixed-rate scenario; None for the closed loop (or a fixed rate
        without its rate, which checks.py reports)."""
        if self.scenario != "fixed_rate" or self.rate_hz is None:
            return None
        deadline = self.deadline if self.deadline is not None else 1 / self.rate_hz
        return ScenarioConfig(rate_hz=self.rate_hz, deadline_s=deadline)

    @property
    def measure_min_s(self) -> float:
        """The shortest the measure phase can be: its min_time, and for a fixed rate the
        time its minimum count of queries (the tail's included) takes to arrive."""
        phase = self.measure_phase
        if self.scenario != "fixed_rate" or self.rate_hz is None:
            return phase.min_time
        least = max(phase.min_iterations, tail_iterations(phase.tail) if phase.tail else 0)
        return max(phase.min_time, least / self.rate_hz)

    @property
    def warmup_phase(self) -> WarmupPhase:
        """`warmup` with the design note's `warmup_iterations` applied."""
        return _with_minimum(self.warmup, self.warmup_iterations)

    @property
    def measure_phase(self) -> MeasurePhase:
        """`measure` with the design note's `iterations` and the short `tail` applied."""
        phase = _with_minimum(self.measure, self.iterations)
        return phase if self.tail is None else phase.model_copy(update={"tail": self.tail})


PhaseT = TypeVar("PhaseT", bound=Phase)


_Validated = TypeVar("_Validated")


def _without_compile(data: object) -> tuple[object, list[tuple[tuple[str | int, ...], SpecError]]]:
    """`data` without a `compile` key, and the problem that names its new one: the runtime
    axis took over the compile setting, and a spec says it one way (docs/decisions/runtime.md)."""
    if not isinstance(data, Mapping) or "compile" not in data:
        return data, []
    rest = {key: value for key, value in data.items() if key != "compile"}
    return rest, [
        (
            ("compile",),
            SpecError(
                "compile is now runtime (eager and inductor kept their names)",
                "rename the key to runtime: the same variants, with the same ids and Job names",
            ),
        )
    ]


def _runtime_not_compile(data: object, handler: Callable[[object], _Validated]) -> _Validated:
    data, renamed = _without_compile(data)
    return with_problems(handler, data, renamed)


def _two_forms(data: object) -> Iterator[SpecError]:
    """Each setting a benchmark gives in two forms (the design note's and ours)."""
    if not isinstance(data, Mapping):
        return

    def given(key: str, within: str | None = None) -> bool:
        value = data.get(within) if within else data
        return isinstance(value, Mapping) and value.get(key) is not None

    if given("input_shape") and given("inputs"):
        yield SpecError(
            "give either input_shape (batch first) or inputs (per sample), not both",
            "input_shape: [8, 3, 224, 224] is the same as inputs: [{shape: [3, 224, 224]}] "
            "with batch_size: 8",
        )
    if given("input_shape") and given("batch_size"):
        yield SpecError(
            "input_shape already sets the batch size (its first number); remove batch_size",
            "or write inputs: [{shape: ...}] without the batch dimension, plus batch_size",
        )
    for count, phase in (("iterations", "measure"), ("warmup_iterations", "warmup")):
        if given(count) and given("min_iterations", within=phase):
            yield SpecError(
                f"{count} and {phase}.min_iterations say the same thing", "keep one of them"
            )
    if given("tail") and given("tail", within="measure"):
        yield SpecError("tail and measure.tail say the same thing", "keep one of them")


def _legacy_minimum(value: int | None, phase: object, name: str, phase_name: str) -> int | None:
    """The design note's minimum count, refused where it exceeds a maximum the spec set: the
    maximum would otherwise be raised behind the author's back (a default maximum is)."""
    if (
        value is not None
        and isinstance(phase, Phase)
        and "max_iterations" in phase.model_fields_set
        and value > phase.max_iterations
    ):
        raise SpecError(
            f"{name} ({value}) is above {phase_name}.max_iterations ({phase.max_iterations})",
            f"lower {name}, or raise {phase_name}.max_iterations",
        )
    return value


def _with_minimum(phase: PhaseT, minimum: int | None) -> PhaseT:
    """`phase` with the design note's minimum count, its default maximum raised to meet it."""
    if minimum is None:
        return phase
    return phase.model_copy(
        update={"min_iterations": minimum, "max_iterations": max(phase.max_iterations, minimum)}
    )


class Resources(SpecModel):
    """Container requests and limits. CPU and memory need both; the GPU count comes from
    `gpu_count`."""

    requests: dict[str, Quantity]
    """Guaranteed to the pod by the scheduler."""
    limits: dict[str, Quantity]
    """The most the pod may use. The runner sizes its thread pool from the CPU limit."""

    @model_validator(mode="wrap")
    @classmethod
    def _every_problem(cls, data: object, handler: ModelWrapValidatorHandler[Self]) -> Self:
        return with_problems(handler, data, list(resource_problems(data)))


def _resources_from_preset(value: object) -> object:
    if not isinstance(value, str):
        return value
    preset = RESOURCE_PRESETS.get(value)
    if preset is None:
        raise unknown("resource preset", value, RESOURCE_PRESETS)
    return {"requests": dict(preset.requests), "limits": dict(preset.limits)}


class _OrPresetName:
    """Lets editors offer the preset names where a Resources mapping is expected."""

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        presets = {"type": "string", "enum": sorted(RESOURCE_PRESETS)}
        return {"anyOf": [presets, handler(schema)]}


class Target(SpecModel):
    """A hardware target: one device type, how many, and how big a pod."""

    name: TargetName | None = None
    """Names the target in results and Job names; defaults to the device type without its
    vendor, e.g. 'a100'."""
    gpu_type: DeviceTypeName
    """'cpu', or a GPU type from the catalogue."""
    gpu_count: StrictInt | None = Field(default=None, ge=1, le=16)
    """GPUs per pod (default 1 on GPU types; not allowed on 'cpu')."""
    resources: Annotated[Resources, _OrPresetName()] = Field(
        default_factory=lambda: Resources.model_validate(_resources_from_preset("small"))
    )
    """A preset name (small, large, guaranteed) or explicit requests and limits.
    Default: small."""
    spot: StrictBool = False
    """Run on spot nodes: cheaper, and preempted pods are retried without using up retries."""

    @field_validator("resources", mode="before")
    @classmethod
    def _preset_to_resources(cls, value: object) -> object:
        return _resources_from_preset(value)

    @field_validator("gpu_count")
    @classmethod
    def _gpu_count_only_on_gpus(cls, count: int | None, info: ValidationInfo) -> int | None:
        device = DEVICE_TYPES.get(info.data.get("gpu_type", ""))
        if count is not None and device is not None and not device.is_gpu:
            raise SpecError("gpu_count on a 'cpu' target", "remove gpu_count, or choose a GPU type")
        return count

    @field_validator("resources")
    @classmethod
    def _gpu_resource_matches_count(cls, resources: Resources, info: ValidationInfo) -> Resources:
        listed = resources.limits.get(GPU_RESOURCE) or resources.requests.get(GPU_RESOURCE)
        if listed is None:
            return resources
        device = DEVICE_TYPES.get(info.data.get("gpu_type", ""))
        count = info.data.get("gpu_count") or 1
        if device is not None and not device.is_gpu:
            raise SpecError(f"{GPU_RESOURCE} requested on a 'cpu' target")
        if parse_quantity(listed) != count:
            raise SpecError(
                f"{GPU_RESOURCE} is {listed} here but gpu_count is {count}",
                f"leave {GPU_RESOURCE} out of resources; synth derives it from gpu_count",
            )
        return resources

    @property
    def key(self) -> str:
        """The target's name as written, or derived from its device type."""
        return self.name or self.gpu_type.removeprefix("nvidia-")

    @property
    def gpus(self) -> int:
        """How many GPUs each pod gets (0 on CPU)."""
        if not DEVICE_TYPES[self.gpu_type].is_gpu:
            return 0
        return self.gpu_count or 1


class VariantSelector(SpecModel):
    """Picks variants by any of their dimensions; unset keys match everything."""

    model: ModelName | None = None
    """A model name."""
    target: TargetName | None = None
    """A target name."""
    precision: Precision | None = None
    """A precision."""
    quantization: QuantizationName | None = None
    """A quantization."""
    batch_size: Count | None = None
    """A batch size."""
    runtime: Runtime | None = None
    """What runs the model: eager, inductor, aotinductor, onnxruntime or tensorrt."""

    @model_validator(mode="wrap")
    @classmethod
    def _runtime_not_compile(cls, data: object, handler: ModelWrapValidatorHandler[Self]) -> Self:
        return _runtime_not_compile(data, handler)

    @model_validator(mode="after")
    def _selects_something(self) -> "VariantSelector":
        if not self.model_fields_set:
            raise SpecError(
                "an empty entry matches every variant",
                f"name at least one of {', '.join(VariantSelector.model_fields)}",
            )
        return self


class Matrix(SpecModel):
    """Dimensions to sweep; variants are every combination, in the order written."""

    precision: list[Precision] | None = Field(default=None, min_length=1)
    """Precisions to try."""
    quantization: list[QuantizationName] | None = Field(default=None, min_length=1)
    """Quantizations to try."""
    batch_size: list[Count] | None = Field(default=None, min_length=1)
    """Batch sizes to try."""
    runtime: list[Runtime] | None = Field(default=None, min_length=1)
    """Runtimes to compare (`[eager, inductor, aotinductor, onnxruntime]`): every other
    combination run in each."""

    @model_validator(mode="wrap")
    @classmethod
    def _runtime_not_compile(cls, data: object, handler: ModelWrapValidatorHandler[Self]) -> Self:
        return _runtime_not_compile(data, handler)

    @field_validator("*")
    @classmethod
    def _no_repeats(cls, values: list[object] | None, info: ValidationInfo) -> list[object] | None:
        if values is not None:
            repeated = sorted(str(v) for v, n in Counter(values).items() if n > 1)
            if repeated:
                raise SpecError(
                    f"{info.field_name} lists {', '.join(repeated)} more than once",
                    "each value makes a variant; a repeat would measure the same thing twice",
                )
        return values

    @model_validator(mode="after")
    def _not_empty(self) -> "Matrix":
        names = tuple(Matrix.model_fields)
        if not self.model_fields_set:
            raise SpecError(
                "the matrix sweeps nothing",
                f"list values for {', '.join(names[:-1])} or {names[-1]}",
            )
        return self


class Sweep(SpecModel):
    """A matrix of variants, like a CI matrix: every combination, minus `exclude`, plus
    `include`."""

    matrix: Matrix
    """The dimensions to combine."""
    exclude: list[VariantSelector] = Field(default_factory=list)
    """Combinations to skip, e.g. `{target: v100, precision: bf16}`."""
    include: list[VariantSelector] = Field(default_factory=list)
    """Extra variants beyond the matrix; unset dimensions take the benchmark's defaults, and
    an include runs on every model and target unless it names one."""


class Scheduling(SpecModel):
    """How the cluster runs the variants."""

    max_parallel: StrictInt = Field(default=10, ge=1, le=1000)
    """At most this many of the workflow's pods run at once in each cluster."""
    max_variants: StrictInt = Field(default=256, ge=1, le=MAX_VARIANTS_CEILING)
    """A guard against a matrix that grows by accident: more variants than this is an error."""
    priority: ObjectName | None = None
    """A priority class from specs/clusters.yaml (e.g. high, low); default: the fleet's."""
    retries: StrictInt = Field(default=2, ge=0, le=10)
    """Retries per variant after a failure (preemptions on spot nodes do not count)."""
    deadline: Duration = 6 * 3600.0
    """Wall-clock limit for the whole workflow in a cluster; pods still running then fail."""
    queue: ObjectName | None = None
    """A Kueue LocalQueue to submit to (synth creates it); the cluster must have `kueue`."""
    every: Duration | None = None
    """Run the workflow again every period (e.g. 24h; at least 1h, and at least the
    deadline): each run is started by a commit that `benchfleet schedule` makes (a scheduled
    CI job), once the period has begun and the last run is recorded. Each run is a new
    identity for its variants, so its results are kept beside the earlier runs' and none is
    reused; `collector report --trend` follows them (docs/specs.md)."""
    variants_per_pod: StrictInt = Field(default=1, ge=1, le=MAX_VARIANTS_PER_POD)
    """Variants one pod runs in sequence, in one process: the start-up (imports, CUDA, the
    first model load) is paid once per pod, not per variant. 1 keeps each variant alone,
    so an OOM kill or a crash loses only its own result; see docs/synth.md for the trade."""

    @field_validator("priority", mode="before")
    @classmethod
    def _known_priority(cls, name: object, info: ValidationInfo) -> object:
        context = _context(info)
        classes = context.fleet.priority_classes if context is not None else None
        if isinstance(name, str) and classes is not None and name not in classes:
            raise unknown("priority class", name, classes)
        return name

    @field_validator("deadline")
    @classmethod
    def _positive_deadline(cls, deadline: float) -> float:
        if deadline < 1:
            raise SpecError("deadline must be at least 1 second")
        return deadline

    @field_validator("every")
    @classmethod
    def _period_fits_a_run(cls, every: float | None, info: ValidationInfo) -> float | None:
        if every is None:
            return None
        if every != int(every) or every < MIN_SCHEDULE_PERIOD_SECONDS:
            raise SpecError(
                f"every must be a whole number of seconds, at least "
                f"{MIN_SCHEDULE_PERIOD_SECONDS // 3600}h",
                "each run is a commit and a set of records: e.g. 24h for a nightly run",
            )
        deadline = info.data.get("deadline")
        if deadline is not None and every < deadline:
            raise SpecError(
                f"every ({every:g}s) is shorter than the deadline ({deadline:g}s): a run could "
                "still be running when the next is due, and the next would wait for it",
                "lower scheduling.deadline or raise scheduling.every",
            )
        return every


class Workflow(SpecModel):
    """One benchmark workflow: models x targets x variants, measured the same way."""

    id: WorkflowId
    """Unique across all spec files; part of every Kubernetes name and label of the workflow."""
    description: Annotated[str, Text("description", MAX_DESCRIPTION_CHARS)]
    """What question the workflow answers."""
    owner: Annotated[str, Text("owner", MAX_OWNER_CHARS, one_line=True)]
    """Who to ask about it: a team or an e-mail address."""
    environment: EnvironmentName = "dev"
    """The environment (namespace `benchfleet-<environment>`) to run in."""
    clusters: list[KnownCluster] | None = Field(default=None, min_length=1)
    """Clusters to run in; default: every cluster in specs/clusters.yaml."""
    image: ImageRef | None = None
    """The runner image; default: the fleet's. Pin it by digest for reproducible numbers."""
    models: list[ModelSpec] = Field(min_length=1, max_length=MAX_MODELS)
    """The models to benchmark."""
    benchmark: Benchmark = Field(default_factory=Benchmark)
    """Inputs, numeric format and measurement bounds."""
    targets: list[Target] = Field(min_length=1)
    """The hardware to run on."""
    sweep: Sweep | None = None
    """Variants beyond one per model and target."""
    scheduling: Scheduling = Field(default_factory=Scheduling)
    """Parallelism, priority, retries and deadline."""

    @field_validator("id")
    @classmethod
    def _not_reserved(cls, workflow_id: str) -> str:
        if workflow_id in RESERVED_WORKFLOW_IDS:
            raise SpecError(
                f"workflow id {workflow_id!r} is reserved: its file would be "
                f"dist/<cluster>/{WORKLOADS}/{KUSTOMIZATION_FILE}, which synth writes to list "
                "the folder, and Flux would stop applying the cluster",
                "choose another id",
            )
        return workflow_id

    @field_validator("environment", mode="before")
    @classmethod
    def _known_environment(cls, name: object, info: ValidationInfo) -> object:
        context = _context(info)
        if isinstance(name, str) and context is not None and name not in context.fleet.environments:
            raise unknown("environment", name, context.fleet.environments)
        return name

    @property
    def delivered(self) -> dict[str, ProgramSpec]:
        """Every file the pods are given, by the name its delivery goes by: each model's and
        its stages' (`ModelSpec.programs`), and the recorded inputs' under
        RECORDED_INPUTS_KEY."""
        recorded = self.benchmark.recorded_inputs
        programs = (model.programs().items() for model in self.models)
        return {
            **{name: program for named in programs for name, program in named},
            **({RECORDED_INPUTS_KEY: recorded} if recorded is not None else {}),
        }

    @property
    def jobs_per_cluster(self) -> int:
        """The Jobs the workflow needs in a cluster at most: one per target and repeat."""
        return len(self.targets) * self.benchmark.repeats

    @property
    def parallelism_per_job(self) -> int:
        """How many pods each Job runs at once: max_parallel, split evenly between the Jobs of
        every target and repeat (the deadline check and the Jobs both use this one number)."""
        return self.scheduling.max_parallel // self.jobs_per_cluster
