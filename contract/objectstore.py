"""The one client of the result lake's object store: put once, get bounded, list, delete.

Every command finds the store as every AWS tool does, by the standard variables
(`AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_CA_BUNDLE`, `AWS_ACCESS_KEY_ID` and
`AWS_SECRET_ACCESS_KEY`, or boto3's own chain: web identity, a profile). A custom endpoint
is addressed path-style (an S3-compatible server on a host name or IP serves no
`bucket.host` names). Each call is bounded: connect and read timeouts and a bounded number
of attempts (`Limits`), so a store that hangs costs a caller `Limits.worst_case_s`, not
forever. Every failure is one exception, `StoreError`, whose `kind` says what happened and
whose message names no credential.

boto3 is imported only when a client is built: contract/ is imported by every floor, and
most commands never talk to a store.
"""

import base64
import contextlib
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, NamedTuple

from contract.addresses import masked
from contract.lake import (
    ACCESS_KEY_ENV,
    CA_BUNDLE_ENV,
    ENDPOINT_ENV,
    REGION_ENV,
    SECRET_KEY_ENV,
    LakeUrl,
    StoredObject,
    sha256_of,
)

DEFAULT_REGION: Final = "us-east-1"
"""Where no region is set: S3-compatible servers accept any, AWS's own S3 answers any
bucket's requests from there with a redirect botocore follows."""
_LEGACY_REGION_ENV: Final = "AWS_DEFAULT_REGION"
DELETE_BATCH: Final = 1000
"""The most keys one DeleteObjects request may name (S3's limit)."""
LIST_PAGE: Final = 1000
"""The most keys one ListObjectsV2 answer holds (S3's limit)."""
MAX_LISTED: Final = 100_000
"""The most keys `list` returns unless a caller asks for more: past that it refuses."""


class StoreErrorKind(StrEnum):
    """What went wrong talking to the store, as a caller decides what to do next."""

    UNREACHABLE = "unreachable"
    """No connection (refused, no route, name unknown, TLS failed, dropped mid-transfer)."""
    TIMED_OUT = "timed_out"
    """Connected, or trying to, but no answer within the limits: a hanging store."""
    DENIED = "denied"
    """403: these credentials may not do this (or there are no credentials)."""
    FULL = "full"
    """The bucket's quota or the server's disk is used up."""
    EXISTS = "exists"
    """A put-once found another object already at the key (412, or 409 on a race)."""
    MISSING = "missing"
    """404: no such key, or no such bucket."""
    TOO_LARGE = "too_large"
    """Larger than the caller asked for (or the store accepts)."""
    OTHER = "other"
    """Anything else the store answered; the message quotes it."""


class StoreError(Exception):
    """A store operation that failed; `kind` says how. The message is masked."""

    def __init__(self, kind: StoreErrorKind, message: str) -> None:
        super().__init__(masked(message))
        self.kind = kind

    def __reduce__(self) -> tuple[type["StoreError"], tuple[StoreErrorKind, str]]:
        # Crosses a process boundary (a worker pool's) with its kind.
        return (StoreError, (self.kind, str(self)))


@dataclass(frozen=True)
class Limits:
    """How long one call may take: each attempt's connect and read timeouts, and attempts.

    A read timeout bounds each wait for bytes, not a whole transfer that keeps moving.
    """

    connect_s: float = 5.0
    read_s: float = 30.0
    attempts: int = 3
    """All attempts together, the first included (botocore's standard retry mode)."""

    @property
    def worst_case_s(self) -> float:
        """The longest a call that never gets an answer takes, backoff aside (botocore's
        standard mode sleeps at most 20 s between attempts, usually well under 1 s)."""
        return self.attempts * (self.connect_s + self.read_s)


DEFAULT_LIMITS: Final = Limits()


class Listed(NamedTuple):
    """A key `list` found, and its size."""

    key: str
    bytes: int


# Spelled outside ObjectStore, whose `list` hides the builtin inside its body.
Listing = list[Listed]
Keys = list[str]

_CODES: Final = {
    "AccessDenied": StoreErrorKind.DENIED,
    "InvalidAccessKeyId": StoreErrorKind.DENIED,
    "SignatureDoesNotMatch": StoreErrorKind.DENIED,
    "AllAccessDisabled": StoreErrorKind.DENIED,
    "NoSuchKey": StoreErrorKind.MISSING,
    "NoSuchBucket": StoreErrorKind.MISSING,
    "NotFound": StoreErrorKind.MISSING,
    "PreconditionFailed": StoreErrorKind.EXISTS,
    "ConditionalRequestConflict": StoreErrorKind.EXISTS,
    "QuotaExceeded": StoreErrorKind.FULL,
    "XMinioStorageFull": StoreErrorKind.FULL,
    "InsufficientStorage": StoreErrorKind.FULL,
    "StorageFull": StoreErrorKind.FULL,
    "EntityTooLarge": StoreErrorKind.TOO_LARGE,
}
"""S3's error codes (and those of common S3-compatible servers) by kind."""
_STATUSES: Final = {
    403: StoreErrorKind.DENIED,
    404: StoreErrorKind.MISSING,
    412: StoreErrorKind.EXISTS,
    413: StoreErrorKind.TOO_LARGE,
    507: StoreErrorKind.FULL,
}


def error_kind(error: BaseException) -> StoreErrorKind:
    """The kind of a botocore or socket error."""
    from botocore import exceptions as boto  # noqa: PLC0415 - see the module's docstring

    if isinstance(error, (boto.ConnectTimeoutError, boto.ReadTimeoutError, TimeoutError)):
        return StoreErrorKind.TIMED_OUT
    if isinstance(
        error,
        (
            boto.EndpointConnectionError,
            boto.ConnectionClosedError,
            boto.ResponseStreamingError,
            boto.IncompleteReadError,
            ConnectionError,
        ),
    ):
        return StoreErrorKind.UNREACHABLE
    if isinstance(error, boto.NoCredentialsError):
        return StoreErrorKind.DENIED
    if isinstance(error, boto.ClientError):
        code = str(error.response.get("Error", {}).get("Code", ""))
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return _CODES.get(code) or _STATUSES.get(status, StoreErrorKind.OTHER)
    return StoreErrorKind.OTHER


@contextlib.contextmanager
def _classified(what: str) -> Iterator[None]:
    """Re-raise whatever the client raises in the block as a StoreError about `what`."""
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415

    try:
        yield
    except (BotoCoreError, ClientError, OSError) as error:
        kind = error_kind(error)
        raise StoreError(kind, f"{what}: {kind.value}: {error}") from error


def client(env: Mapping[str, str] | None = None, limits: Limits = DEFAULT_LIMITS) -> Any:
    """A boto3 S3 client configured from the standard AWS variables in `env` (the process's
    own by default), bounded by `limits`. Credentials not in `env` come from boto3's chain
    (web identity, a profile), which reads the process's environment."""
    import boto3  # noqa: PLC0415 - see the module's docstring
    from botocore.config import Config  # noqa: PLC0415

    env = os.environ if env is None else env
    endpoint = env.get(ENDPOINT_ENV) or None
    config = Config(
        connect_timeout=limits.connect_s,
        read_timeout=limits.read_s,
        retries={"mode": "standard", "total_max_attempts": limits.attempts},
        # A custom endpoint's server names no bucket as a host; AWS's own takes either.
        s3={"addressing_style": "path" if endpoint else "auto"},
        # Checksums only where an operation requires one (DeleteObjects): put_once sends
        # its own SHA-256, and servers that know no CRC trailer refuse botocore's default.
        request_checksum_calculation="when_required",
        response_checksum_validation="when_required",
    )
    session = boto3.session.Session(
        aws_access_key_id=env.get(ACCESS_KEY_ENV) or None,
        aws_secret_access_key=env.get(SECRET_KEY_ENV) or None,
        region_name=env.get(REGION_ENV) or env.get(_LEGACY_REGION_ENV) or DEFAULT_REGION,
    )
    return session.client(
        "s3",
        endpoint_url=endpoint,
        verify=env.get(CA_BUNDLE_ENV) or None,
        config=config,
    )


class ObjectStore:
    """One bucket of a store, through one client; keys are whole keys in the bucket (as
    contract.lake's `raw_key` and `run_key` spell them)."""

    def __init__(self, bucket: str, s3: Any, endpoint: str | None = None) -> None:
        self.bucket = bucket
        self._s3 = s3
        self._where = f"s3://{bucket}" + (f" at {endpoint}" if endpoint else "")

    @classmethod
    def for_lake(
        cls, lake: LakeUrl, env: Mapping[str, str] | None = None, limits: Limits = DEFAULT_LIMITS
    ) -> "ObjectStore":
        """The store of `lake`'s bucket, found from the standard AWS variables in `env`."""
        env = os.environ if env is None else env
        endpoint = env.get(ENDPOINT_ENV) or None
        try:
            with _classified(f"{lake}: connecting"):
                s3 = client(env, limits)
        except ValueError as error:  # botocore's word for an endpoint that is no URL
            raise StoreError(
                StoreErrorKind.OTHER, f"{lake}: {ENDPOINT_ENV}={endpoint}: {error}"
            ) from error
        return cls(lake.bucket, s3, endpoint)

    def _about(self, verb: str, key: str) -> str:
        return f"{verb} s3://{self.bucket}/{key} ({self._where})"

    def put_once(self, key: str, data: bytes) -> StoredObject:
        """Write `data` at `key` unless an object is there already (If-None-Match: *).

        Where one is there with the same bytes (this very write, retried after its answer
        was lost, or another writer's identical copy), that is success: the object is
        written exactly once either way. Other bytes there: StoreError `exists`.
        """
        stored = StoredObject(key=key, sha256=sha256_of(data), bytes=len(data))
        try:
            with _classified(self._about("put", key)):
                self._s3.put_object(
                    Bucket=self.bucket,
                    Key=key,
                    Body=data,
                    IfNoneMatch="*",
                    ChecksumSHA256=base64.b64encode(bytes.fromhex(stored.sha256)).decode(),
                )
        except StoreError as error:
            if error.kind is not StoreErrorKind.EXISTS or not self._holds(stored):
                raise
        return stored

    def _holds(self, stored: StoredObject) -> bool:
        """Whether the object at `stored.key` has exactly `stored`'s bytes."""
        try:
            return sha256_of(self.get(stored.key, max_bytes=stored.bytes)) == stored.sha256
        except StoreError as error:
            if error.kind in {StoreErrorKind.TOO_LARGE, StoreErrorKind.MISSING}:
                return False
            raise

    def get(self, key: str, max_bytes: int) -> bytes:
        """The bytes at `key`; StoreError `too_large`, reading no more than the headers,
        where the object is larger than `max_bytes`."""
        about = self._about("get", key)
        with _classified(about):
            answer = self._s3.get_object(Bucket=self.bucket, Key=key)
            body = answer["Body"]
            try:
                size = int(answer["ContentLength"])
                if size > max_bytes:
                    raise StoreError(
                        StoreErrorKind.TOO_LARGE,
                        f"{about}: too_large: {size} bytes, more than the {max_bytes} asked for",
                    )
                data = bytes(body.read(max_bytes + 1))
            finally:
                body.close()
        # botocore checks a read of a given size against Content-Length only where the
        # stream ended before returning anything: a connection cut midway reads short.
        if len(data) != size:
            raise StoreError(
                StoreErrorKind.UNREACHABLE,
                f"{about}: unreachable: the connection ended after {len(data)} of {size} bytes",
            )
        return data

    def list(self, prefix: str, limit: int = MAX_LISTED, page_size: int = LIST_PAGE) -> Listing:
        """Every key under `prefix` with its size, in key order, `page_size` keys a request;
        StoreError `too_large` where there are more than `limit`."""
        about = self._about("list", prefix)
        found: Listing = []
        with _classified(about):
            pages = self._s3.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=prefix, PaginationConfig={"PageSize": page_size}
            )
            for page in pages:
                contents = page.get("Contents", [])
                found += [Listed(item["Key"], int(item["Size"])) for item in contents]
                if len(found) > limit:
                    raise StoreError(
                        StoreErrorKind.TOO_LARGE, f"{about}: too_large: more than {limit} keys"
                    )
        return found

    def delete(self, keys: Iterable[str]) -> None:
        """Delete `keys` (a key already gone is no error), a thousand a request."""
        batch: Keys = []
        for key in keys:
            batch.append(key)
            if len(batch) == DELETE_BATCH:
                self._delete(batch)
                batch = []
        if batch:
            self._delete(batch)

    def _delete(self, keys: Keys) -> None:
        about = self._about("delete", f"{keys[0]} and {len(keys) - 1} more")
        with _classified(about):
            answer = self._s3.delete_objects(
                Bucket=self.bucket,
                Delete={"Objects": [{"Key": key} for key in keys], "Quiet": True},
            )
        errors = answer.get("Errors") or []
        if errors:
            first = errors[0]
            kind = _CODES.get(str(first.get("Code", "")), StoreErrorKind.OTHER)
            raise StoreError(
                kind,
                f"{self._about('delete', str(first.get('Key')))}: {kind.value}: "
                f"{first.get('Code')}: {first.get('Message')} ({len(errors)} keys not deleted)",
            )
