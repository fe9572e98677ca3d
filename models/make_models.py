"""Build the example models as `torch.export` programs, deterministically.

    python -m models.make_models            # writes models/examples/*.pt2, models/zoo/*.pt2,
                                            # models/policy/*.pt2 and specs/workflows/model-zoo.yaml

Every model is small enough for a ConfigMap (1 MiB), exported with a dynamic batch dimension
so that one file serves every batch size a sweep asks for, and seeded and stripped of stack
traces so that the same torch version writes the same bytes wherever it is installed. The
zoo's spec file is written from the same table, so the two cannot drift apart.
"""

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from torch import nn

from exporter.build import saved_bytes
from exporter.inputs import MAX_BATCH
from models.architectures import (
    POLICY_IMAGE,
    POLICY_JOINTS,
    POLICY_TOKENS,
    POLICY_VOCABULARY,
    PolicyPostprocess,
    PolicyPreprocess,
    TinyPolicy,
    TinyTransformer,
    cnn,
    mlp,
)

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class ModelRecipe:
    """How to build one model and what one sample of its input looks like."""

    name: str
    build: Callable[[], nn.Module]
    sample_shape: tuple[int, ...]


EXAMPLES = (
    ModelRecipe("tiny-mlp", lambda: mlp(width=128, depth=2), (64,)),
    ModelRecipe("tiny-cnn", lambda: cnn(channels=16, blocks=3), (3, 64, 64)),
    ModelRecipe("tiny-transformer", lambda: TinyTransformer(dim=64, layers=2), (32, 16)),
)


def zoo() -> tuple[ModelRecipe, ...]:
    """Fifty models of three families and growing size: the design note's model fleet."""
    recipes = [
        ModelRecipe(f"mlp-w{width}-d{depth}", partial(mlp, width, depth), (64,))
        for width in (16, 24, 32, 40, 48, 56, 64)
        for depth in (1, 2, 3, 4)
    ]
    recipes += [
        ModelRecipe(f"cnn-c{ch}-b{blocks}", partial(cnn, ch, blocks), (3, 32, 32))
        for ch in (4, 6, 8, 10, 12)
        for blocks in (1, 2, 3)
    ]
    recipes += [
        ModelRecipe(
            f"transformer-d{dim}-l{layers}",
            partial(TinyTransformer, dim, layers),
            (16, 16),
        )
        for dim, layers in ((8, 1), (16, 1), (24, 1), (32, 1), (8, 2), (16, 2), (24, 2))
    ]
    return tuple(recipes)


def export_bytes(recipe: ModelRecipe) -> bytes:
    """The `.pt2` file of one recipe: seeded weights, eval mode, dynamic batch."""
    module = _seeded(recipe.build)
    # Drawn after the weights, from the same seeded stream: the program saves its example.
    return _exported(module, (torch.randn(2, *recipe.sample_shape),))


def _exported(module: nn.Module, example: tuple[torch.Tensor, ...]) -> bytes:
    """`module` exported on `example` (batch first in every input, all dynamic)."""
    batch = torch.export.Dim("batch", min=1, max=MAX_BATCH)
    dynamic = tuple({0: batch} for _ in example)
    return saved_bytes(torch.export.export(module, example, dynamic_shapes=dynamic))


def _seeded(build: Callable[[], nn.Module]) -> nn.Module:
    """`build()` in eval mode, its weights drawn from the same seed every time."""
    torch.manual_seed(0)
    return build().eval()


def policy_observation(batch: int = 2) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A raw observation of the example policy, as its robot hands it over: a camera frame
    (uint8, HWC), the joint state (float32), the instruction's token ids (int64)."""
    generator = torch.Generator().manual_seed(0)
    return (
        torch.randint(0, 256, (batch, *POLICY_IMAGE), generator=generator, dtype=torch.uint8),
        torch.randn(batch, POLICY_JOINTS, generator=generator),
        torch.randint(0, POLICY_VOCABULARY, (batch, POLICY_TOKENS), generator=generator),
    )


POLICY = "tiny-policy"
"""The example policy: its model, `<name>.pt2`, between `<name>-preprocess.pt2` and
`<name>-postprocess.pt2` in models/policy/."""


def policy_bytes() -> dict[str, bytes]:
    """The example policy's three programs by file name, each exported on what the stage
    before it hands over (the postprocess on actions of that shape)."""
    # The stages' example inputs are saved in their programs, so they must come out the same
    # on every machine. The preprocess's elementwise arithmetic does; the model's
    # convolutions and matrix products do not (their last bits differ between CPUs' kernels,
    # AVX2 against AVX-512), so the postprocess's example actions are drawn, seeded, in the
    # shape the model hands over.
    observation = policy_observation()
    with torch.no_grad():
        features = _seeded(PolicyPreprocess)(*observation)
        shape = _seeded(TinyPolicy)(*features).shape
    actions = torch.randn(shape, generator=torch.Generator().manual_seed(1))
    return {
        f"{POLICY}-preprocess.pt2": _exported(_seeded(PolicyPreprocess), observation),
        f"{POLICY}.pt2": _exported(_seeded(TinyPolicy), features),
        f"{POLICY}-postprocess.pt2": _exported(_seeded(PolicyPostprocess), (actions,)),
    }


ZOO_SPEC_HEADER = """\
# yaml-language-server: $schema=../schema.json
# Generated by `make models` (models/make_models.py) from the same table as models/zoo/.
id: model-zoo
description: >-
  Benchmark the whole model zoo, fifty models of three families, on T4s in batches of ten
  (the design note's multi-model fleet), to rank them by latency and throughput.
owner: ml-platform@example.com
environment: dev
clusters: [us-east]
benchmark:
  batch_size: 8
  iterations: 200
  warmup_iterations: 20
targets:
  - gpu_type: nvidia-t4
    resources: small
scheduling:
  max_parallel: 10
  priority: low
models:
"""


def zoo_spec(recipes: tuple[ModelRecipe, ...]) -> str:
    """The model-zoo workflow spec for `recipes`."""
    lines = [ZOO_SPEC_HEADER.rstrip("\n")]
    for recipe in recipes:
        shape = ", ".join(str(size) for size in recipe.sample_shape)
        lines += [
            f"  - name: {recipe.name}",
            f"    file: models/zoo/{recipe.name}.pt2",
            f"    inputs: [{{shape: [{shape}]}}]",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="repository root to write into")
    root = parser.parse_args().root
    for folder, recipes in (("examples", EXAMPLES), ("zoo", zoo())):
        (root / "models" / folder).mkdir(parents=True, exist_ok=True)
        for recipe in recipes:
            target = root / "models" / folder / f"{recipe.name}.pt2"
            target.write_bytes(export_bytes(recipe))
            print(f"{target.relative_to(root)}: {target.stat().st_size:,} bytes")
    (root / "models" / "policy").mkdir(parents=True, exist_ok=True)
    for name, content in policy_bytes().items():
        target = root / "models" / "policy" / name
        target.write_bytes(content)
        print(f"{target.relative_to(root)}: {target.stat().st_size:,} bytes")
    spec = root / "specs" / "workflows" / "model-zoo.yaml"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(zoo_spec(zoo()), encoding="utf-8")
    print(f"{spec.relative_to(root)}: {len(zoo())} models")


if __name__ == "__main__":
    main()
