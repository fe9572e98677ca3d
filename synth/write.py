"""Writing the generated trees so that they are never half-written.

Each top-level folder (dist/, clusters/) is written in full next to its destination and
then swapped in with renames; files of removed workflows disappear because the new tree
never had them. If anything fails before the swap, the old tree is untouched.
"""

import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath


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


def write_trees(root: Path, files: Mapping[PurePosixPath, str]) -> list[PurePosixPath]:
    """Replace each top-level folder named in `files` with exactly those files.

    Returns the paths that were added, changed or removed.
    """
    folders = sorted({path.parts[0] for path in files})
    changed = []
    for folder in folders:
        wanted = {path: text for path, text in files.items() if path.parts[0] == folder}
        current = tree(root, folder)
        changed += sorted(
            path for path in wanted.keys() | current.keys() if wanted.get(path) != current.get(path)
        )
        if wanted == current:
            continue
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
    return changed
