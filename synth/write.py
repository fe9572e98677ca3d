"""Writing the generated files so that they are never half-written, and only synth's own.

dist/ is synth's alone: it is written in full next to its destination and then swapped in
with renames, so files of removed workflows disappear because the new tree never had them,
and if anything fails before the swap the old tree is untouched. In clusters/<cluster>/
synth owns one file (FLUX_FILE); `flux bootstrap` writes flux-system/ beside it, and a team
may add files of its own: those are never touched. Each file there is replaced atomically.
"""

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Literal

from contract.layout import CLUSTERS, DIST, FLUX_FILE, GENERATED_HEADER


def tree(root: Path, folder: str) -> dict[PurePosixPath, str]:
    """The current text of every file under `root/folder`, by path relative to `root`."""
    base = root / folder
    if not base.is_dir():
        return {}
    return {
        PurePosixPath(path.relative_to(root).as_posix()): path.read_text(encoding="utf-8")
        for path in sorted(base.rglob("*"))
        if path.is_file()
    }


def is_generated(path: PurePosixPath, text: str) -> bool:
    """Whether a file (by its path from the repository root) is synth's: anything in dist/;
    in clusters/<cluster>/ its Flux file, or a kustomization.yaml an earlier synth wrote (it
    hid flux-system/ from Flux, so it is removed)."""
    if path.parts[0] == DIST:
        return True
    if path.parts[0] != CLUSTERS or len(path.parts) != 3:
        return False
    return path.name == FLUX_FILE or (
        path.name == "kustomization.yaml" and text.startswith(GENERATED_HEADER)
    )


def generated(root: Path) -> dict[PurePosixPath, str]:
    """The files synth wrote and owns: all of dist/, and its own files in clusters/."""
    files = {**tree(root, DIST), **tree(root, CLUSTERS)}
    return {path: text for path, text in files.items() if is_generated(path, text)}


def _swap_folder(root: Path, folder: str, wanted: Mapping[PurePosixPath, str]) -> None:
    staging = Path(tempfile.mkdtemp(prefix=f".{folder}-", dir=root))
    try:
        for path, text in wanted.items():
            target = staging / Path(*path.parts[1:])
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        destination = root / folder
        retired = root / f".{folder}-retired"
        shutil.rmtree(retired, ignore_errors=True)
        if destination.exists():
            destination.rename(retired)
        staging.rename(destination)
        shutil.rmtree(retired, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _replace_files(
    root: Path, wanted: Mapping[PurePosixPath, str], current: Mapping[PurePosixPath, str]
) -> None:
    for path, text in wanted.items():
        if current.get(path) == text:
            continue
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, target)
    for path in current.keys() - wanted.keys():
        (root / path).unlink()
        folder = (root / path).parent
        if not any(folder.iterdir()):
            folder.rmdir()


Change = Literal["added", "changed", "removed"]
"""What writing did to a file: said per file, so a new workflow's files are not taken for
edits of existing ones."""


def write_trees(root: Path, files: Mapping[PurePosixPath, str]) -> dict[PurePosixPath, Change]:
    """Make synth's files under `root` exactly `files`, leaving everyone else's alone.

    Returns each path that was added, changed or removed, in path order, with which.
    """
    current = generated(root)
    changed: dict[PurePosixPath, Change] = {
        path: "added" if path not in current else "removed" if path not in files else "changed"
        for path in sorted(files.keys() | current.keys())
        if files.get(path) != current.get(path)
    }
    wanted_dist = {path: text for path, text in files.items() if path.parts[0] == DIST}
    if wanted_dist != {p: t for p, t in current.items() if p.parts[0] == DIST}:
        _swap_folder(root, DIST, wanted_dist)
    _replace_files(
        root,
        {path: text for path, text in files.items() if path.parts[0] == CLUSTERS},
        {path: text for path, text in current.items() if path.parts[0] == CLUSTERS},
    )
    return changed
