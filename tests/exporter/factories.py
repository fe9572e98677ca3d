"""Factories shaped like what users bring to `benchfleet export`, small enough to export in a
test: a torchvision-style classifier, a Hugging Face-style encoder class built from its config
(its output a registered ModelOutput dataclass), and one model per hurdle."""

import dataclasses
import logging
import os
import sys
import warnings
from typing import Final

import torch
from torch import nn
from torch.nn import functional
from torch.utils import _pytree as pytree

VOCABULARY: Final = 100
WIDE: Final = 600
"""A Linear layer this wide weighs 1.4 MB: more than a committed model may."""


def classifier(classes: int = 1000, width: int = 8) -> nn.Module:
    """A torchvision-style factory: keyword arguments with defaults, a module in training
    mode (batch norm) as torchvision returns it."""
    return nn.Sequential(
        nn.Conv2d(3, width, 3, padding=1),
        nn.BatchNorm2d(width),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(width, classes),
    )


@dataclasses.dataclass
class EncoderConfig:
    """A Hugging Face-style config: the model class is built from one."""

    hidden_size: int = 16
    vocab_size: int = VOCABULARY


@dataclasses.dataclass
class EncoderOutput:
    """A Hugging Face-style ModelOutput: a dataclass registered as a pytree node in the
    exporting process only, with an optional field left None."""

    last_hidden_state: torch.Tensor
    pooler_output: torch.Tensor
    attentions: torch.Tensor | None = None


pytree.register_dataclass(EncoderOutput, serialized_type_name="benchfleet_tests.EncoderOutput")


class Encoder(nn.Module):
    """A Hugging Face-style model class: `config_class`, token ids and a mask in."""

    config_class = EncoderConfig

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(0.1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> EncoderOutput:
        hidden = self.dropout(self.dense(self.embeddings(input_ids)))
        hidden = hidden * attention_mask[..., None].to(hidden.dtype)
        return EncoderOutput(hidden, torch.tanh(hidden[:, 0]))


class _Linear(nn.Module):
    def __init__(self, width: int = 8) -> None:
        super().__init__()
        self.linear = nn.Linear(width, 4)


class StaticBatch(_Linear):
    """Reshapes to the batch it was written for."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.linear(x).reshape(2, -1)
        return out


class ValueBranch(_Linear):
    """Branches on its input's values."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.linear(x)
        return out if x.sum() > 0 else -out


class TextOutput(_Linear):
    """Returns a string beside its tensor."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, str]:
        return self.linear(x), "done"


class AlwaysDropout(_Linear):
    """Drops out whatever its mode: functional dropout with training=True."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return functional.dropout(self.linear(x), 0.5, training=True)


class Noisy(_Linear):
    """Adds fresh noise on every call."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.linear(x) + torch.randn(x.shape[0], 4)
        return out


class ExitsInForward(_Linear):
    """Ends the process when it is called, as a script's model might."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        sys.exit(0)


def exits() -> nn.Module:
    """A factory that ends the process with success instead of returning a model."""
    sys.exit(0)


def wide() -> nn.Module:
    """A model over 1 MiB."""
    return nn.Linear(WIDE, WIDE)


def broken(depth: int = 1) -> nn.Module:
    """A factory that fails."""
    raise ValueError(f"no model of depth {depth}")


def not_a_module() -> int:
    """A factory that returns something else than a model."""
    return 3


CHATTER: Final = ("a deprecated enum", "a library's own log", "a C++ extension's notice")


def chatty() -> nn.Module:
    """A factory whose libraries talk as torchao's import does: a Python warning, a log
    record of a library's own logger, and a line written straight to file descriptor 2."""
    warnings.warn(CHATTER[0], DeprecationWarning, stacklevel=1)
    logging.getLogger("chatty_library").warning(CHATTER[1])
    os.write(2, f"W0000 {CHATTER[2]}\n".encode())
    return nn.Linear(8, 4)


def zero_head(classes: int = 10) -> nn.Module:
    """A classifier whose head is initialised to zeros, as torchvision's ViT builds one
    without trained weights: every input gives zeros."""
    head = nn.Linear(8, classes)
    nn.init.zeros_(head.weight)
    nn.init.zeros_(head.bias)
    return nn.Sequential(nn.Linear(8, 8), nn.ReLU(), head)


class ToTensor(nn.Module):
    """torchvision's ToTensor and Normalize as a pipeline's preprocess: a uint8 HWC frame to
    a normalized float CHW image."""

    def forward(self, frame: torch.Tensor) -> torch.Tensor:
        image = frame.permute(0, 3, 1, 2).to(torch.float32) / 255.0
        return (image - 0.5) / 0.25


class Argmax(nn.Module):
    """A classifier's postprocess: the class of highest score."""

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        return scores.argmax(dim=1)


class Broken(nn.Module):
    """A postprocess whose forward fails on what the model returns."""

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        return scores.view(3, -1, 7)
