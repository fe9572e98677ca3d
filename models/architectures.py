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


POLICY_IMAGE = (32, 32, 3)
"""One camera frame as a robot delivers it: height, width, channels (uint8)."""
POLICY_JOINTS = 7
POLICY_TOKENS = 8
POLICY_VOCABULARY = 64


class PolicyPreprocess(nn.Module):
    """The policy's observation as its model takes it: the camera's uint8 HWC frame to a
    normalized float CHW image (what torchvision's ToTensor and Normalize do, without a
    resize), the joint state scaled to about unit range, the instruction's tokens as they are."""

    mean: torch.Tensor
    std: torch.Tensor
    joint_scale: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))
        self.register_buffer("joint_scale", torch.full((POLICY_JOINTS,), 1 / 3.14159))

    def forward(
        self, image: torch.Tensor, state: torch.Tensor, tokens: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        pixels = image.permute(0, 3, 1, 2).to(torch.float32) / 255.0
        return (pixels - self.mean) / self.std, state * self.joint_scale, tokens


class TinyPolicy(nn.Module):
    """A policy's shape in miniature: a conv image encoder, a joint-state MLP and the
    instruction's mean token embedding, joined by an action head (one action per joint)."""

    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
        )
        self.state = nn.Sequential(nn.Linear(POLICY_JOINTS, width), nn.ReLU())
        self.embed = nn.Embedding(POLICY_VOCABULARY, 16)
        self.head = nn.Sequential(
            nn.Linear(16 + width + 16, width), nn.ReLU(), nn.Linear(width, POLICY_JOINTS)
        )

    def forward(
        self, image: torch.Tensor, state: torch.Tensor, tokens: torch.Tensor
    ) -> torch.Tensor:
        joined = torch.cat(
            [self.encoder(image), self.state(state), self.embed(tokens).mean(dim=1)], dim=1
        )
        actions: torch.Tensor = self.head(joined)
        return actions


class PolicyPostprocess(nn.Module):
    """The action head's raw outputs to joint commands: squashed, then scaled to each joint's
    limit, so no command leaves its range."""

    limits: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("limits", torch.linspace(1.0, 2.5, POLICY_JOINTS))

    def forward(self, actions: torch.Tensor) -> torch.Tensor:
        commands: torch.Tensor = torch.tanh(actions) * self.limits
        return commands
