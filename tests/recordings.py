"""A safetensors writer for tests: the library is not a dependency of this project, and the
format is 8 bytes of header length, a JSON header and the tensors' bytes (contract/recorded.py)."""

import json
import struct
from collections.abc import Mapping
from pathlib import Path

import torch

SAFETENSORS_DTYPES = {
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.bool: "BOOL",
    torch.uint8: "U8",
}


def safetensors_bytes(tensors: Mapping[str, torch.Tensor]) -> bytes:
    """`tensors` as a safetensors file holds them, in name order."""
    header: dict[str, object] = {}
    data = bytearray()
    for name in sorted(tensors):
        tensor = tensors[name].contiguous()
        raw = tensor.reshape(-1).view(torch.uint8).numpy().tobytes() if tensor.numel() else b""
        header[name] = {
            "dtype": SAFETENSORS_DTYPES[tensor.dtype],
            "shape": list(tensor.shape),
            "data_offsets": [len(data), len(data) + len(raw)],
        }
        data += raw
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + bytes(data)


def write_recording(path: Path, tensors: Mapping[str, torch.Tensor]) -> Path:
    path.write_bytes(safetensors_bytes(tensors))
    return path


def frames(name: str, count: int, shape: tuple[int, ...], seed: int = 1) -> dict[str, torch.Tensor]:
    """`count` recorded samples of input `name`, each of `shape`, named as a recording names
    them (`<name>.<sample>`), each sample's values distinct from the others'."""
    generator = torch.Generator().manual_seed(seed)
    return {f"{name}.{k}": torch.randn(shape, generator=generator) for k in range(count)}
