"""What a `torch.export` archive (.pt2) may hold before torch reads it.

A .pt2 is a zip of JSON and raw tensor bytes, but torch 2.13's loader turns several of its
fields into code: it unpickles weights and constants marked `use_pickle` (with
`weights_only=False`), opaque and custom-object constants, and sample inputs it cannot load
safely; it passes `guards_code` to `exec`, symbolic expressions to `sympy.sympify` (`eval`),
and attribute names and argument names into the Python source it generates for
`ExportedProgram.module()`. A crafted archive can use each of these to run code in the runner,
whatever its sha256 says.

This module checks those fields against what `torch.export.save` writes for a plain exported
program, using only the zip members and their JSON (no torch), so synth applies the same check
at review time that the runner applies before loading. It is a whitelist: what it does not
recognise, it refuses.
"""

import ast
import io
import json
import keyword
import pickletools
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Final

from contract.container import Refused, directory_problem, member_problems, read_member
from contract.inputs import ExpectedInput, declared_inputs, declared_outputs
from contract.text import shown
from contract.weights import LinearWeights, linear_weights

# What torch reads whole, as JSON or text, bounded by what a real export needs. Each is
# parsed in memory: json.loads of crafted JSON takes up to 27 times its size (a real
# model.json 5-8 times), so these bounds are also the check's memory.
MAX_PROGRAM_BYTES: Final = 16 << 20
"""models/model.json. A real export writes 1.4-2.1 KB per graph node (with stack traces):
tiny-transformer's 76 nodes are 106 KB, a 48-layer transformer's 1,686 nodes 2.4 MB; 16 MiB
holds some 8,000 nodes, about 230 such layers."""
MAX_CONFIG_BYTES: Final = 4 << 20
"""The weights' and constants' configs: about 300 bytes per tensor (589 tensors, 181 KB)."""
MAX_SAMPLE_INPUTS_BYTES: Final = 16 << 20
"""The sample inputs, a torch.save zip of example tensors (tiny-cnn's 98 KB hold two 3x64x64
images; a batch of 224x224 images is a few MB)."""
MAX_PICKLE_BYTES: Final = 1 << 20
"""The sample inputs' pickle, which names tensors and containers (163-176 bytes)."""
MAX_TEXT_BYTES: Final = 1 << 20
"""Every other member torch reads whole as text: the format, version and byte-order tags
(at most 40 bytes) and `extra/` files saved alongside."""
MAX_PROBLEMS: Final = 10
MAX_VERSION_CHARS: Final = 64
"""Of the torch version model.json names, which a message quotes (2.13.0+cu126 is 12)."""

MODEL: Final = "model"
"""The one program in an archive: `torch.export.load` returns the one called "model"."""

_FORMAT: Final = "archive_format"
_VERSION: Final = "archive_version"
_MODEL_JSON: Final = f"models/{MODEL}.json"
_WEIGHTS_CONFIG: Final = f"data/weights/{MODEL}_weights_config.json"
_CONSTANTS_CONFIG: Final = f"data/constants/{MODEL}_constants_config.json"
_SAMPLE_INPUTS: Final = f"data/sample_inputs/{MODEL}.pt"
_LEGACY_CONSTANTS: Final = f"data/constants/{MODEL}.pt"
_ALLOWED_PREFIXES: Final = ("data/weights/", "data/constants/", "extra/", ".data/")
_ALLOWED_FILES: Final = frozenset({_FORMAT, _VERSION, "byteorder", _MODEL_JSON, _SAMPLE_INPUTS})
_TEXT_FILES: Final = frozenset({_FORMAT, _VERSION, "byteorder"})
_TEXT_PREFIXES: Final = (".data/", "extra/")
_COMPILED_PREFIXES: Final = {
    "data/aotinductor/": "AOTInductor-compiled code",
    "data/executorch/": "an ExecuTorch program",
    "data/mtia": "MTIA-compiled code",
    "xl_model_weights/": "externally stored weights",
}

_FQN: Final = re.compile(r"[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*")
_SYMBOL: Final = re.compile(r"[a-z]+[0-9]+")
_OPERATOR: Final = re.compile(
    r"torch\.ops\.(aten|prims|quantized_decomposed)\.[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*"
)
_FILE_OPERATORS: Final = frozenset({"torch.ops.aten.from_file", "torch.ops.aten.save"})
"""Operators that read or write a file the graph names."""
_SYMBOLIC_CALLABLES: Final = frozenset(
    {f"_operator.{name}" for name in (
        "getitem", "add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "neg", "pos",
        "abs", "eq", "ne", "lt", "le", "gt", "ge", "and_", "or_", "not_", "invert", "xor",
        "lshift", "rshift",
    )}
    | {f"math.{name}" for name in ("ceil", "floor", "trunc", "sqrt")}
    | {f"torch.{name}" for name in (
        "sym_float", "sym_int", "sym_max", "sym_min", "sym_not", "sym_ite", "sym_sqrt",
        "sym_sum", "_sym_sqrt",
    )}
)  # fmt: skip
"""The Python callables torch's export verifier admits in a graph, for symbolic shapes."""

_SYMPY_FUNCTIONS: Final = frozenset(
    {
        # sympy's own classes, as sympy.srepr writes them
        "Integer", "Rational", "Float", "Symbol", "Add", "Mul", "Mod", "Min", "Max",
        "Abs", "Eq", "Ne", "Lt", "Le", "Gt", "Ge", "Equality", "Unequality", "LessThan",
        "StrictLessThan", "GreaterThan", "StrictGreaterThan", "And", "Or", "Not",
        # torch.utils._sympy.functions, which the deserializer puts in scope
        "FloorDiv", "ModularIndexing", "Where", "PythonMod", "CleanDiv", "CeilToInt",
        "FloorToInt", "CeilDiv", "IntTrueDiv", "FloatTrueDiv", "LShift", "RShift",
        "IsNonOverlappingAndDenseIndicator", "TruncToFloat", "TruncToInt", "RoundToInt",
        "RoundDecimal", "ToFloat", "Identity",
    }
)  # fmt: skip
"""Powers are left out: sympy evaluates a power of two literals exactly, however large."""
_SYMPY_CONSTANTS: Final = frozenset({"oo", "zoo", "nan", "true", "false"})
_SYMPY_ASSUMPTIONS: Final = frozenset(
    {"positive", "negative", "nonnegative", "nonpositive", "integer", "real", "finite", "zero"}
)
_STATE_INPUTS: Final = frozenset({"parameter", "buffer", "tensor_constant"})
_TENSOR_QUERIES: Final = frozenset({"size", "stride", "storage_offset", "dim", "numel"})
_ARITHMETIC: Final = (
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.BitAnd, ast.BitOr,
)  # fmt: skip
_LARGEST_NUMBER: Final = 1 << 63
_KEY: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A string in a guard: torch writes it back into generated code, quoted, so no quotes."""
_PICKLE_STRING: Final = re.compile(r"[A-Za-z0-9_.:]*")
"""A string in sample inputs: module names, storage keys and locations, and dict keys, which
torch writes (quoted) into the guard code it generates from the inputs' paths."""

_PICKLE_GLOBALS: Final = frozenset(
    {"torch._utils _rebuild_tensor_v2", "torch._utils _rebuild_parameter",
     "collections OrderedDict", "torch device"}
    | {f"torch {kind}Storage" for kind in (
        "Float", "Double", "Half", "BFloat16", "Long", "Int", "Short", "Char", "Byte",
        "Bool", "ComplexFloat", "ComplexDouble",
    )}
)  # fmt: skip
"""What `torch.save` of sample input tensors refers to; `weights_only` loading allows these."""
_PICKLE_STRINGS: Final = frozenset({"SHORT_BINUNICODE", "BINUNICODE", "UNICODE", "BINUNICODE8"})
_PICKLE_MEMO: Final = frozenset({"BINPUT", "LONG_BINPUT", "PUT", "MEMOIZE"})
_PICKLE_REFUSED: Final = frozenset(
    {"INST", "OBJ", "NEWOBJ", "NEWOBJ_EX", "EXT1", "EXT2", "EXT4", "PERSID"}
)
_PICKLE_PROTOCOL_OPCODE: Final = b"\x80"

_TORCH: Final = "2.13"
"""The torch release this check is written against (docs/runner.md: an upgrade repeats it)."""
_TREE_SPEC_PROTOCOL: Final = 1
_NAMEDTUPLE: Final = "collections.namedtuple"
"""A namedtuple's spec names its class in its context, which the loader must know."""
_REBUILT_TYPES: Final = frozenset(
    {
        "builtins.tuple",
        "builtins.list",
        "builtins.dict",
        "collections.OrderedDict",
        "collections.defaultdict",
        "collections.deque",
        "torch.Size",
        "torch.fx.immutable_collections.immutable_dict",
        "torch.fx.immutable_collections.immutable_list",
    }
)
"""The pytree containers torch 2.13 registers itself, so that torch.export.load rebuilds
them in a process that imports nothing else (torch.utils._pytree's
SERIALIZED_TYPE_TO_PYTHON_TYPE after `import torch`, less namedtuples)."""


class UnsafeArchive(ValueError):
    """The archive is not a plain exported program; each problem is one sentence, shown
    (contract.text): they quote member names and JSON, which the archive's author chose."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = [shown(problem) for problem in problems]
        super().__init__("; ".join(self.problems))


@dataclass(frozen=True)
class Program:
    """What an archive's model.json says that matters before torch loads it."""

    inputs: tuple[ExpectedInput, ...]
    """The user inputs it declares (empty where it declares none readable)."""
    linear: LinearWeights | None
    """Its Linear weights, which the quantizations reach (contract.weights)."""
    torch_version: str | None
    """The torch release that wrote it, as model.json says."""
    outputs: tuple[ExpectedInput, ...] = ()
    """The user outputs it declares: what a pipeline's next stage is handed."""

    @property
    def linear_share(self) -> float | None:
        """The share of its parameters that are Linear weights."""
        return None if self.linear is None else self.linear.share


def check_archive(source: Path | bytes) -> Program:
    """Raise UnsafeArchive unless `source` is a .pt2 that torch can load without running code;
    return what its program declares."""
    stream: IO[bytes] = io.BytesIO(source) if isinstance(source, bytes) else source.open("rb")
    read = _Read()
    with stream:
        try:
            problems = _container_problems(stream, read)
        except _DAMAGED as error:  # zipfile's end-record reader raises as it looks, too
            problems = [f"its zip structure is damaged ({error})"]
    if problems:
        raise UnsafeArchive(problems[:MAX_PROBLEMS])
    written = read.program.get("torch_version") if isinstance(read.program, dict) else None
    return Program(
        declared_inputs(read.program),
        linear_weights(read.program),
        shown(written[:MAX_VERSION_CHARS]) if isinstance(written, str) else None,
        declared_outputs(read.program),
    )


@dataclass
class _Read:
    """What the checks parsed, for what the caller wants of it afterwards."""

    program: object = None


_DAMAGED: Final = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    NotImplementedError,
    RuntimeError,
    UnicodeDecodeError,
)


def _container_problems(stream: IO[bytes], read: _Read) -> list[str]:
    if not zipfile.is_zipfile(stream):
        stream.seek(0)
        kind = "a pickle" if stream.read(1) == _PICKLE_PROTOCOL_OPCODE else "not a zip archive"
        return [
            f"it is {kind}, not a torch.export program; export the model with "
            "torch.export.export and save it with torch.export.save"
        ]
    too_large = directory_problem(stream)
    if too_large is not None:
        return [too_large]
    size = stream.seek(0, 2)
    with zipfile.ZipFile(stream) as archive:
        return list(_archive_problems(archive, size, read))


class _Members:
    """An archive's members, named relative to its one root folder."""

    def __init__(self, archive: zipfile.ZipFile, root: str) -> None:
        self.archive = archive
        self.root = root
        self.names = [info.filename[len(root) :] for info in archive.infolist()]

    def info(self, name: str) -> zipfile.ZipInfo:
        return self.archive.getinfo(self.root + name)

    def read(self, name: str, limit: int) -> bytes:
        """Raises Refused for a member over `limit`."""
        return read_member(self.archive, self.info(name), name, limit)

    def json(self, name: str, limit: int) -> object:
        return json.loads(self.read(name, limit))


def _archive_problems(archive: zipfile.ZipFile, size: int, read: _Read) -> Iterator[str]:
    infos = archive.infolist()
    container = list(member_problems(infos, size))
    if container:
        yield from container
        return
    names = [info.filename for info in infos]
    if not names:
        yield "it is an empty zip archive"
        return
    root = names[0].split("/", 1)[0] + "/"
    strays = [n for n in names if not n.startswith(root) or ".." in PurePosixPath(n).parts]
    if strays or "\\" in "".join(names):
        yield f"its members do not all sit in one root folder {root!r} (e.g. {strays[:1]})"
        return
    if len(set(names)) != len(names):
        yield "it names a member twice; readers disagree on which copy counts"
        return
    members = _Members(archive, root)
    if _FORMAT not in members.names:
        pickled = "data.pkl" in members.names
        what = "a torch.save checkpoint (pickled)" if pickled else "a zip archive"
        yield (
            f"it is {what}, not a torch.export program; torch.load would run code from it, "
            "so it is refused: save the model with torch.export.save"
        )
        return
    try:
        yield from _layout_problems(members)
        yield from _text_problems(members)
        if _MODEL_JSON in members.names:
            yield from _payload_problems(members)
            yield from _sample_input_problems(members)
            read.program = members.json(_MODEL_JSON, MAX_PROGRAM_BYTES)
            yield from _program_problems(read.program)
    except Refused as error:
        yield str(error)
    except (ValueError, RecursionError) as error:  # json's errors are ValueErrors
        yield f"its JSON cannot be read ({type(error).__name__}: {error})"


def _layout_problems(members: _Members) -> Iterator[str]:
    if members.read(_FORMAT, 16) != b"pt2":
        yield f"{_FORMAT} is not 'pt2'"
    if _MODEL_JSON not in members.names:
        yield f"it has no {_MODEL_JSON}: torch.export.load reads the program called {MODEL!r}"
    for name in members.names:
        if name.endswith("/"):
            continue
        compiled = next(
            (what for p, what in _COMPILED_PREFIXES.items() if name.startswith(p)), None
        )
        if compiled:
            yield (
                f"{name} is {compiled}, which torch would load as native code; benchfleet runs "
                "exported programs only (torch.export.save, without AOTInductor packaging)"
            )
            return
        if name == _LEGACY_CONSTANTS:
            yield (
                f"{name} holds constants in the legacy pickled format; re-save the model with "
                "torch.export.save from a current torch"
            )
        elif name.startswith("models/") and name != _MODEL_JSON:
            yield f"{name} is a second program; an archive holds one, {_MODEL_JSON}"
        elif name not in _ALLOWED_FILES and not name.startswith(_ALLOWED_PREFIXES):
            yield f"{name} is not a member torch.export.save writes"


def _text_problems(members: _Members) -> Iterator[str]:
    """torch reads these whole, as text, without this check reading them: their sizes, which
    a stored member's header gives truly (member_problems checked them against the file)."""
    for name in members.names:
        is_text = name in _TEXT_FILES or name.startswith(_TEXT_PREFIXES)
        size = members.info(name).file_size
        if is_text and size > MAX_TEXT_BYTES:
            yield f"{name} is {size:,} bytes, more than the {MAX_TEXT_BYTES:,} allowed"


def _payload_problems(members: _Members) -> Iterator[str]:
    for config_name, folder in ((_WEIGHTS_CONFIG, "weights"), (_CONSTANTS_CONFIG, "constants")):
        if config_name not in members.names:
            yield f"it has no {config_name}"
            continue
        config = members.json(config_name, MAX_CONFIG_BYTES)
        entries = config.get("config") if isinstance(config, dict) else None
        if not isinstance(entries, dict):
            yield f"{config_name} has no 'config' mapping"
            continue
        for fqn, entry in entries.items():
            yield from _payload_entry_problems(config_name, folder, fqn, entry, members)


def _payload_entry_problems(
    config_name: str, folder: str, fqn: str, entry: object, members: _Members
) -> Iterator[str]:
    where = f"{config_name}: {folder[:-1]} {fqn!r}"
    if not _FQN.fullmatch(fqn):
        yield f"{where} is not a dotted attribute name"
    if not isinstance(entry, dict) or not isinstance(entry.get("path_name"), str):
        yield f"{where} has no path_name"
        return
    path_name = entry["path_name"]
    if path_name.startswith("custom_obj_"):
        yield (
            f"{where} is a TorchScript custom object, which torch would unpickle; export "
            "programs whose state is tensors only"
        )
    elif path_name.startswith("opaque_obj_"):
        yield (
            f"{where} is an opaque Python object, which torch would unpickle (pickle.loads); "
            "export programs whose state is tensors only"
        )
    elif entry.get("use_pickle") is not False:
        yield (
            f"{where} is stored pickled, and torch would unpickle it with weights_only=False, "
            "which runs any code it holds; tensor subclasses (e.g. quantized or distributed "
            "tensors) are saved this way: export with plain tensors (benchfleet quantizes)"
        )
    elif not isinstance(entry.get("tensor_meta"), dict):
        yield f"{where} has no tensor_meta"
    elif f"data/{folder}/{path_name}" not in members.names:
        yield f"{where} names data/{folder}/{path_name}, which the archive lacks"


def _sample_input_problems(members: _Members) -> Iterator[str]:
    """Sample inputs are a torch.save file, which torch loads falling back to full unpickling:
    its pickle may only name what a tensor needs."""
    if _SAMPLE_INPUTS not in members.names:
        return
    data = members.read(_SAMPLE_INPUTS, MAX_SAMPLE_INPUTS_BYTES)
    if not data:
        return
    where = _SAMPLE_INPUTS
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as inner:
            infos = inner.infolist()
            # A zip inside the zip: the same bounds, within the bytes it was given.
            container = next(member_problems(infos, len(data)), None)
            if container is not None:
                yield f"{where}, a torch.save zip: {container}"
                return
            pickles = [info for info in infos if info.filename.endswith("/data.pkl")]
            if len(pickles) != 1:
                yield f"{where} is not one torch.save file"
                return
            pickle = read_member(inner, pickles[0], f"{where}'s pickle", MAX_PICKLE_BYTES)
    except _DAMAGED:
        yield f"{where} is not a torch.save zip file (a bare pickle torch would unpickle)"
        return
    refused = _pickle_refusal(pickle)
    if refused:
        yield f"{where} {refused}, which loading would run; sample inputs must be tensors"


def _pickle_refusal(data: bytes) -> str | None:
    """Why a pickle is more than tensors and containers, or None. Reads opcodes, runs none."""
    strings: list[str] = []
    try:
        for opcode, argument, _ in pickletools.genops(data):
            name = opcode.name
            if name in _PICKLE_STRINGS:
                if not _PICKLE_STRING.fullmatch(str(argument)):
                    return f"holds the string {str(argument)[:40]!r}, not a plain key"
                strings.append(str(argument))
            elif name in _PICKLE_MEMO:
                continue
            elif name in _PICKLE_REFUSED:
                return f"uses the pickle opcode {name}"
            elif name in ("GLOBAL", "STACK_GLOBAL"):
                if name == "GLOBAL":
                    target = str(argument)
                elif len(strings) >= 2:
                    target = f"{strings[-2]} {strings[-1]}"
                else:
                    return "names a global it builds at load time"
                if target not in _PICKLE_GLOBALS:
                    return f"refers to {target.replace(' ', '.')}"
            if name not in _PICKLE_STRINGS:
                strings.clear()
    except ValueError as error:
        return f"is not a well-formed pickle ({error})"
    return None


def _program_problems(program: object) -> Iterator[str]:
    if not isinstance(program, dict):
        yield f"{_MODEL_JSON} is not an object"
        return
    module = program.get("graph_module")
    graph = module.get("graph") if isinstance(module, dict) else None
    if not isinstance(module, dict) or not isinstance(graph, dict):
        yield f"{_MODEL_JSON} has no graph_module.graph"
        return
    yield from _graph_problems(graph)
    yield from _signature_problems(module.get("signature"))
    yield from _call_graph_problems(module.get("module_call_graph"))
    for index, guard in enumerate(_list(program.get("guards_code"))):
        if not (isinstance(guard, str) and _is_guard(guard)):
            yield f"{_MODEL_JSON}: guards_code[{index}] is not a comparison of input shapes"
    ranges = program.get("range_constraints")
    for symbol in ranges if isinstance(ranges, dict) else ():
        if not _is_sympy_expression(symbol):
            yield f"{_MODEL_JSON}: range_constraints key {symbol[:80]!r} is not a symbol"
    for text in _values_of(program, "expr_str"):
        if not (isinstance(text, str) and _is_sympy_expression(text)):
            yield f"{_MODEL_JSON}: expr_str {str(text)[:80]!r} is not a symbolic shape expression"


def _graph_problems(graph: dict[str, object]) -> Iterator[str]:
    if graph.get("custom_obj_values"):
        yield f"{_MODEL_JSON}: the graph holds custom objects (torchbind), which torch unpickles"
    if any(True for _ in _values_of(graph, "as_graph")):
        yield (
            f"{_MODEL_JSON}: the graph has subgraphs (control flow such as torch.cond); "
            "benchfleet runs flat graphs of tensor operators"
        )
    for index, node in enumerate(_list(graph.get("nodes"))):
        target = node.get("target") if isinstance(node, dict) else None
        if not (isinstance(target, str) and _is_allowed_target(target)):
            yield (
                f"{_MODEL_JSON}: node {index} calls {str(target)[:80]!r}, not an ATen, prims "
                "or symbolic-shape operator"
            )


def _is_allowed_target(target: str) -> bool:
    if target in _SYMBOLIC_CALLABLES:
        return True
    return bool(_OPERATOR.fullmatch(target)) and target.rsplit(".", 1)[0] not in _FILE_OPERATORS


def _signature_problems(signature: object) -> Iterator[str]:
    if not isinstance(signature, dict):
        yield f"{_MODEL_JSON} has no graph signature"
        return
    for index, spec in enumerate(_list(signature.get("input_specs"))):
        kind, body = next(iter(spec.items())) if isinstance(spec, dict) and spec else ("", None)
        if kind == "user_input":
            argument = body.get("arg") if isinstance(body, dict) else None
            if not (isinstance(argument, dict) and set(argument) == {"as_tensor"}):
                yield (
                    f"{_MODEL_JSON}: input {index} is not a tensor; the runner feeds tensors, "
                    "and torch writes constant inputs into generated code"
                )
        elif kind not in _STATE_INPUTS:
            what = kind or "nothing"
            yield f"{_MODEL_JSON}: input {index} is a {what}, which the runner cannot supply"
    for key in ("parameter_name", "buffer_name", "tensor_constant_name", "custom_obj_name"):
        for name in _values_of(signature, key):
            if not (isinstance(name, str) and _FQN.fullmatch(name)):
                yield f"{_MODEL_JSON}: {key} {str(name)[:80]!r} is not a dotted attribute name"


def _call_graph_problems(calls: object) -> Iterator[str]:
    for call in _list(calls):
        if not isinstance(call, dict):
            continue
        fqn = call.get("fqn")
        if not (isinstance(fqn, str) and (fqn == "" or _FQN.fullmatch(fqn))):
            yield f"{_MODEL_JSON}: module_call_graph fqn {str(fqn)[:80]!r} is not a module path"
        signature = call.get("signature")
        if not isinstance(signature, dict):
            continue
        for name in _list(signature.get("forward_arg_names")):
            if not (isinstance(name, str) and name.isidentifier() and not keyword.iskeyword(name)):
                yield f"{_MODEL_JSON}: forward argument {str(name)[:80]!r} is not a Python name"
        for key, what in (("in_spec", "inputs"), ("out_spec", "output")):
            problem = _tree_spec_problem(signature.get(key), key, what)
            if problem is not None:
                yield f"{_MODEL_JSON}: {problem}"


def _tree_spec_problem(text: object, key: str, what: str) -> str | None:
    """Why torch.export.load could not rebuild the pytree spec `text` (the signature's `key`)
    of a program's `what` in the runner, or None. A spec names each container's type as it
    was registered where the model was exported; the runner's torch knows its own built-in
    containers only (it imports nothing of the model's code), and fails on any other type
    with "check the warnings above", the warnings on a log nobody reads."""
    if text is None:
        return None
    try:
        protocol, tree = json.loads(text) if isinstance(text, str) else (None, None)
    except (ValueError, TypeError, RecursionError):
        protocol, tree = None, None
    if protocol != _TREE_SPEC_PROTOCOL:
        return f"{key} is not a pytree spec torch {_TORCH} reads"
    pending = [tree]
    while pending:
        node = pending.pop()
        if not isinstance(node, dict) or not isinstance(node.get("children_spec"), list):
            return f"{key} is not a pytree spec torch {_TORCH} reads"
        kind = node.get("type")
        if kind == _NAMEDTUPLE or (kind is not None and kind not in _REBUILT_TYPES):
            named = node.get("context") if kind == _NAMEDTUPLE else kind
            return (
                f"{key}, the structure of the program's {what}, holds a {str(named)[:80]!r}, a "
                "container type registered in the process that exported the model, which the "
                "runner's torch.export.load cannot rebuild (it runs none of the model's code): "
                "export a forward that returns tensors, or a tuple, list or dict of them (a "
                "Hugging Face model: call it with return_dict=False, or return "
                "output.to_tuple())"
            )
        pending.extend(node["children_spec"])
    return None


def _is_guard(text: str) -> bool:
    """A guard compares sizes, strides and numbers of inputs `L[...]`, as torch's tracer writes
    them, e.g. `L['x'].size()[0] <= 1024`."""
    tree = _parse_expression(text)
    return tree is not None and all(_is_guard_node(node) for node in ast.walk(tree))


def _is_guard_node(node: ast.AST) -> bool:
    match node:
        case ast.Expression() | ast.Compare() | ast.BoolOp() | ast.UnaryOp() | ast.BinOp():
            allowed = True
        case ast.cmpop() | ast.boolop() | ast.unaryop() | ast.Load() | ast.Subscript():
            allowed = True
        case ast.operator():
            allowed = isinstance(node, _ARITHMETIC)
        case ast.Constant(value=str() as value):
            allowed = bool(_KEY.fullmatch(value))
        case ast.Constant(value=value):
            allowed = _is_small_number(value)
        case ast.Name(id=name):
            allowed = name == "L"
        case ast.Call(func=ast.Attribute(attr=attr), keywords=[]) | ast.Attribute(attr=attr):
            allowed = attr in _TENSOR_QUERIES
        case _:
            allowed = False
    return allowed


def _is_sympy_expression(text: str) -> bool:
    """A symbolic shape as torch writes it: sympy constructors, symbols like `s31`, numbers."""
    tree = _parse_expression(text)
    return tree is not None and all(_is_sympy_node(node) for node in ast.walk(tree))


def _is_sympy_node(node: ast.AST) -> bool:
    match node:
        case ast.Expression() | ast.BinOp() | ast.UnaryOp() | ast.Compare() | ast.Load():
            allowed = True
        case ast.cmpop() | ast.unaryop():
            allowed = True
        case ast.operator():
            allowed = isinstance(node, _ARITHMETIC)
        case ast.Constant(value=str() as value):
            allowed = bool(_SYMBOL.fullmatch(value))
        case ast.Constant(value=value):
            allowed = _is_small_number(value)
        case ast.Name(id=name):
            allowed = name in _SYMPY_FUNCTIONS or name in _SYMPY_CONSTANTS
            allowed = allowed or bool(_SYMBOL.fullmatch(name))
        case ast.Call(func=ast.Name(id=name)):
            allowed = name in _SYMPY_FUNCTIONS
        case ast.keyword(arg=arg, value=ast.Constant(value=bool())):
            allowed = arg in _SYMPY_ASSUMPTIONS
        case _:
            allowed = False
    return allowed


def _is_small_number(value: object) -> bool:
    return isinstance(value, (int, float)) and abs(value) <= _LARGEST_NUMBER


def _parse_expression(text: str) -> ast.Expression | None:
    if len(text) > 10_000:
        return None
    try:
        return ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _values_of(tree: object, key: str) -> Iterator[object]:
    """Every value stored under `key` anywhere in a JSON tree, walked without recursion."""
    pending = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            if key in node:
                yield node[key]
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
