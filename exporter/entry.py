"""The workflow's `models:` entry for an exported file, and what to do with the file: a
committed model travels in a ConfigMap (1 MiB at most); a larger one comes from an OCI
registry (`make push-model`) or an https server (`url` with its `size`)."""

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from contract.text import plural
from contract.variant import Quantization, takes_layer
from contract.weights import LayerRecord
from exporter.inputs import ExampleInput
from synth.object_budget import CONFIGMAP_DATA_BYTES

OCI_PLACEHOLDER: Final = "    # oci: the line `make push-model` prints\n"
"""Where the source goes in the entry of a model too large to commit."""


@dataclass(frozen=True)
class Entry:
    """The lines to paste under `models:`, and advice for the person pasting them."""

    lines: str
    advice: str | None


def models_entry(
    name: str,
    path: Path,
    root: Path,
    sha256: str,
    inputs: Sequence[ExampleInput],
    *,
    layers: LayerRecord | None,
    url: str | None,
) -> Entry:
    """The entry for the .pt2 at `path` (the repository at `root`), served from `url` if
    given, with the `layers` synth judges its quantizations by where it cannot read it."""
    size = path.stat().st_size
    shown_inputs = ", ".join(given.spec() for given in inputs)
    tail = [f"    sha256: {sha256}", f"    inputs: [{shown_inputs}]"]
    if layers is not None:
        tail.append(f"    layers: {layers.flow()}")
    if url is not None:
        source = [f"    url: {url}", f"    size: {size}"]
        return Entry(_lines(name, source, tail), None)
    if size <= CONFIGMAP_DATA_BYTES:
        resolved = path.resolve()
        inside = resolved.is_relative_to(root.resolve())
        committed = resolved.relative_to(root.resolve()).as_posix() if inside else str(path)
        outside = f"{path} is outside the repository ({root}): move it there and change file:"
        advice = None if inside else outside
        return Entry(_lines(name, [f"    file: {committed}"], tail), advice)
    push = f"make push-model MODEL={path} REGISTRY=host[:port]/path"
    return Entry(
        _lines(name, [OCI_PLACEHOLDER.rstrip("\n")], tail),
        f"{path} is {size:,} bytes, more than a committed model may be ({CONFIGMAP_DATA_BYTES:,}"
        f", a ConfigMap's limit): push it with `{push}`, which prints the oci: line, or serve "
        "it over https and give its address with --url, which prints url: and size:; to try "
        "it here first, name it `image_path: /opt/models/<file>` and run `localrun run "
        "WORKFLOW --image-file /opt/models/<file>=<this file>` (docs/getting-started.md)",
    )


@dataclass(frozen=True)
class StageFile:
    """An exported stage of a pipeline: its file, and what it takes and returns per sample."""

    stage: str
    path: Path
    sha256: str
    inputs: Sequence[ExampleInput]
    outputs: Sequence[ExampleInput]


def stage_lines(stages: Sequence[StageFile], root: Path) -> str:
    """The `preprocess:` and `postprocess:` lines of a model's entry: each stage's source,
    its sha256, and what it takes and returns, which synth checks against the chain."""
    lines = []
    for stage in stages:
        resolved = stage.path.resolve()
        small = stage.path.stat().st_size <= CONFIGMAP_DATA_BYTES
        inside = resolved.is_relative_to(root.resolve())
        shown = resolved.relative_to(root.resolve()).as_posix() if inside else stage.path
        source = (
            f"      file: {shown}"
            if small
            else "      # oci: the line `make push-model` prints for this file"
        )
        lines += [
            f"    {stage.stage}:",
            source,
            f"      sha256: {stage.sha256}",
            f"      inputs: [{', '.join(given.spec() for given in stage.inputs)}]",
            f"      outputs: [{', '.join(given.spec() for given in stage.outputs)}]",
        ]
    return "".join(f"{line}\n" for line in lines)


def _lines(name: str, source: list[str], tail: list[str]) -> str:
    return "\n".join([f"  - name: {name}", *source, *tail]) + "\n"


def quantizable(layers: LayerRecord) -> str:
    """How many of the program's Linear layers each quantization's kernel takes, by the rule
    the runner quantizes by (`contract.variant.takes_layer`), in one line for the person
    choosing a sweep."""
    shapes = layers.weights.shapes
    counts = []
    for quantization in Quantization:
        if quantization is Quantization.NONE:
            continue
        gpu, cpu = (sum(takes_layer(quantization, on, *s) for s in shapes) for on in (True, False))
        counts.append(
            f"{quantization} {gpu}"
            if gpu == cpu
            else f"{quantization} {gpu} on GPUs, {cpu} on CPUs"
        )
    return (
        f"of its {plural(len(shapes), 'Linear layer')}, each quantization takes: "
        f"{'; '.join(counts)} (synth refuses one that takes none)"
    )
