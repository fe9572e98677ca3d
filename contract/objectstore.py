"""The one client of the result lake's S3-compatible store, and its errors in words.

Minimal, for the runner's put-once (branch lake-runner); branch lake-server brings the whole
of it (get, list, delete). The client comes from the standard AWS variables
(contract/lake.py) with bounded timeouts and retries, so no call hangs for long; boto3 is
imported only when a client is built, so that importing this module loads no client.
"""

from collections.abc import Mapping
from typing import Any, Final, Literal

from contract.lake import ACCESS_KEY_ENV, CA_BUNDLE_ENV, ENDPOINT_ENV, REGION_ENV, SECRET_KEY_ENV

CONNECT_TIMEOUT_S: Final = 5.0
READ_TIMEOUT_S: Final = 20.0
ATTEMPTS: Final = 2
"""A request's bounds: the store's own limits on top of which a caller sets its budget."""
DEFAULT_REGION: Final = "us-east-1"

Kind = Literal["unreachable", "timed out", "denied", "full", "exists", "missing", "failed"]


class StoreError(Exception):
    """A request the store did not do, classified (`kind`); never quotes a credential."""

    def __init__(self, kind: Kind, detail: str) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind: Kind = kind


def client_from_env(env: Mapping[str, str]) -> Any:
    """An S3 client for the store the standard AWS variables in `env` name."""
    import boto3  # type: ignore[import-untyped]  # noqa: PLC0415
    from botocore.config import Config  # type: ignore[import-untyped]  # noqa: PLC0415

    config = Config(
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=READ_TIMEOUT_S,
        retries={"total_max_attempts": ATTEMPTS, "mode": "standard"},
        s3={"addressing_style": "path"},
    )
    return boto3.session.Session().client(
        "s3",
        endpoint_url=env.get(ENDPOINT_ENV) or None,
        region_name=env.get(REGION_ENV) or DEFAULT_REGION,
        aws_access_key_id=env.get(ACCESS_KEY_ENV) or None,
        aws_secret_access_key=env.get(SECRET_KEY_ENV) or None,
        verify=env.get(CA_BUNDLE_ENV) or None,
        config=config,
    )


_CODES: Final[Mapping[str, Kind]] = {
    "AccessDenied": "denied",
    "403": "denied",
    "InvalidAccessKeyId": "denied",
    "SignatureDoesNotMatch": "denied",
    "PreconditionFailed": "exists",
    "412": "exists",
    "NoSuchBucket": "missing",
    "QuotaExceeded": "full",
    "EntityTooLarge": "full",
    "InsufficientStorage": "full",
    "507": "full",
}


def classified(error: Exception) -> StoreError:
    """`error`, as boto3 raised it, in the store's words."""
    from botocore import exceptions  # type: ignore[import-untyped]  # noqa: PLC0415

    if isinstance(error, exceptions.ClientError):
        code = str(error.response.get("Error", {}).get("Code", ""))
        status = str(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))
        kind = _CODES.get(code) or _CODES.get(status) or "failed"
        return StoreError(kind, f"the store answered {status or '?'} {code}".rstrip())
    if isinstance(error, exceptions.ConnectTimeoutError | exceptions.ReadTimeoutError):
        return StoreError("timed out", type(error).__name__)
    if isinstance(error, exceptions.NoCredentialsError | exceptions.PartialCredentialsError):
        return StoreError("denied", "no credentials in the environment")
    if isinstance(error, exceptions.BotoCoreError):
        return StoreError("unreachable", f"{type(error).__name__}: {error}")
    return StoreError("failed", type(error).__name__)


def put_once(client: Any, bucket: str, key: str, data: bytes) -> None:
    """Write `data` at `key` unless an object is there already; StoreError where not done."""
    try:
        client.put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
    except Exception as error:
        raise classified(error) from error
