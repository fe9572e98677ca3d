"""Fixtures for the runner tests: real example models and config.json files built for them."""

import hashlib
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import pytest
import torch

from contract.config import InputConfig, ModelConfig, PhaseConfig, RunConfig, VariantConfig
from tests.conftest import REPO_ROOT

EXAMPLES = REPO_ROOT / "models" / "examples"
EXAMPLE_INPUTS = {"tiny-mlp": (64,), "tiny-cnn": (3, 64, 64), "tiny-transformer": (32, 16)}
QUICK = PhaseConfig(min_iterations=3, min_time_s=0.0, max_iterations=5, max_time_s=5.0)

MakeConfig = Callable[..., RunConfig]


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def python_m_runner(
    env: dict[str, str], timeout_s: float = 120
) -> subprocess.CompletedProcess[str]:
    """`python -m runner` as a pod runs it, with only `env` (PATH included) for its env."""
    return subprocess.run(
        [sys.executable, "-m", "runner"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def group_variant(
    index: int, model: str, precision: str = "fp32", shape: tuple[int, ...] | None = None
) -> VariantConfig:
    """A variant of an example model at batch 2, with its own inputs unless `shape` says
    otherwise."""
    return VariantConfig(
        index=index,
        id=f"v{index:012x}",
        model=model,
        precision=precision,
        quantization="none",
        batch_size=2,
        inputs=(InputConfig(shape=shape or EXAMPLE_INPUTS[model], dtype="float32"),),
    )


def group_config(
    variants: tuple[VariantConfig, ...],
    groups: tuple[tuple[int, ...], ...],
    *,
    measure: PhaseConfig = QUICK,
    interleave: bool = False,
) -> RunConfig:
    """config.json for pods running `groups` of example-model `variants`, as synth writes it."""
    return RunConfig(
        workflow="test",
        target="cpu",
        device_type="cpu",
        gpus=0,
        warmup=QUICK,
        measure=measure,
        models={
            model: ModelConfig(
                source="file", location=f"{model}.pt2", sha256=sha256_of(EXAMPLES / f"{model}.pt2")
            )
            for model in sorted({variant.model for variant in variants})
        },
        variants=variants,
        groups=groups,
        interleave=interleave,
    )


@pytest.fixture(scope="session")
def models_dir() -> Path:
    """The committed example models (tiny-mlp, tiny-cnn, tiny-transformer)."""
    return EXAMPLES


@pytest.fixture
def make_config() -> MakeConfig:
    """Build a one-variant config.json for an example model, as synth would."""

    def make(
        model: str = "tiny-mlp",
        *,
        precision: str = "fp32",
        quantization: str = "none",
        batch_size: int = 2,
        device_type: str = "cpu",
        location: str | None = None,
        sha256: str | None = None,
        source: Literal["file", "image_path", "url"] = "file",
    ) -> RunConfig:
        return RunConfig(
            workflow="test",
            target=device_type,
            device_type=device_type,
            gpus=0 if device_type == "cpu" else 1,
            warmup=QUICK,
            measure=QUICK,
            models={
                model: ModelConfig(
                    source=source,
                    location=location or f"{model}.pt2",
                    sha256=sha256 or sha256_of(EXAMPLES / f"{model}.pt2"),
                )
            },
            variants=(
                VariantConfig(
                    index=0,
                    id="v000000000000",
                    model=model,
                    precision=precision,
                    quantization=quantization,
                    batch_size=batch_size,
                    inputs=(InputConfig(shape=EXAMPLE_INPUTS.get(model, (8,)), dtype="float32"),),
                ),
            ),
        )

    return make


class _ConvOnly(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled: torch.Tensor = self.conv(x).mean(dim=(2, 3))
        return pooled


@pytest.fixture(scope="session")
def conv_only_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real exported program with a convolution and no linear layer."""
    path = tmp_path_factory.mktemp("models") / "conv-only.pt2"
    module = _ConvOnly().eval()
    torch.export.save(torch.export.export(module, (torch.randn(2, 3, 8, 8),)), path)
    return path


@pytest.fixture
def export_load_forbidden(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if torch is ever asked to load the file."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("torch.export.load was called on a file that should be refused")

    monkeypatch.setattr(torch.export, "load", refuse)


@pytest.fixture(scope="session")
def unbounded_batch_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real exported MLP (64 features) whose batch dimension has no upper bound."""
    path = tmp_path_factory.mktemp("models") / "unbounded.pt2"
    module = torch.nn.Linear(64, 4).eval()
    batch = torch.export.Dim("batch")
    program = torch.export.export(module, (torch.randn(2, 64),), dynamic_shapes=({0: batch},))
    torch.export.save(program, path)
    return path
