"""What a retried group need not run again: the variants of an index that an earlier attempt
measured and the collector has stored, handed back to the retry's pod.

A pod of an Indexed Job has no credential and nothing that outlives it, so on its own it
cannot learn what its predecessor reported. The collector, which follows the Jobs and stores
each variant as its attempt ends, can: it writes the ids into a ConfigMap named after the Job
(`reported_configmap`), owned by the Job so that it goes when the Job does. Every grouped pod
mounts it, optionally (until a retry is due it does not exist), at REPORTED_DIR: one file per
completion index, a variant id per line. The runner reads its index's file before each
variant and skips what is listed. Where nobody writes the ConfigMap (no gather running while
the retry starts), the retry runs every variant again, as before: nothing is lost either way.
"""

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Final

REPORTED_DIR: Final = "/reported"
REPORTED_ENV: Final = "REPORTED_PATH"
"""The env variable that names REPORTED_DIR to the runner (a local run maps it elsewhere)."""
REPORTED_VOLUME: Final = "reported"
REPORTED_SUFFIX: Final = "-reported"
MAX_REPORTED_BYTES: Final = 64 * 1024
"""More than the ids of the largest group (contract.config.MAX_VARIANTS_PER_POD) take: a
file beyond it is not the collector's, and nothing in it is trusted."""
_ID: Final = re.compile(r"v[0-9a-z]{1,64}")


def reported_configmap(job: str) -> str:
    """The name of the ConfigMap that hands Job `job`'s stored variants back to its pods."""
    return f"{job}{REPORTED_SUFFIX}"


def reported_text(ids: Iterable[str]) -> str:
    """A ConfigMap value: the ids, sorted, one per line."""
    return "".join(f"{variant_id}\n" for variant_id in sorted(set(ids)))


def read_reported(folder: Path, index: int) -> frozenset[str]:
    """The ids handed back for completion index `index`; none when there is no such file.

    Raises ValueError when the file is there but is not what the collector writes (too large,
    a line that is no variant id): the caller then runs everything rather than guess."""
    path = folder / str(index)
    try:
        with path.open("rb") as file:
            data = file.read(MAX_REPORTED_BYTES + 1)
    except FileNotFoundError:
        return frozenset()
    except OSError as error:
        raise ValueError(f"cannot read {path}: {error.strerror}") from error
    if len(data) > MAX_REPORTED_BYTES:
        raise ValueError(f"{path} is over {MAX_REPORTED_BYTES} bytes")
    ids = data.decode("ascii", errors="replace").split()
    if bad := [variant_id for variant_id in ids if not _ID.fullmatch(variant_id)]:
        raise ValueError(f"{path} holds {bad[0]!r}, which is no variant id")
    return frozenset(ids)
