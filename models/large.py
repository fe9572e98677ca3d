"""Models of real architecture and size, with random weights, for the tests and benches that
need what teams bring: a ResNet-50 (25.6 million parameters, ~100 MB as fp32) and a
BERT-base encoder (110 million, ~440 MB).

Plain torch modules of the same layers and shapes as torchvision's `resnet50` and Hugging
Face's `BertModel`, so that nothing heavier than torch is installed to build them, and so
that they meet the same hurdles: the encoder takes int64 token ids and returns a registered
dataclass output, as a Hugging Face model returns its `ModelOutput`. They are exported with
`benchfleet export` (exporter/), never committed:

    python -m models.large DIR      # writes DIR/resnet50.pt2 and DIR/bert-base.pt2 and
                                    # prints their models: entries

The tests (tests/large_models.py) and bench/large_models.py build them so.
"""

import argparse
import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Final

import torch
from torch import nn
from torch.nn import functional
from torch.utils import _pytree as pytree

ROOT: Final = Path(__file__).resolve().parent.parent
VOCABULARY: Final = 30_522
MAX_POSITIONS: Final = 512
TOKEN_TYPES: Final = 2


def _bottleneck_downsample(inputs: int, outputs: int, stride: int) -> nn.Module | None:
    if stride == 1 and inputs == outputs:
        return None
    return nn.Sequential(
        nn.Conv2d(inputs, outputs, 1, stride=stride, bias=False), nn.BatchNorm2d(outputs)
    )


class Bottleneck(nn.Module):
    """torchvision's ResNet v1.5 bottleneck: the stride on the 3x3 convolution."""

    expansion: Final = 4

    def __init__(self, inputs: int, width: int, stride: int) -> None:
        super().__init__()
        outputs = width * self.expansion
        self.conv1 = nn.Conv2d(inputs, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, outputs, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(outputs)
        self.relu = nn.ReLU()
        self.downsample = _bottleneck_downsample(inputs, outputs, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        identity = x if self.downsample is None else self.downsample(x)
        result: torch.Tensor = self.relu(out + identity)
        return result


def resnet50(classes: int = 1000) -> nn.Module:
    """ResNet-50: stages of 3, 4, 6 and 3 bottlenecks, 224x224 RGB images in."""
    layers: list[nn.Module] = [
        nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        nn.MaxPool2d(3, stride=2, padding=1),
    ]
    inputs = 64
    for stage, (blocks, width) in enumerate(((3, 64), (4, 128), (6, 256), (3, 512))):
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            layers.append(Bottleneck(inputs, width, stride))
            inputs = width * Bottleneck.expansion
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(inputs, classes)]
    return nn.Sequential(*layers)


@dataclasses.dataclass
class EncoderOutput:
    """What a Hugging Face encoder returns (`BaseModelOutputWithPooling`), registered as a
    pytree node under a name of its own as `transformers` registers its outputs: exported
    as-is, its archive names a type the runner's torch cannot rebuild."""

    last_hidden_state: torch.Tensor
    pooler_output: torch.Tensor


pytree.register_dataclass(EncoderOutput, serialized_type_name="benchfleet_models.EncoderOutput")


class _SelfAttention(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)
        self.output = nn.Linear(dim, dim)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, dim = x.shape
        return x.view(batch, length, self.heads, dim // self.heads).transpose(1, 2)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        query, key, value = (self._split(f(hidden)) for f in (self.query, self.key, self.value))
        attended = functional.scaled_dot_product_attention(query, key, value, attn_mask=mask)
        batch, _, length, _ = attended.shape
        merged = attended.transpose(1, 2).reshape(batch, length, -1)
        result: torch.Tensor = self.output(merged)
        return result


class _EncoderLayer(nn.Module):
    def __init__(self, dim: int, heads: int, intermediate: int) -> None:
        super().__init__()
        self.attention = _SelfAttention(dim, heads)
        self.attention_norm = nn.LayerNorm(dim, eps=1e-12)
        self.intermediate = nn.Linear(dim, intermediate)
        self.output = nn.Linear(intermediate, dim)
        self.output_norm = nn.LayerNorm(dim, eps=1e-12)

    def forward(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        hidden = self.attention_norm(hidden + self.attention(hidden, mask))
        expanded = functional.gelu(self.intermediate(hidden))
        result: torch.Tensor = self.output_norm(hidden + self.output(expanded))
        return result


class BertEncoder(nn.Module):
    """BERT's encoder and pooler: token, position and token-type embeddings, post-norm layers
    of self-attention and a GELU feed-forward, and the first token's tanh projection."""

    def __init__(
        self, dim: int = 768, layers: int = 12, heads: int = 12, intermediate: int = 3072
    ) -> None:
        super().__init__()
        self.word_embeddings = nn.Embedding(VOCABULARY, dim)
        self.position_embeddings = nn.Embedding(MAX_POSITIONS, dim)
        self.token_type_embeddings = nn.Embedding(TOKEN_TYPES, dim)
        self.embedding_norm = nn.LayerNorm(dim, eps=1e-12)
        self.dropout = nn.Dropout(0.1)
        self.layers = nn.ModuleList(_EncoderLayer(dim, heads, intermediate) for _ in range(layers))
        self.pooler = nn.Linear(dim, dim)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor
    ) -> EncoderOutput:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        hidden = (
            self.word_embeddings(input_ids)
            + self.position_embeddings(positions)
            + self.token_type_embeddings(token_type_ids)
        )
        hidden = self.dropout(self.embedding_norm(hidden))
        # Masked keys get the most negative score, as transformers' sdpa path does.
        blocked = (1.0 - attention_mask[:, None, None, :].to(hidden.dtype)) * torch.finfo(
            hidden.dtype
        ).min
        for layer in self.layers:
            hidden = layer(hidden, blocked)
        pooled = torch.tanh(self.pooler(hidden[:, 0]))
        return EncoderOutput(last_hidden_state=hidden, pooler_output=pooled)


def bert_base() -> nn.Module:
    """BERT-base: 12 layers of width 768, 12 heads, a 30,522-token vocabulary."""
    return BertEncoder()


RESNET: Final = "resnet50"
BERT: Final = "bert-base"
BERT_URL: Final = f"https://models.example.com/{BERT}.pt2"
"""Where BERT-base's entry says it is served (`--url`): the tests and the bench serve it from
a server of their own on loopback, and point the pods there."""
EXPORTS: Final = {
    RESNET: ("models.large:resnet50", ("--input", "3,224,224")),
    BERT: (
        "models.large:bert_base",
        # token ids below the vocabulary, an attention mask, token types below 2
        ("--input", "128:int64:30522", "--input", "128:int64", "--input", "128:int64:2",
         "--url", BERT_URL),
    ),
}  # fmt: skip
"""`benchfleet export`'s factory and arguments for each model."""


@dataclasses.dataclass(frozen=True)
class LargeModel:
    """An exported model and the `models:` entry `benchfleet export` printed for it."""

    path: Path
    entry: str

    @property
    def size(self) -> int:
        return self.path.stat().st_size


def export(name: str, folder: Path) -> LargeModel:
    """`benchfleet export` of model `name` into `folder`, in a process of its own as a user
    runs it."""
    factory, arguments = EXPORTS[name]
    path = folder / f"{name}.pt2"
    done = subprocess.run(
        [sys.executable, "-m", "benchfleet", "export", factory, *arguments, "--out", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"benchfleet export of {name} failed:\n{done.stderr}")
    return LargeModel(path, done.stdout)


def export_all(folder: Path) -> dict[str, LargeModel]:
    """Every model of EXPORTS, exported into `folder`."""
    return {name: export(name, folder) for name in EXPORTS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="where to write the .pt2 files")
    folder = parser.parse_args().folder
    folder.mkdir(parents=True, exist_ok=True)
    for model in export_all(folder).values():
        print(f"# {model.path}: {model.size:,} bytes")
        print(model.entry, end="")


if __name__ == "__main__":
    main()
