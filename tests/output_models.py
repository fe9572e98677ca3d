"""Real exported programs shaped like what users bring: outputs that are not plain tensors,
as a Hugging Face model's `ModelOutput` is, and an archive written by another torch.

Built by the tests from plain torch modules (no transformers): a dataclass registered as a
pytree node with a serialized type name is what `transformers` registers its outputs as.
"""

import collections
import dataclasses
import json
import zipfile
from pathlib import Path
from typing import Final

import torch
from torch.utils import _pytree as pytree

OUTPUT_TYPE: Final = "benchfleet_tests.ModelOutput"
"""The name the dataclass output is registered under, which an archive's out_spec names."""
PAIR_TYPE: Final = "benchfleet_tests.Pair"
ANOTHER_TORCH: Final = "2.99.0"


@dataclasses.dataclass
class ModelOutput:
    """Two named tensors, like a Hugging Face model's output."""

    logits: torch.Tensor
    hidden: torch.Tensor


Pair = collections.namedtuple("Pair", ["logits", "hidden"])

pytree.register_dataclass(ModelOutput, serialized_type_name=OUTPUT_TYPE)
pytree._register_namedtuple(Pair, serialized_type_name=PAIR_TYPE)


class _Encoder(torch.nn.Module):
    """A linear layer whose forward returns its output in the container `kind` names."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 4)
        self.kind = kind

    def forward(self, x: torch.Tensor) -> object:
        hidden = self.linear(x)
        logits = hidden.relu()
        if self.kind == "dataclass":
            return ModelOutput(logits, hidden)
        if self.kind == "namedtuple":
            return Pair(logits, hidden)
        return {"logits": logits, "hidden": hidden}


INPUT_SHAPE: Final = (8,)
"""One sample's shape; the export's batch is dynamic."""


def export_encoder(kind: str, path: Path) -> Path:
    """Save an encoder whose output is a `kind` ("dataclass", "namedtuple" or "dict") of
    tensors, with a dynamic batch, to `path`."""
    batch = torch.export.Dim("batch", max=64)
    program = torch.export.export(
        _Encoder(kind).eval(), (torch.randn(2, *INPUT_SHAPE),), dynamic_shapes=({0: batch},)
    )
    torch.export.save(program, path)
    return path


def written_by_another_torch(source: Path, path: Path) -> Path:
    """`source` as a torch whose export schema is newer than ours would write it: its
    model.json's schema version and torch version changed, every member stored as before."""
    with zipfile.ZipFile(source) as archive, zipfile.ZipFile(path, "w") as out:
        for info in archive.infolist():
            data = archive.read(info)
            if info.filename.endswith("models/model.json"):
                program = json.loads(data)
                program["schema_version"] = {"major": 99, "minor": 0}
                program["torch_version"] = ANOTHER_TORCH
                data = json.dumps(program).encode()
            out.writestr(info, data)
    return path
