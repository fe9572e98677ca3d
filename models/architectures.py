"""The example models' architectures.

They live apart from the script that exports them because `torch.export` records each
module's qualified name in the `.pt2`: defined in a script run as `__main__`, the bytes
would depend on how the script was started.
"""

import torch
from torch import nn


def mlp(width: int, depth: int, features: int = 64, classes: int = 10) -> nn.Module:
    layers: list[nn.Module] = []
    size = features
    for _ in range(depth):
        layers += [nn.Linear(size, width), nn.ReLU()]
        size = width
    layers.append(nn.Linear(size, classes))
    return nn.Sequential(*layers)


def cnn(channels: int, blocks: int, classes: int = 10) -> nn.Module:
    layers: list[nn.Module] = []
    size = 3
    for block in range(blocks):
        out = channels * 2**block
        layers += [
            nn.Conv2d(size, out, 3, padding=1, bias=False),
            nn.BatchNorm2d(out),
            nn.ReLU(),
            nn.MaxPool2d(2),
        ]
        size = out
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(size, classes)]
    return nn.Sequential(*layers)


class TinyTransformer(nn.Module):
    """A token classifier: embedding, a few encoder layers, mean pooling."""

    def __init__(self, dim: int, layers: int, heads: int = 2, classes: int = 10) -> None:
        super().__init__()
        self.project = nn.Linear(16, dim)
        layer = nn.TransformerEncoderLayer(
            dim, heads, dim_feedforward=dim * 2, dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.head(self.encoder(self.project(tokens)).mean(dim=1))
        return logits
