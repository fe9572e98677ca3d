"""Reading a file up to a bound, holding only what it has.

`file.read(limit + 1)` allocates the whole bound first, whatever the file holds: 64 MiB for
every record in results/, however small. Reading in chunks holds what there is, and stops
one byte past the bound, which is how a caller tells a file over it.
"""

from typing import BinaryIO, Final

_CHUNK: Final = 1 << 20


def read_at_most(file: BinaryIO, limit: int) -> bytes:
    """The file's bytes from where it stands, at most `limit` + 1 of them."""
    chunks, size = [], 0
    while size <= limit:
        chunk = file.read(min(_CHUNK, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
