"""`make synth`: load the specs, render every chart, swap dist/ and clusters/ in."""

from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from synth.advice import warnings
from synth.cache import CACHE_DIR, RenderCache
from synth.load import load_specs
from synth.problems import Problem
from synth.render import render
from synth.write import Change, write_trees


@dataclass(frozen=True)
class SynthResult:
    """What a synth run changed, and what it warns about."""

    changed: dict[PurePosixPath, Change]
    """Each file added, changed or removed, with which."""
    warnings: list[Problem]


def synth(root: Path) -> SynthResult:
    """Regenerate dist/ and clusters/ under `root`, reusing unchanged workflows' files.

    Raises SpecProblems, before writing anything, if any spec is invalid.
    """
    specs = load_specs(root)
    changed = write_trees(root, render(specs, RenderCache(root / CACHE_DIR)))
    return SynthResult(changed=changed, warnings=warnings(specs))
