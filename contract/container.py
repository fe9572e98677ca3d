"""The zip container of a .pt2, opened and read within bounds, whatever its headers claim.

`torch.export.save` (like `torch.save`, whose zip holds a program's sample inputs) writes
every member uncompressed, 64-byte aligned so that tensors can be mapped in place: its
C++ writer has no other mode. An archive with compressed members is therefore not one it
wrote, and it is where a bomb hides: a 255 KB file whose `model.json` inflates to 256 MiB
took validation to 6.3 GiB and a MemoryError. Refusing compression bounds what torch (and
this check) can read by the file's own size; the bounds below then keep each piece of JSON
or text to what a real export needs, read with a count rather than trusting a header.

The end record is read before `zipfile` parses the central directory, which it holds in
memory whole, and the members' sizes must add up to no more than the file holds (members
that overlap, zip64 sizes that claim more).
"""

import struct
import zipfile
from collections.abc import Iterator
from typing import IO, Final

from contract.text import unprintable

MAX_MEMBERS: Final = 65_535
"""Members in one archive: a zip's count without zip64. An export has one per weight and
tensor constant plus eight (tiny-transformer 37, a 48-layer transformer 589, a 70B-parameter
language model about 730)."""
MAX_DIRECTORY_BYTES: Final = 16 << 20
"""The central directory, which zipfile reads whole before anything can be counted: 46
bytes and a name per member, about 7 MiB for MAX_MEMBERS of the names torch writes."""
MAX_NAME_CHARS: Final = 512
"""A member's name: the archive's folder (the file's name, at most 255 bytes on most file
systems) and a path torch spells (`data/weights/weight_123`, at most 45 characters)."""

_STORED: Final = zipfile.ZIP_STORED
_END: Final = b"PK\x05\x06"
_END_SIZE: Final = 22
_END64_LOCATOR: Final = b"PK\x06\x07"
_LOCATOR_SIZE: Final = 20
_END64: Final = b"PK\x06\x06"
_END64_SIZE: Final = 56
_MAX_COMMENT: Final = 0xFFFF


class Refused(Exception):
    """The container is not one torch wrote, or exceeds a bound; one sentence."""


def directory_problem(stream: IO[bytes]) -> str | None:
    """Why the central directory that the end record announces is too large to read, or
    None. Reads the end record as zipfile does (the last one, and the zip64 record just
    before its locator) without reading the directory itself."""
    stream.seek(0, 2)
    size = stream.tell()
    tail_start = max(0, size - (_END_SIZE + _MAX_COMMENT + _LOCATOR_SIZE + _END64_SIZE))
    stream.seek(tail_start)
    tail = stream.read()
    end = tail.rfind(_END)
    if end < 0 or len(tail) < end + _END_SIZE:
        return None  # zipfile says what is wrong with it
    entries, directory_size = struct.unpack("<HI", tail[end + 10 : end + 16])
    locator = end - _LOCATOR_SIZE
    record = locator - _END64_SIZE
    is_zip64 = tail[locator : locator + 4] == _END64_LOCATOR and tail[record : record + 4] == _END64
    if record >= 0 and is_zip64:
        entries, directory_size = struct.unpack("<QQ", tail[record + 32 : record + 48])
    if entries > MAX_MEMBERS:
        return f"its directory lists {entries:,} members, more than {MAX_MEMBERS:,}"
    if directory_size > MAX_DIRECTORY_BYTES:
        return (
            f"its directory is {directory_size:,} bytes, more than {MAX_DIRECTORY_BYTES:,} "
            "(names and headers of at most 65,535 members)"
        )
    return None


def member_problems(infos: list[zipfile.ZipInfo], file_size: int) -> Iterator[str]:
    """What is wrong with the members' names and sizes, before any is read: each refusal
    once, naming the first member it applies to."""
    if len(infos) > MAX_MEMBERS:
        yield f"it has {len(infos):,} members, more than {MAX_MEMBERS:,}"
        return
    long_name = next((info for info in infos if len(info.filename) > MAX_NAME_CHARS), None)
    if long_name is not None:
        yield (
            f"a member's name is {len(long_name.filename):,} characters long, more than "
            f"{MAX_NAME_CHARS}"
        )
        return
    for info in infos:
        found = unprintable(info.filename)
        if found is not None:
            yield f"member {info.filename!r}'s name holds {found}"
            return
    compressed = next((info for info in infos if info.compress_type != _STORED), None)
    if compressed is not None:
        yield (
            f"member {compressed.filename} is compressed; torch.export.save stores members "
            "as they are, so this archive was rewritten by another tool: commit the file "
            "torch.export.save wrote"
        )
        return
    lying = next((info for info in infos if info.file_size != info.compress_size), None)
    if lying is not None:
        yield f"member {lying.filename}'s header gives two sizes for data stored as it is"
        return
    total = sum(info.compress_size for info in infos)
    if total > file_size:
        yield (
            f"its members claim {total:,} bytes in a file of {file_size:,}: they overlap, or "
            "their headers claim more than the file holds"
        )


def read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, limit: int) -> bytes:
    """The bytes of a member, counted as they are read: at most `limit`, whatever its
    header says. Raises Refused beyond it."""
    if info.file_size > limit:
        raise Refused(f"{name} is {info.file_size:,} bytes, more than the {limit:,} allowed")
    with archive.open(info) as member:
        data = member.read(limit + 1)
    if len(data) > limit:
        raise Refused(f"{name} holds more than the {limit:,} bytes allowed")
    return data
