"""Each result whole in the pod's result lake, where its env names one (contract/lake.py).

A variant's whole result (every sample, every stage, the fingerprint) is written once, as
one object at `raw_key` of the pod's workflow, cluster, Job, the variant's id and the pod's
name. The copies that travel on (the log line, the termination message) then carry the
object's key, sha256 and size (`stored`), or why it is not there (`store_error`): a store
that is down, refuses, is full, hangs or cuts the upload costs the result nothing, since
it still travels as it always has. The store gets `STORE_BUDGET_S` of the pod's time in
all, so that a hanging store cannot hold a GPU for long; boto3 is loaded only for a pod
whose env names a store.
"""

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from contract import objectstore
from contract.config import POD_NAME_ENV
from contract.lake import (
    CLUSTER_ENV,
    JOB_NAME_ENV,
    RESULTS_URL_ENV,
    LakeUrl,
    LakeUrlError,
    StoredObject,
    parse_lake_url,
    raw_key,
)
from contract.result import STORE_ERROR_LIMIT, BenchResult, result_json

log = logging.getLogger(__name__)

STORE_BUDGET_S: Final = 60.0
"""The most a pod spends on its store, all its variants together: each write waits at most
what is left of it, and once it is spent no variant tries."""

NOT_TRIED: Final = "not_tried"
"""`store_error`'s kind where the budget was spent before this variant's write."""
UNADDRESSED: Final = "unaddressed"
"""`store_error`'s kind where the pod's env names a store but no key can be made (a bad
URL, a missing name); every other kind is the store's (contract.objectstore.StoreErrorKind)."""
LIMITS: Final = objectstore.Limits(connect_s=5.0, read_s=20.0, attempts=2)
"""Each request's bounds: a store that answers slowly but answers gets a second try within
the budget; one that hangs is cut by the budget first."""

Put = Callable[[str, bytes], StoredObject]
"""Writes bytes at a key of the lake's bucket once (the object it holds); raises where not."""


@dataclass(frozen=True)
class Attempt:
    """What names this pod's objects: its lake, and the folders of their keys."""

    lake: LakeUrl
    workflow: str
    cluster: str
    job: str
    pod: str

    def key(self, variant: str) -> str:
        return raw_key(
            self.lake,
            workflow=self.workflow,
            cluster=self.cluster,
            job=self.job,
            variant=variant,
            attempt=self.pod,
        )


def attempt_from(env: Mapping[str, str], workflow: str) -> Attempt:
    """The pod's attempt as its env names it; LakeUrlError (masked) where it cannot."""
    lake = parse_lake_url(env[RESULTS_URL_ENV])
    missing = [name for name in (CLUSTER_ENV, JOB_NAME_ENV, POD_NAME_ENV) if not env.get(name)]
    if missing:
        raise LakeUrlError(f"the pod's env names a result lake but not {', '.join(missing)}")
    attempt = Attempt(lake, workflow, env[CLUSTER_ENV], env[JOB_NAME_ENV], env[POD_NAME_ENV])
    attempt.key("v")  # each folder's name checked now, not per variant
    return attempt


def _connect(env: Mapping[str, str], lake: LakeUrl) -> Put:
    """A put-once into `lake`'s bucket through the one client (contract/objectstore.py),
    built from the standard AWS variables with `LIMITS`: boto3 is loaded only now."""
    store = objectstore.ObjectStore.for_lake(lake, env, LIMITS)
    return store.put_once


def _reason(error: BaseException) -> str:
    """A failed write in words, its kind first: the store's classified reason where it gave
    one (masked), the exception's type otherwise."""
    if isinstance(error, objectstore.StoreError):
        return f"{error.kind.value}: {error}"
    return f"{objectstore.StoreErrorKind.OTHER.value}: {type(error).__name__}: {error}"


class ResultLake:
    """Writes this pod's results to its lake, within `budget_s` in all."""

    def __init__(
        self,
        attempt: Attempt | None,
        connect: Callable[[], Put] | None,
        *,
        problem: str | None = None,
        budget_s: float = STORE_BUDGET_S,
    ) -> None:
        self._attempt = attempt
        self._connect = connect
        self._put: Put | None = None
        self._problem = problem
        self._budget_s = budget_s
        self._spent_s = 0.0

    @classmethod
    def from_env(
        cls, env: Mapping[str, str], workflow: str, budget_s: float = STORE_BUDGET_S
    ) -> "ResultLake | None":
        """The pod's lake, None where its env names none. One it names but cannot be written
        to (a bad URL, a folder of the key missing) is a lake whose every result says why."""
        if RESULTS_URL_ENV not in env:
            return None
        try:
            attempt = attempt_from(env, workflow)
        except LakeUrlError as error:
            log.error("results are not stored in the lake: %s", error)
            return cls(None, None, problem=f"{UNADDRESSED}: {error}", budget_s=budget_s)
        return cls(attempt, lambda: _connect(env, attempt.lake), budget_s=budget_s)

    def store(self, result: BenchResult) -> BenchResult:
        """`result` with where the lake holds it (`stored`) or why it does not
        (`store_error`); written once, within what is left of the budget."""
        if result.variant is None:
            return result  # a failure before any variant: whole in the message already
        written = self._problem or self._write(result.variant.id, result_json(result).encode())
        if isinstance(written, StoredObject):
            log.info(
                "variant %d: stored whole in the lake at %s", result.variant.index, written.key
            )
            return result.model_copy(update={"stored": written})
        problem = written[:STORE_ERROR_LIMIT]
        log.warning(
            "variant %d: not stored in the lake (%s); its result travels in the log line and "
            "the termination message",
            result.variant.index,
            problem,
        )
        return result.model_copy(update={"store_error": problem})

    def _write(self, variant: str, data: bytes) -> StoredObject | str:
        """The object written, or why it was not."""
        assert self._attempt is not None and self._connect is not None
        connect = self._connect
        left = self._budget_s - self._spent_s
        if left <= 0:
            return f"{NOT_TRIED}: the {self._budget_s:g} s the pod gives its store are spent"
        key = self._attempt.key(variant)
        outcome: list[StoredObject | BaseException] = []

        def write() -> None:
            try:
                if self._put is None:
                    self._put = connect()
                outcome.append(self._put(key, data))
            except Exception as error:
                outcome.append(error)

        # A thread bounds the write whatever the client does: the process exits at once when
        # done (runner/__main__.py), so one abandoned in a hanging store holds nothing.
        started = time.monotonic()
        writer = threading.Thread(target=write, name="lake-write", daemon=True)
        writer.start()
        writer.join(left)
        self._spent_s += time.monotonic() - started
        if not outcome:
            self._spent_s = self._budget_s
            timed_out = objectstore.StoreErrorKind.TIMED_OUT.value
            return f"{timed_out}: no answer within the {left:.1f} s left of the store's budget"
        if isinstance(outcome[0], BaseException):
            return _reason(outcome[0])
        return outcome[0]
