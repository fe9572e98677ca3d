"""Build the user's model from its factory and export it as the runner needs it: eval mode, a
dynamic batch dimension, tensors out, the same bytes for the same model.

Every failure is an ExportRefused that says where (the line of the user's code, where there
is one) and what to change; the hurdles users meet each have their own hint.
"""

import importlib
import inspect
import io
import keyword
import math
import sys
import traceback
import unittest.mock
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Final

import torch
from torch import nn
from torch.export import ExportedProgram
from torch.utils import _pytree as pytree

from exporter.inputs import DEFAULT_ID_BOUND, MAX_BATCH, ExampleInput
from runner.inputs import INPUT_DTYPES
from synth.hints import did_you_mean

_OWN_CODE: Final = (Path(torch.__file__).parent, Path(__file__).parent)
"""Frames in these are torch's and ours: a failure's place is the last frame outside them."""
_FIRST_LINE_CHARS: Final = 400
USERS_FAILURES: Final = (Exception, SystemExit)
"""What the user's code (the module's import, the factory, the model's forward) may raise:
anything, an exit included. sys.exit() raises SystemExit, which no `except Exception`
catches: the command would end with the code the user's code gave, 0 included, no file
written and nothing said. KeyboardInterrupt is the person's own, and stops the command."""


class ExportRefused(Exception):
    """The model cannot be exported as it is: what went wrong, where, and the fix."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


@dataclass(frozen=True)
class ExportRequest:
    """What the command line asks for."""

    factory: str
    """`module:attribute`, the attribute dotted where it is nested (`module:Class.build`)."""
    inputs: tuple[ExampleInput, ...]
    arguments: Mapping[str, object] = field(default_factory=dict)
    """Keyword arguments of the factory (of the config, for a Hugging Face model class)."""
    batch: int = 2
    """The example's batch size."""
    max_batch: int = MAX_BATCH
    static_batch: bool = False
    """Export for the example's batch size only, for a model whose code fixes it."""
    seed: int = 0


@dataclass(frozen=True)
class Exported:
    """An exported model: the .pt2's bytes and what a reader should know of it."""

    data: bytes
    outputs: tuple[str, ...]
    """Each output tensor: where it was in the model's output, its shape and dtype."""
    parameters: int
    """Parameters and buffers, in elements."""
    batches: tuple[int, int]
    """The smallest and largest batch size the program accepts."""
    example: tuple[torch.Tensor, ...]
    """The example inputs it was exported with..."""
    expected: tuple[torch.Tensor, ...]
    """...and the model's outputs on them."""


def export_model(
    request: ExportRequest, example: tuple[torch.Tensor, ...] | None = None
) -> Exported:
    """Build, check and export the model `request` names, on `example` where given (a
    pipeline's stage, on what the stage before it returns), else on inputs drawn as
    `request.inputs` describe; raises ExportRefused."""
    factory = resolve(request.factory)
    torch.manual_seed(request.seed)
    model = build(factory, request)
    model.eval()
    wrapper = Flattened(model, request.inputs)
    if example is None:
        generator = torch.Generator().manual_seed(request.seed)
        example = example_inputs(request.inputs, request.batch, generator)
    with torch.inference_mode():
        try:
            outputs = wrapper.call_eagerly(example)
        except ExportRefused:
            raise
        except USERS_FAILURES as error:
            raise _eager_failure(error, request.inputs) from None
    low, high = (request.batch, request.batch) if request.static_batch else (1, request.max_batch)
    program = _export(wrapper, example, request, (low, high))
    described = tuple(
        f"{name} [{', '.join(map(str, tensor.shape))}] {str(tensor.dtype).removeprefix('torch.')}"
        for name, tensor in zip(wrapper.output_names, outputs, strict=True)
    )
    parameters = sum(tensor.numel() for tensor in program.state_dict.values())
    return Exported(saved_bytes(program), described, parameters, (low, high), example, outputs)


def returned(before: Exported) -> tuple[tuple[ExampleInput, ...], tuple[torch.Tensor, ...]]:
    """What `before` returns, as the next stage of a pipeline takes it: per sample, and the
    example tensors themselves (a stage is exported on what the stage before it returns)."""
    inputs = tuple(
        ExampleInput(tuple(tensor.shape[1:]), str(tensor.dtype).removeprefix("torch."))
        for tensor in before.expected
    )
    # Computed under inference_mode, whose tensors torch.export cannot trace through: copies.
    return inputs, tuple(tensor.clone() for tensor in before.expected)


def resolve(text: str) -> Callable[..., object]:
    """The factory `module:attribute` names, imported as Python would from the current
    folder (the command runs the user's own code, on the user's machine)."""
    module_name, colon, attribute = text.partition(":")
    if not colon or not module_name or not attribute:
        raise ExportRefused(
            f"{text!r} is not MODULE:FACTORY",
            "e.g. torchvision.models:resnet50, transformers:BertModel, or mymodels:build for "
            "a function build() in mymodels.py in the current folder",
        )
    if "" not in sys.path and str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        found: object = importlib.import_module(module_name)
    except USERS_FAILURES as error:  # importing runs the module's code
        raise ExportRefused(
            f"cannot import {module_name}: {_in_words(error)}{_place(error)}",
            "MODULE is imported from the current folder and this environment's packages: "
            "install its package here (pip install ...) or run the command where it is",
        ) from None
    for depth, part in enumerate(attribute.split(".")):
        if not hasattr(found, part):
            owner = ".".join([module_name, *attribute.split(".")[:depth]])
            names = [name for name in dir(found) if not name.startswith("_")]
            raise ExportRefused(
                f"{owner} has no attribute {part!r}", did_you_mean(part, names, what="names")
            )
        found = getattr(found, part)
    if not callable(found):
        raise ExportRefused(f"{text} is a {type(found).__name__}, not a function or class")
    return found


def build(factory: Callable[..., object], request: ExportRequest) -> nn.Module:
    """The model the factory returns. A Hugging Face model class (it has a `config_class`)
    is built from its config, made of the arguments."""
    config_class = getattr(factory, "config_class", None)
    from_config = inspect.isclass(factory) and inspect.isclass(config_class)
    try:
        if from_config and callable(config_class):
            model = factory(config_class(**request.arguments))
        else:
            model = factory(**request.arguments)
    except USERS_FAILURES as error:  # the factory is the user's code
        given = ", ".join(f"{key}={value!r}" for key, value in request.arguments.items())
        called = f" (called with {given})" if given else ""
        raise ExportRefused(
            f"the factory failed{called}: {_in_words(error)}{_place(error)}",
            "pass the factory's arguments as --arg NAME=VALUE (VALUE as JSON: 10, true, "
            'null, "text")',
        ) from None
    if not isinstance(model, nn.Module):
        raise ExportRefused(
            f"{request.factory} returned a {type(model).__name__}, not a torch.nn.Module",
            "name a function or class that returns the model itself",
        )
    return model


def example_inputs(
    inputs: Sequence[ExampleInput], batch: int, generator: torch.Generator
) -> tuple[torch.Tensor, ...]:
    """Seeded example tensors of `batch` samples: floating ones from the standard normal
    distribution, integer ones below their bound."""
    tensors = []
    for given in inputs:
        shape = (batch, *given.shape)
        dtype = INPUT_DTYPES[given.dtype]
        if given.floating:
            tensors.append(torch.randn(shape, generator=generator).to(dtype))
        else:
            high = given.high or DEFAULT_ID_BOUND
            tensors.append(torch.randint(0, high, shape, generator=generator).to(dtype))
    return tuple(tensors)


class Flattened(nn.Module):
    """The user's model with tensors in and tensors out: its inputs by position or keyword as
    given, its output flattened into a tuple of tensors (or the one tensor), whatever
    container held them. The runner's torch.export.load rebuilds only built-in containers,
    and a Hugging Face ModelOutput (a registered dataclass) is not one."""

    def __init__(self, model: nn.Module, inputs: Sequence[ExampleInput]) -> None:
        super().__init__()
        self.model = model
        self._keywords = [given.keyword for given in inputs]
        self.output_names: list[str] = []
        names = _input_names(model, inputs)
        # torch.export names the program's inputs after forward's parameters: the user's own
        # names then appear in the runner's and synth's messages about inputs.
        signature = inspect.Signature(
            [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in names]
        )
        self.forward = _with_signature(self._flattened_call, signature)

    def _flattened_call(self, *tensors: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        positional = [t for t, name in zip(tensors, self._keywords, strict=True) if not name]
        named = {name: t for t, name in zip(tensors, self._keywords, strict=True) if name}
        named_outputs = flatten_output(self.model(*positional, **named))
        self.output_names = [name for name, _ in named_outputs]
        outputs = tuple(tensor for _, tensor in named_outputs)
        return outputs[0] if len(outputs) == 1 else outputs

    def call_eagerly(self, example: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        """The flattened outputs on `example`, as a tuple."""
        output = self._flattened_call(*example)
        return output if isinstance(output, tuple) else (output,)


def _with_signature(
    call: Callable[..., torch.Tensor | tuple[torch.Tensor, ...]], signature: inspect.Signature
) -> Callable[..., torch.Tensor | tuple[torch.Tensor, ...]]:
    def forward(*tensors: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        return call(*tensors)

    forward.__signature__ = signature  # type: ignore[attr-defined]
    return forward


def _input_names(model: nn.Module, inputs: Sequence[ExampleInput]) -> list[str]:
    """Each input's name: its keyword, else the model's forward parameter at its position,
    else input_<position>."""
    try:
        parameters = [
            p.name
            for p in inspect.signature(model.forward).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        parameters = []
    names: list[str] = []
    for position, given in enumerate(inputs):
        name = given.keyword or (parameters[position] if position < len(parameters) else "")
        if not name.isidentifier() or keyword.iskeyword(name) or name in names:
            name = f"input_{position}"
        names.append(name)
    return names


def flatten_output(output: object, path: str = "output") -> list[tuple[str, torch.Tensor]]:
    """The tensors of a model's output, in order, each with where it was: through tuples,
    lists, named tuples, mappings (a Hugging Face ModelOutput is one), dataclasses and any
    registered pytree container; None dropped, as ModelOutput.to_tuple() drops it."""
    if isinstance(output, torch.Tensor):
        return [(path, output)]
    if output is None:
        return []
    if isinstance(output, Mapping):
        children: list[tuple[str, object]] = [(str(k), v) for k, v in output.items()]
    elif is_dataclass(output) and not isinstance(output, type):
        children = [(f.name, getattr(output, f.name)) for f in fields(output)]
    elif isinstance(output, tuple) and hasattr(output, "_fields"):
        children = list(zip(output._fields, output, strict=True))
    elif isinstance(output, list | tuple):
        children = [(str(i), item) for i, item in enumerate(output)]
    else:
        leaves = pytree.tree_leaves(output)
        if leaves == [output]:
            where = "" if path == "output" else f" {path}"
            raise ExportRefused(
                f"the model's output{where} is a {type(output).__name__}, not a tensor",
                "return tensors, or tuples, lists, dicts or dataclasses of them: the runner "
                "measures and compares tensor outputs only",
            )
        children = [(str(i), leaf) for i, leaf in enumerate(leaves)]
    prefix = "" if path == "output" else f"{path}."
    return [found for key, value in children for found in flatten_output(value, prefix + key)]


def _export(
    wrapper: Flattened,
    example: tuple[torch.Tensor, ...],
    request: ExportRequest,
    batches: tuple[int, int],
) -> ExportedProgram:
    low, high = batches
    batch = torch.export.Dim("batch", min=low, max=high) if low != high else None
    dynamic = {name: ({0: batch} if batch else None) for name in _parameter_names(wrapper)}
    try:
        return torch.export.export(wrapper, example, dynamic_shapes=dynamic)
    # torch.export raises many types, with the cause in words; tracing runs forward.
    except USERS_FAILURES as error:
        raise _export_failure(error, request) from None


def _parameter_names(wrapper: Flattened) -> list[str]:
    return list(inspect.signature(wrapper.forward).parameters)


def saved_bytes(program: ExportedProgram) -> bytes:
    """The .pt2 of `program`, the same bytes wherever the same torch release writes it."""
    # Stack traces name the absolute paths of the user's files and of torch's install.
    for node in program.graph_module.graph.nodes:
        node.meta.pop("stack_trace", None)
    buffer = io.BytesIO()
    # The archive records torch.__version__, local label included: PyPI's CUDA wheel and the
    # CPU wheel of one release would write different bytes. Record the release alone.
    release = str(torch.__version__).split("+", 1)[0]
    with unittest.mock.patch.object(torch, "__version__", release):
        torch.export.save(program, buffer)
    return buffer.getvalue()


def _in_words(error: BaseException) -> str:
    if isinstance(error, SystemExit):
        return f"it called sys.exit({error.code!r})"
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {(lines or [''])[0][:_FIRST_LINE_CHARS]}"


def _place(error: BaseException) -> str:
    """` at FILE:LINE in FUNCTION: CODE` for the last frame of the user's code in the
    error's traceback, or ''."""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = Path(frame.filename)
        if path.is_absolute() and any(path.is_relative_to(own) for own in _OWN_CODE):
            continue
        if frame.filename.startswith("<"):
            continue
        code = f": {frame.line.strip()}" if frame.line else ""
        return f" (at {frame.filename}:{frame.lineno} in {frame.name}{code})"
    return ""


def _eager_failure(error: BaseException, inputs: Sequence[ExampleInput]) -> ExportRefused:
    words = str(error)
    message = f"the model fails on the example inputs: {_in_words(error)}{_place(error)}"
    if "indices" in words and any(given.floating for given in inputs):
        return ExportRefused(
            message,
            "an input the model looks up in a table (token ids) must be integers: give it as "
            "SHAPE:int64:VOCABULARY, e.g. 128:int64:30522",
        )
    if "index out of range" in words:
        return ExportRefused(
            message,
            "integer inputs are drawn below their HIGH (default 2): give token ids the "
            "vocabulary size, e.g. 128:int64:30522, and ids of a small table its rows",
        )
    return ExportRefused(
        message,
        "check each --input's shape (one sample: the batch is added in front), dtype and "
        "order against the model's forward",
    )


def _export_failure(error: BaseException, request: ExportRequest) -> ExportRefused:
    words = str(error)
    if "Constraints violated (batch)" in words or "specialized it to be a constant" in words:
        return ExportRefused(
            "the model's code fixes the batch size (torch.export found it specialized to "
            f"{request.batch}): a view or reshape to a literal batch, a loop or list over the "
            "batch, or a branch on x.shape[0]",
            "use -1 or x.shape[0] where the code names the batch size; or export for one "
            "batch size with --static-batch (the spec's batch_sizes must then be that one)",
        )
    if "data-dependent" in words:
        return ExportRefused(
            "the model's control flow depends on its input values, which an exported graph "
            f"cannot hold{_place(error)}",
            "branch on shapes or settings rather than on tensor values (`if x.sum() > 0`, "
            "int(x.max())); for choices between values use torch.where",
        )
    return ExportRefused(
        f"torch.export.export failed: {_in_words(error)}{_place(error)}",
        "torch.export's documentation says what it supports; --verbose shows torch's own log",
    )


def describe_size(count: int) -> str:
    """A count of parameters in words: 25.6 million."""
    if count < 1000:
        return str(count)
    exponent = min(int(math.log10(count)) // 3, 3)
    unit = ("", "thousand", "million", "billion")[exponent]
    return f"{count / 1000**exponent:.1f} {unit}"
