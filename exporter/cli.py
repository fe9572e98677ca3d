"""`benchfleet export MODULE:FACTORY`: the command; torch and the user's code are imported only
when it runs."""

import hashlib
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click
from pydantic import TypeAdapter, ValidationError

from exporter.inputs import MAX_BATCH, BadInput, ExampleInput, check_order, parse_input
from synth.fields import HttpsUrl, ModelName

if TYPE_CHECKING:
    import torch

    from exporter.build import Exported, ExportRequest
    from exporter.check import Checked
    from exporter.entry import StageFile


def _inputs(_: click.Context, __: click.Parameter, values: tuple[str, ...]) -> list[ExampleInput]:
    try:
        inputs = [parse_input(value) for value in values]
        check_order(inputs)
    except BadInput as error:
        raise click.BadParameter(str(error)) from None
    return inputs


def _arguments(_: click.Context, __: click.Parameter, values: tuple[str, ...]) -> dict[str, object]:
    arguments: dict[str, object] = {}
    for value in values:
        name, equals, text = value.partition("=")
        if not equals or not name.isidentifier():
            raise click.BadParameter(f"{value!r} is not NAME=VALUE")
        try:
            arguments[name] = json.loads(text)
        except ValueError:
            arguments[name] = text  # a bare word is a string: --arg variant=base
    return arguments


def _checked(adapter: TypeAdapter[str], value: str | None) -> str | None:
    if value is None:
        return None
    try:
        return adapter.validate_python(value)
    except ValidationError as error:
        raise click.BadParameter(error.errors()[0]["msg"]) from None


@click.command()
@click.argument("factory")
@click.option(
    "--input",
    "inputs",
    multiple=True,
    required=True,
    callback=_inputs,
    help="One input of the model, in forward's order: [NAME=]SHAPE[:DTYPE[:HIGH]], one sample "
    "(the batch comes first, dynamic), e.g. 3,224,224 or input_ids=128:int64:30522 (token ids "
    "below 30522). Repeat for each input.",
)
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Where to write the .pt2 (replaced only once every check has passed).",
)
@click.option(
    "--arg",
    "arguments",
    multiple=True,
    callback=_arguments,
    help="NAME=VALUE for the factory (for a Hugging Face model class, for its config); VALUE "
    "is read as JSON where it is JSON (10, true, null), else as text.",
)
@click.option("--name", help="The model's name in the spec.  [default: from --out]")
@click.option(
    "--url", help="The https address the file will be served from: prints url: and size:."
)
@click.option("--batch", type=click.IntRange(1, MAX_BATCH), default=2, help="The example's batch.")
@click.option(
    "--max-batch", type=click.IntRange(2), default=MAX_BATCH, help="The largest batch accepted."
)
@click.option(
    "--static-batch",
    is_flag=True,
    help="Export for --batch only, for a model whose code fixes its batch size.",
)
@click.option(
    "--preprocess",
    metavar="FACTORY",
    help="A pipeline's preprocess, MODULE:NAME called without arguments: exported on the "
    "--input examples, the model then on what it returns; written beside --out as "
    "<stem>-preprocess.pt2, and the entry's inputs are its.",
)
@click.option(
    "--postprocess",
    metavar="FACTORY",
    help="A pipeline's postprocess (an argmax, actions clamped to limits), MODULE:NAME called "
    "without arguments: exported on what the model returns, written as <stem>-postprocess.pt2.",
)
@click.option("--seed", type=int, default=0, help="Seeds the factory's random weights.")
@click.option("--verbose", is_flag=True, help="Show torch's own warnings and log.")
@click.pass_context
def export(
    context: click.Context,
    factory: str,
    inputs: list[ExampleInput],
    out: Path,
    arguments: dict[str, object],
    name: str | None,
    url: str | None,
    batch: int,
    max_batch: int,
    static_batch: bool,
    preprocess: str | None,
    postprocess: str | None,
    seed: int,
    verbose: bool,
) -> None:
    """Export a model of your own to a .pt2 the runner measures, and print its models: entry.

    FACTORY is MODULE:NAME, a function or class that returns the model: e.g.
    torchvision.models:resnet50, transformers:BertModel (a Hugging Face model class, built
    from its config with --arg), or mymodels:build (mymodels.py in the current folder). It
    is imported and called here: it runs your code, on your machine (never in CI, and
    nothing that validates specs imports it).

    The model is put in eval mode and exported with torch.export with a dynamic batch
    dimension; an output that is not a tensor (a dict, a dataclass, a Hugging Face
    ModelOutput) is flattened into a tuple of tensors. The file is then checked as synth
    and the runner check it, loaded and run by the runner's own code at batch 1, and its
    outputs compared with the model's. docs/specs.md walks through it.
    """
    from exporter.quiet import held_back  # noqa: PLC0415
    from localrun.push_model import model_name  # noqa: PLC0415

    chosen = _checked(TypeAdapter(ModelName), name) or model_name(out)
    served = _checked(TypeAdapter(HttpsUrl), url)
    if batch > max_batch:
        raise click.BadParameter(f"--batch {batch} is above --max-batch {max_batch}")
    root: Path = context.obj.root if context.obj is not None else Path(".")
    click.echo(f"exporting {factory} ...", err=True)
    with held_back(verbose) as hidden:
        # torch (seconds to import) and the factory's module only now: `benchfleet validate`
        # and `synth` never import them.
        from exporter.build import ExportRefused, ExportRequest  # noqa: PLC0415

        request = ExportRequest(
            factory, tuple(inputs), arguments, batch, max_batch, static_batch, seed
        )
        written: _Pipeline | ExportRefused
        try:
            written = _write(
                request, out, chosen, {"preprocess": preprocess, "postprocess": postprocess}
            )
        except ExportRefused as refused:
            written = refused
    note = hidden.note()
    if note is not None:
        click.echo(note, err=True)
    if isinstance(written, ExportRefused):
        hint = f"\n    hint: {written.hint}" if written.hint else ""
        raise click.ClickException(f"{factory}: {written.message}{hint}")
    _report(written.model, out, chosen, served, root, inputs, written.stages)


@dataclass(frozen=True)
class _Written:
    """An exported model written to --out, and what the runner saw of it."""

    exported: "Exported"
    sha256: str
    checked: "Checked"


@dataclass(frozen=True)
class _Pipeline:
    """The model written to --out, and its stages written beside it."""

    model: _Written
    stages: list["StageFile"]


def _write(
    request: "ExportRequest", out: Path, name: str, factories: dict[str, str | None]
) -> _Pipeline:
    """Export and check the model and its stages (each on what the one before it returns),
    then write them; raises ExportRefused, leaving every file as it was."""
    from dataclasses import replace  # noqa: PLC0415

    from exporter.build import returned  # noqa: PLC0415
    from exporter.entry import StageFile  # noqa: PLC0415

    out.parent.mkdir(parents=True, exist_ok=True)
    ready: list[tuple[Path, Path]] = []
    stages: list[StageFile] = []
    try:
        chain_inputs, example = request.inputs, None
        if (factory := factories["preprocess"]) is not None:
            path = out.with_name(f"{out.stem}-preprocess.pt2")
            stage = replace(request, factory=factory, arguments={})
            written, temporary = _checked_file(stage, path, f"{name}-preprocess", None)
            ready.append((temporary, path))
            model_inputs, example = returned(written.exported)
            stages.append(StageFile("preprocess", path, written.sha256, chain_inputs, model_inputs))
            request = replace(request, inputs=model_inputs)
        model, temporary = _checked_file(request, out, name, example)
        ready.append((temporary, out))
        if (factory := factories["postprocess"]) is not None:
            path = out.with_name(f"{out.stem}-postprocess.pt2")
            taken, example = returned(model.exported)
            stage = replace(request, factory=factory, arguments={}, inputs=taken)
            written, temporary = _checked_file(stage, path, f"{name}-postprocess", example)
            ready.append((temporary, path))
            given, _ = returned(written.exported)
            stages.append(StageFile("postprocess", path, written.sha256, taken, given))
        for temporary, path in ready:
            os.replace(temporary, path)
    finally:
        for temporary, _ in ready:
            temporary.unlink(missing_ok=True)
    return _Pipeline(model, stages)


def _checked_file(
    request: "ExportRequest", out: Path, name: str, example: "tuple[torch.Tensor, ...] | None"
) -> tuple[_Written, Path]:
    """Export and check one program, written under a name of its own beside `out`, which
    the caller renames over `out` once every program of the pipeline has passed: a refused
    or interrupted export leaves whatever `out` held."""
    from exporter.build import export_model  # noqa: PLC0415
    from exporter.check import check_exported  # noqa: PLC0415

    exported = export_model(request, example)
    sha256 = hashlib.sha256(exported.data).hexdigest()
    temporary = _new_file(out, exported.data)
    try:
        checked = check_exported(temporary, sha256, name, request.inputs, exported)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return _Written(exported, sha256, checked), temporary


def _new_file(out: Path, data: bytes) -> Path:
    """A new file beside `out` holding `data`, made as any file the user writes is: its mode
    0666 less the umask (tempfile's are 0600, which left the .pt2 unreadable to the group a
    team's models are shared with)."""
    while True:
        candidate = out.with_name(f".{out.stem}.{secrets.token_hex(6)}.pt2")
        try:
            descriptor = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        return candidate


def _report(
    written: _Written,
    out: Path,
    name: str,
    url: str | None,
    root: Path,
    inputs: list[ExampleInput],
    stages: list["StageFile"],
) -> None:
    from exporter.build import describe_size  # noqa: PLC0415
    from exporter.check import input_names  # noqa: PLC0415
    from exporter.entry import models_entry, quantizable, stage_lines  # noqa: PLC0415

    exported, checked = written.exported, written.checked
    low, high = exported.batches
    click.echo(
        f"wrote {out}: {len(exported.data):,} bytes, {describe_size(exported.parameters)} "
        f"parameters, batch {low}..{high}; outputs: {'; '.join(exported.outputs)}",
        err=True,
    )
    click.echo(
        "checked: synth's archive and input checks pass, and the runner loaded it and ran it "
        "at batch 1, with the same outputs as the model",
        err=True,
    )
    if low == high:
        click.echo(
            f"note: exported for batch {low} only: the spec's batch sizes must be {low}", err=True
        )
    if checked.accuracy_error:
        click.echo(f"note: the runner's accuracy pass: {checked.accuracy_error}", err=True)
    if checked.layers is not None:
        click.echo(f"note: {quantizable(checked.layers)}", err=True)
    for stage in stages:
        click.echo(f"wrote {stage.path}: the {stage.stage}, checked as the model is", err=True)
    # The entry's inputs are the chain's: what its preprocess takes, where it has one.
    preprocess = stages[0] if stages and stages[0].stage == "preprocess" else None
    chain = preprocess.inputs if preprocess is not None else inputs
    # A recording feeds the chain's first program: its names are the preprocess's there.
    names = input_names(preprocess.path) if preprocess is not None else checked.input_names
    if names:
        click.echo(
            f"inputs by name: {', '.join(names)} (a recording of inputs names its samples "
            "<name>.<sample>: docs/specs.md, Recorded inputs)",
            err=True,
        )
    entry = models_entry(name, out, root, written.sha256, chain, layers=checked.layers, url=url)
    if entry.advice:
        click.echo(entry.advice, err=True)
    click.echo(entry.lines + stage_lines(stages, root), nl=False)
