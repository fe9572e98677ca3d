"""config.json: what synth tells the runner to measure, one file per Job (in parts, where it
is too large for one ConfigMap).

This is the contract between synth (which writes it into the Job's ConfigMap) and the runner
(which reads it in the pod, picking its variants by JOB_COMPLETION_INDEX). It imports only
pydantic, so both sides share one definition without the runner depending on synth.
"""

import json
import math
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Final, Literal, Self, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    model_serializer,
    model_validator,
)

from contract.params import Params
from contract.recorded import RecordedContents
from contract.variant import VariantRef
from contract.weights import LayerRecord

SCHEMA_VERSION: Final = 1
CONFIG_DIR: Final = "/config"
CONFIG_FILE: Final = "config.json"
MODELS_DIR: Final = "/models"
CA_DIR: Final = "/etc/benchfleet/ca"
"""Where a pod finds the CA bundles its downloads trust (a ConfigMap synth writes)."""
CA_ENV: Final = "CA_PATH"
POD_NAME_ENV: Final = "POD_NAME"
"""The pod's own name (the downward API's): what a result records, and the attempt a
runner's objects in the result lake are named by."""
"""The env var naming CA_DIR to the runner (a local run points it at another folder)."""
OCI_MODELS_DIR: Final = "/oci-models"
"""Where `oci` models' image volumes are mounted, one folder per model: a mount of its own,
since a mount inside the read-only ConfigMap volume at MODELS_DIR could not be created."""
OCI_MODEL_PATH_ENV: Final = "OCI_MODEL_PATH"
"""The env var holding OCI_MODELS_DIR in a pod (another folder in a local run)."""
IMAGE_ROOT_ENV: Final = "IMAGE_ROOT"
"""The env var naming the folder `image_path` models are found under: synth never sets it (a
pod's is the image's own root, /); a local try points it at the files it was given instead
(`localrun run --image-file`)."""
OCI_DEFAULT_FILE: Final = "model.pt2"
"""The `.pt2`'s path inside an artifact that does not name one: what `make push-model` packs."""
RECORDED_INPUTS_KEY: Final = "recorded-inputs-of-the-workflow"
"""The name the recorded inputs are delivered by where a model's delivery goes by the model's
name (its file under $MODEL_PATH, its folder under $OCI_MODEL_PATH, its image volume): 31
characters, one more than a model's name may have, so that it is never a model's."""
MAX_VARIANTS_PER_POD: Final = 32
"""The most variants one pod runs: their stubs, at least, fit one termination message
(contract.result.termination_message)."""


_PART: Final = re.compile(re.escape(CONFIG_FILE) + r"\.([1-9][0-9]{0,3})-of-([1-9][0-9]{0,3})")
"""A part's file name: `config.json.<number>-of-<count>`."""


def config_part_file(number: int, count: int) -> str:
    """The file (and its ConfigMap's key) holding part `number` (from 1) of `count` of a
    config.json too large for one ConfigMap: synth cuts it at line ends, and the parts,
    joined in order, are config.json byte for byte."""
    return f"{CONFIG_FILE}.{number}-of-{count}"


def join_config_parts(parts: Mapping[str, bytes]) -> bytes:
    """config.json from its parts, by file name (`config_part_file`); other names are left
    out. Raises ValueError unless they are every part of one count, once."""
    numbered = {}
    counts = set()
    for name, content in parts.items():
        if (found := _PART.fullmatch(name)) is not None:
            number, count = int(found[1]), int(found[2])
            numbered[number] = content
            counts.add(count)
    if len(counts) != 1 or sorted(numbered) != list(range(1, max(counts) + 1)):
        listed = ", ".join(sorted(name for name in parts if _PART.fullmatch(name))) or "none"
        raise ValueError(f"not every part of one config.json; found {listed}")
    return b"".join(numbered[number] for number in sorted(numbered))


def read_config_bytes(path: Path) -> bytes:
    """config.json at `path`, or, where synth split it (no file there), its parts beside it
    joined. Raises OSError when neither is there, ValueError when parts are missing."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        found = path.parent.glob(f"{CONFIG_FILE}.*-of-*") if path.name == CONFIG_FILE else ()
        parts = {part.name: part.read_bytes() for part in found}
        if not parts:
            raise
        return join_config_parts(parts)


Groups = tuple[tuple[int, ...], ...]
"""The variant positions each completion index runs, index by index."""


def check_groups(groups: Sequence[Sequence[int]], variants: int | None = None) -> None:
    """Raise ValueError unless `groups` lists every position 0..variants-1 (as many as they
    list, by default) once, in non-empty groups of at most MAX_VARIANTS_PER_POD."""
    listed = sorted(position for group in groups for position in group)
    count = len(listed) if variants is None else variants
    if listed != list(range(count)) or not all(groups):
        raise ValueError(
            f"groups must list every variant position 0..{count - 1} exactly once, in "
            f"non-empty groups; they list {listed}"
        )
    if (largest := max(map(len, groups), default=0)) > MAX_VARIANTS_PER_POD:
        raise ValueError(f"a group of {largest} variants; at most {MAX_VARIANTS_PER_POD}")


def groups_text(groups: Groups) -> str:
    """What synth writes in a grouped Job's GROUPS_ANNOTATION (contract.layout): the groups as
    compact JSON, so that the Job itself says which variants each of its pods runs."""
    return json.dumps(groups, separators=(",", ":"))


def parse_groups(text: str) -> Groups:
    """A Job's GROUPS_ANNOTATION; raises ValueError if it is not one."""
    try:
        groups = _GROUPS.validate_json(text, strict=True)
    except ValidationError as error:
        raise ValueError(f"not a list of lists of variant positions: {error}") from None
    check_groups(groups)
    return groups


_GROUPS: Final = TypeAdapter(Groups)


class _Contract(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


TAIL_SAMPLES: Final = 10
"""A percentile is reliable with at least this many samples beyond it: p99 needs 1000
iterations, p90 100, p99.9 10,000. MLPerf LoadGen's count for a percentile at 99 %
confidence, z² / (1 - p) with z = 2.576 (6,636 queries for p99.9, what MLPerf Automotive
runs), asks for z² ≈ 6.64 samples beyond it: this rule asks for more at every tail, so it
holds LoadGen's (docs/runner.md)."""

Tail = Literal["p90", "p95", "p99", "p99.9"]
"""A tail percentile the timed loop can be asked to make reliable."""


def tail_fraction(tail: Tail) -> Fraction:
    """The share of samples that lie beyond `tail`, exactly (p99.9: 1/1000)."""
    return 1 - Fraction(tail.removeprefix("p")) / 100


def tail_iterations(tail: Tail) -> int:
    """The fewest iterations that make `tail` reliable."""
    return math.ceil(TAIL_SAMPLES / tail_fraction(tail))


class PhaseConfig(_Contract):
    """Stop once both minimums are met, or at either maximum."""

    min_iterations: int = Field(ge=0)
    min_time_s: float = Field(ge=0)
    max_iterations: int = Field(ge=1)
    max_time_s: float = Field(gt=0)
    tail: Tail | None = None
    """Also run until this percentile is reliable (tail_iterations), within the maximums."""

    @property
    def least_iterations(self) -> int:
        """The minimum count the loop runs to, the tail's included."""
        return max(self.min_iterations, tail_iterations(self.tail) if self.tail else 0)


MAX_RATE_HZ: Final = 1000.0
"""The fastest clock a fixed-rate run may ask for. The issue loop sleeps to within
runner.fixed_rate.SPIN_S of an arrival and spins the rest; at 1 kHz the period (1 ms) is
twice that margin and some 20 times the loop's own overhead per query (tens of
microseconds in Python), so its error stays a small share of the period on an idle CPU."""


class ScenarioConfig(_Contract):
    """A fixed-rate run: queries issued on a clock, open loop (runner/fixed_rate.py). Absent
    from config.json for today's closed loop (single_stream)."""

    kind: Literal["fixed_rate"] = "fixed_rate"
    rate_hz: float = Field(gt=0, le=MAX_RATE_HZ)
    deadline_s: float = Field(gt=0)
    """A query misses when it completes later than this after its scheduled arrival."""


ModelSource = Literal["file", "image_path", "url", "oci"]
MODEL_SOURCES: Final[tuple[ModelSource, ...]] = get_args(ModelSource)
"""Where a model can come from, in the order a spec's model entry is read for one (each is
a field of it)."""

DEFAULT_DOWNLOAD_BYTES: Final = 1 << 30
"""The most a `url` model's download may hold where its spec gives no `size`: what the pods'
/tmp held for everything before sizes were known."""
DEFAULT_DOWNLOAD_BUDGET_S: Final = 1800.0
"""A `url` model's download, retries included, where its spec gives no `download_budget`:
a 1 GiB model at 0.6 MB/s."""


Stage = Literal["preprocess", "postprocess"]
STAGES: Final[tuple[Stage, ...]] = get_args(Stage)
"""The programs a model entry may run around its model, by the order they run in."""


def program_name(model: str, stage: Stage | None = None) -> str:
    """The name a model's program, or one of its stages', is carried to the pod under: the
    model's name, else `<model>.<stage>` (a model name has no dot, so none is another's)."""
    return model if stage is None else f"{model}.{stage}"


class ProgramConfig(_Contract):
    """Where a `.pt2` is and what its bytes must hash to: a model's, or one of its stages'."""

    source: ModelSource
    location: str
    """For `file`, a file name under $MODEL_PATH (MODELS_DIR in the pod, another folder in a
    local run); for `oci`, `<program>/<path in the artifact>` under $OCI_MODEL_PATH (each
    program's image volume); for `image_path`, an absolute path in the image; for `url`, an
    https URL."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    size_bytes: int | None = Field(default=None, ge=1)
    """For `url`: the most bytes the download may hold, so a server sending more is stopped
    before the pod's /tmp fills (None: DEFAULT_DOWNLOAD_BYTES)."""
    download_budget_s: float | None = Field(default=None, gt=0)
    """For `url`: how long the download may take in all, retries included (None:
    DEFAULT_DOWNLOAD_BUDGET_S)."""
    ca_bundle: str | None = Field(default=None, pattern=r"^[a-z0-9-]+\.pem$")
    """For `url`: a file under $CA_PATH (CA_DIR in the pod), PEM certificates the download
    trusts besides the image's own CAs."""
    ca_bundle_file: str | None = Field(default=None, min_length=1, max_length=4096)
    """For `url`: the bundle's file in the repository, which messages name (`ca_bundle` is
    named by its content, which nobody recognises)."""

    @model_serializer(mode="wrap")
    def _written_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        # Left out when unset, so that config.json of a model that is no download, records
        # no layers and runs no stages, and with it every such Job's content-hash name, stays
        # byte for byte what it was before them.
        written: dict[str, object] = handler(self)
        return {k: v for k, v in written.items() if v is not None or k not in _WRITTEN_WHEN_SET}


class ModelConfig(ProgramConfig):
    """A model's program, with the facts its spec records of it (family, params, layers) and
    the stages run around it."""

    family: str | None = Field(default=None, min_length=1, max_length=30)
    """The family the program is a member of (`models[].family`), where its spec names one."""
    params: Params | None = None
    """The program's parameters within its family (`models[].params`)."""
    layers: LayerRecord | None = None
    """What the spec records of the program's layers (its `layers:`), which synth judged its
    quantized variants by: the runner refuses a program that holds others (None: nothing
    recorded)."""
    preprocess: ProgramConfig | None = None
    """A program run on each query's inputs before the model, its outputs the model's
    inputs (None: the model takes the inputs itself)."""
    postprocess: ProgramConfig | None = None
    """A program run on the model's outputs, whose outputs are the chain's."""

    def stages(self) -> dict[Stage, ProgramConfig]:
        """The stages this model runs between, by name, in the order they run."""
        found = {stage: getattr(self, stage) for stage in STAGES}
        return {stage: program for stage, program in found.items() if program is not None}


class RecordedConfig(ProgramConfig):
    """Where the recorded inputs are (a `.safetensors`, delivered and checked as a program
    is), and what the spec records they hold."""

    contents: RecordedContents | None = None
    """What the spec records the file holds (its `contents:`), which synth held to the
    models: the runner refuses a file that holds other contents."""


def programs(models: Mapping[str, ModelConfig]) -> dict[str, ProgramConfig]:
    """Every program `models` carry to a pod, the models' and their stages', by
    `program_name`."""
    found: dict[str, ProgramConfig] = {}
    for name, model in models.items():
        found[name] = model
        for stage, program in model.stages().items():
            found[program_name(name, stage)] = program
    return found


_WRITTEN_WHEN_SET: Final = frozenset(
    {
        "size_bytes",
        "download_budget_s",
        "ca_bundle",
        "ca_bundle_file",
        "layers",
        "family",
        "params",
        "contents",
        "preprocess",
        "postprocess",
    }
)


class InputConfig(_Contract):
    """One input tensor, per sample."""

    shape: tuple[int, ...]
    dtype: str


class VariantConfig(VariantRef):
    """One index of the Job: one model at one precision, quantization and batch size, eager
    or compiled."""

    inputs: tuple[InputConfig, ...]


class RunConfig(_Contract):
    """Everything one Job's pods need to know, whichever index they run."""

    schema_version: Literal[1] = SCHEMA_VERSION
    workflow: str
    target: str
    device_type: str
    gpus: int = Field(ge=0)
    warmup: PhaseConfig
    measure: PhaseConfig
    models: dict[str, ModelConfig]
    variants: tuple[VariantConfig, ...] = Field(min_length=1)
    groups: tuple[tuple[int, ...], ...] | None = None
    """Completion index i runs the variants at positions groups[i] of `variants`, in order,
    in one process; None: index i runs variant i alone. A variant keeps its position in
    `variants` as its `index` whichever pod runs it, so results are keyed alike either way."""
    recorded_inputs: RecordedConfig | None = None
    """Where the recorded inputs every variant replays are (contract/recorded.py), delivered
    and checked as a model is; None: every variant draws its inputs."""
    scenario: ScenarioConfig | None = None
    """None: today's closed loop (single_stream), and config.json leaves it out."""
    interleave: bool = False
    """A group's variants of one model are measured in alternating rounds rather than one
    after the other (runner/rounds.py): each later one's result is paired with the first's,
    and every one's keeps its round medians, which pair any two in the report."""

    @model_validator(mode="after")
    def _every_variant_once(self) -> Self:
        if self.groups is not None:
            check_groups(self.groups, len(self.variants))
        if self.interleave and self.scenario is not None:
            raise ValueError(
                "interleave alternates closed-loop rounds; a fixed-rate scenario has none"
            )
        return self

    @property
    def delivered(self) -> dict[str, ProgramConfig]:
        """Every file the pods are given, by the name its delivery goes by: the programs'
        (`programs`), and the recorded inputs' under RECORDED_INPUTS_KEY."""
        recorded = self.recorded_inputs
        return {**programs(self.models), **({RECORDED_INPUTS_KEY: recorded} if recorded else {})}

    @property
    def completions(self) -> int:
        """The Job's completion indexes: one per group."""
        return len(self.variants) if self.groups is None else len(self.groups)

    def positions(self, index: int) -> tuple[int, ...]:
        """The positions in `variants` that completion index `index` runs, in order;
        IndexError when there is no such index."""
        if not 0 <= index < self.completions:
            raise IndexError(index)
        return (index,) if self.groups is None else self.groups[index]

    def group(self, index: int) -> tuple[VariantConfig, ...]:
        """The variants completion index `index` runs, in order."""
        return tuple(self.variants[position] for position in self.positions(index))
