"""Whole results from the lake: the object a pod's runner wrote for each variant, read by the
reference its termination message gives (collector/lakerefs.py), and trusted only once
every byte is checked.

An object is read at most as many bytes as its reference says (and never more than
MAX_RESULT_BYTES), its digest is checked before a byte of it is parsed, it is parsed strictly
as a whole result, and it must be the very variant, Job and attempt its key and its pod
claim. Anything else (missing, partial, another digest, a newer runner's schema, a store that
does not answer, refuses or hangs) is a problem in words for that variant, and gather falls
back to the termination message and the log, as before the lake.

A store that cannot be reached, refuses the collector or does not answer in time is not asked
again by the same gather: one hang costs one client timeout, not one per variant.
"""

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from collector.lakerefs import Reference
from collector.pods import ResultReading, parse_text
from contract.lake import (
    CA_BUNDLE_ENV,
    ENDPOINT_ENV,
    MAX_RESULT_BYTES,
    REGION_ENV,
    LakeUrl,
    LakeUrlError,
    StoredObject,
    raw_key,
    sha256_of,
)
from contract.objectstore import Limits, ObjectStore, StoreError, StoreErrorKind
from contract.records import JobIdentity
from contract.result import BenchResult
from contract.variant import VariantRef

_READERS: Final = 8
"""Objects read at once: enough to hide a round trip, few enough to spare the store."""
LIMITS: Final = Limits(connect_s=5.0, read_s=15.0, attempts=2)
"""How long gather waits for one object: a hanging store costs it this once (40 s)."""
_STORE_WIDE: Final = frozenset(
    {StoreErrorKind.UNREACHABLE, StoreErrorKind.TIMED_OUT, StoreErrorKind.DENIED}
)
"""Failures of the store itself, not of one object: no other object is asked for."""


@dataclass(frozen=True)
class Fetched:
    """What the lake gave for one reference: the whole result, or why not."""

    reference: Reference
    result: BenchResult | None
    problem: str | None
    """In words, naming the object: why its result was not taken from the lake."""
    stored: StoredObject | None = None
    """The object the result was read from."""


@dataclass(frozen=True)
class StoreAddress:
    """Where a cluster's runners write their whole results, as the fleet names it; the
    credentials are not here: the standard AWS variables (or boto3's chain) give them."""

    url: LakeUrl
    endpoint: str
    region: str
    ca_bundle: Path | None = None

    def env(self, base: Mapping[str, str]) -> dict[str, str]:
        """`base` (the process's variables) with this store's endpoint, region and CA."""
        named = {ENDPOINT_ENV: self.endpoint, REGION_ENV: self.region}
        if self.ca_bundle is not None:
            named[CA_BUNDLE_ENV] = str(self.ca_bundle)
        return {**base, **named}


StoreReader = Callable[[Path], Mapping[str, StoreAddress]]
"""Reads the results store of each cluster (by name) from the fleet file under a root."""


@dataclass(frozen=True)
class Claim:
    """What a reference must be: the object of this variant of this Job, by this attempt."""

    job: JobIdentity
    pod: str
    variant: VariantRef | None
    """The variant config.json runs there; None where it is not known (then the entry's)."""


class LakeReader:
    """Reads whole results from one lake for one gather; counts what it read."""

    def __init__(self, lake: LakeUrl, store: ObjectStore) -> None:
        self.lake = lake
        self._store = store
        self._down: str | None = None
        self._down_kind: StoreErrorKind | None = None
        self._lock = threading.Lock()
        self.reads = 0
        """Objects asked of the store."""

    @property
    def down(self) -> str | None:
        """Why the store is not asked any more in this gather, in words; None while it is."""
        return self._down

    def fetch_all(self, wanted: Iterable[tuple[Reference, Claim]]) -> list[Fetched]:
        """Each reference's result, in the order given: the first alone, so that a store that
        is down, refuses or hangs is found out by one request, then the rest a few at a
        time."""
        items = list(wanted)
        if len(items) <= 1:
            return [self.fetch(reference, claim) for reference, claim in items]
        first = self.fetch(*items[0])
        with ThreadPoolExecutor(min(_READERS, len(items) - 1), thread_name_prefix="lake") as pool:
            return [first, *pool.map(lambda item: self.fetch(*item), items[1:])]

    def fetch(self, reference: Reference, claim: Claim) -> Fetched:
        """The whole result `reference` names, checked against `claim`, or why not."""
        stored = self._object(reference, claim)
        if isinstance(stored, str):
            named = reference.key or f"of variant {reference.id}"
            return Fetched(reference, None, f"the lake object {named}: {stored}")
        data = self._verified(stored)
        if isinstance(data, str):
            return Fetched(reference, None, data)
        return self._checked(reference, claim, data, stored)

    def _verified(self, stored: StoredObject) -> bytes | str:
        """The object's bytes, each checked against its reference; or why there are none,
        in words naming the object."""
        data = self._read(stored)
        where = f"the lake object {stored.key}"
        if isinstance(data, str):
            return data
        if len(data) != stored.bytes:
            return (
                f"{where} holds {len(data)} bytes, its reference says {stored.bytes}: a "
                "partial or another object, not trusted"
            )
        if (digest := sha256_of(data)) != stored.sha256:
            return (
                f"{where}'s bytes hash to {digest}, its reference says {stored.sha256}: not trusted"
            )
        return data

    def _read(self, stored: StoredObject) -> bytes | str:
        """At most the bytes the reference says, from a store still asked; or why none."""
        if stored.bytes > MAX_RESULT_BYTES:
            return (
                f"the lake object {stored.key}: its reference says {stored.bytes} bytes, more "
                f"than a result may hold ({MAX_RESULT_BYTES}): not read"
            )
        if self._down_kind is not None:
            return (
                f"the lake object {stored.key} was not asked for: the store was "
                f"{self._down_kind.value} earlier in this gather"
            )
        with self._lock:
            self.reads += 1
        try:
            return self._store.get(stored.key, max_bytes=stored.bytes)
        except StoreError as error:
            if error.kind in _STORE_WIDE:
                with self._lock:
                    if self._down_kind is None:
                        self._down_kind = error.kind
                        self._down = f"{error} (not asked again in this gather)"
            # Its words name the object already.
            return str(error)

    def _checked(
        self, reference: Reference, claim: Claim, data: bytes, stored: StoredObject
    ) -> Fetched:
        where = f"the lake object {stored.key}"
        try:
            text = data.decode()
        except UnicodeDecodeError as error:
            return Fetched(reference, None, f"{where} is not UTF-8 text: {error.reason}")
        result, problem = parse_text(text, where)
        if result is None:
            return Fetched(reference, None, problem)
        if result.compacted or result.variant is None:
            return Fetched(reference, None, f"{where} holds no whole result of a named variant")
        expected = claim.variant
        if result.variant != expected and expected is not None:
            return Fetched(
                reference,
                None,
                f"{where} holds the result of variant {result.variant.id} (index "
                f"{result.variant.index}), not of {expected.id} (index {expected.index})",
            )
        if (reference.index, reference.id) != (result.variant.index, result.variant.id):
            return Fetched(
                reference,
                None,
                f"{where} holds the result of variant {result.variant.id}, but the termination "
                f"message gives it for index {reference.index}, {reference.id}",
            )
        return Fetched(reference, result, problem, stored)

    def _object(self, reference: Reference, claim: Claim) -> StoredObject | str:
        """The object `reference` names, at the key where this variant's attempt writes (a
        stub's key is that one); or why it names none."""
        variant_id = claim.variant.id if claim.variant else reference.id
        if variant_id is None:
            return "its reference names no variant"
        job = claim.job
        try:
            expected = raw_key(
                self.lake,
                workflow=job.workflow,
                cluster=job.cluster,
                job=job.job,
                variant=variant_id,
                attempt=claim.pod,
            )
        except LakeUrlError as error:
            return f"no object of this lake can hold it: {error}"
        if reference.key not in (None, expected):
            return (
                f"pod {claim.pod} writes variant {variant_id} of Job {job.job} at {expected} "
                "in this lake: another variant's, Job's or lake's object, not read"
            )
        return StoredObject(key=expected, sha256=reference.sha256, bytes=reference.bytes)


def covered(message: ResultReading, fetched: Sequence[Fetched]) -> bool:
    """Whether the lake gave the whole result of every result a pod's termination message
    lists (each result, each stub): neither the message's copies nor the log are needed."""
    found = {f.result.variant.index for f in fetched if f.result and f.result.variant}
    listed = [r.variant.index if r.variant else None for r in message.results]
    listed += [stub.index for stub in message.omitted]
    return bool(listed) and all(index in found for index in listed)
