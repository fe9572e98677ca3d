"""Reading a file that a spec names, or that is a spec: only a regular file inside the
repository, and only up to a size.

A spec arrives in a pull request, and the CI job that validates it holds secrets. A symlink
(or a folder on the way that is one) could lead to a process's environment under /proc or a
key in a home directory, and whatever synth reads may end up in dist/. So every path is
resolved first, and anything that leaves the repository, or is not a regular file, is refused
before a byte of it is read.
"""

import os
import stat
from pathlib import Path, PurePosixPath
from typing import Final

from contract.bounded import read_at_most
from contract.text import unprintable

_SYSTEM_TREES: Final = (Path("/proc"), Path("/sys"), Path("/dev"))
"""Their files pretend to be regular files and hold a machine's secrets and devices."""


class RepoFileError(Exception):
    """A path a spec names, or a spec file itself, that synth will not read."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class Missing(RepoFileError):
    """A path that names nothing."""


class TooLarge(RepoFileError):
    """A regular file inside the repository that is over the size allowed for it."""

    def __init__(self, shown: str, size: int, limit: int) -> None:
        super().__init__(f"{shown} is {size:,} bytes, more than the {limit:,} allowed")
        self.size = size


def read_inside(root: Path, relative: str, limit: int) -> bytes:
    """The bytes of the regular file `relative` (to `root`), at most `limit` of them.

    Raises RepoFileError (TooLarge for size) if the path holds a character that does not
    print as itself, is absolute, climbs with '..', resolves outside `root` (through a
    symlink anywhere on the way), lies under /proc, /sys or /dev, or is not a regular file.
    """
    path = _resolve(root, relative)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOFOLLOW: the path was
        # resolved, so a symlink here appeared since, and is refused.
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        raise RepoFileError(f"{relative} cannot be opened ({error.strerror})") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise RepoFileError(f"{relative} is not a regular file")
        if status.st_size > limit:
            raise TooLarge(relative, status.st_size, limit)
        with os.fdopen(descriptor, "rb", closefd=False) as file:
            data = read_at_most(file, limit)
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise TooLarge(relative, len(data), limit)
    return data


def _resolve(root: Path, relative: str) -> Path:
    found = unprintable(relative)
    if found is not None:
        raise RepoFileError(
            f"{relative!r} holds {found}: no path synth reads holds one",
            "rename the file and name it without the character",
        )
    named = PurePosixPath(relative)
    if named.is_absolute() or ".." in named.parts:
        raise RepoFileError(
            f"{relative!r} must be a path inside the repository, relative to its root"
        )
    base = root.resolve()
    try:
        path = (base / named).resolve(strict=True)
    except FileNotFoundError:
        raise Missing(f"{relative} does not exist") from None
    except (OSError, RuntimeError) as error:
        raise RepoFileError(f"{relative} cannot be resolved ({error})") from None
    if not path.is_relative_to(base) or any(path.is_relative_to(t) for t in _SYSTEM_TREES):
        raise RepoFileError(
            f"{relative} leads outside the repository through a symlink",
            "commit the file itself: synth reads nothing from outside the repository",
        )
    return path
