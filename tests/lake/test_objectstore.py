"""contract/objectstore.py where no server is needed: a store nobody answers at, and how
errors are told apart and masked."""

import pickle
import socket
from collections.abc import Iterator

import pytest

from contract.lake import parse_lake_url
from contract.objectstore import Limits, ObjectStore, StoreError, StoreErrorKind, error_kind

FAST = Limits(connect_s=2.0, read_s=2.0, attempts=1)


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port nothing listens on (bound, never listening, so no one takes it)."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield held.getsockname()[1]


def _store(port: int) -> ObjectStore:
    env = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "very-secret-value",
    }
    return ObjectStore.for_lake(parse_lake_url("s3://results/team"), env, FAST)


@pytest.mark.parametrize(
    "call",
    [
        lambda store: store.put_once("team/raw/a.json", b"{}"),
        lambda store: store.get("team/raw/a.json", max_bytes=10),
        lambda store: store.list("team/raw/"),
        lambda store: store.delete(["team/raw/a.json"]),
    ],
    ids=["put_once", "get", "list", "delete"],
)
def test_a_store_nobody_answers_at_is_unreachable(closed_port: int, call: object) -> None:
    store = _store(closed_port)
    with pytest.raises(StoreError) as raised:
        call(store)  # type: ignore[operator]
    assert raised.value.kind is StoreErrorKind.UNREACHABLE
    assert f"127.0.0.1:{closed_port}" in str(raised.value)
    assert "very-secret-value" not in str(raised.value)


def test_a_credential_in_an_endpoint_is_masked_in_every_message(closed_port: int) -> None:
    env = {
        "AWS_ENDPOINT_URL": f"http://user:hunter2@127.0.0.1:{closed_port}",
        "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE",
        "AWS_SECRET_ACCESS_KEY": "very-secret-value",
    }
    store = ObjectStore.for_lake(parse_lake_url("s3://results"), env, FAST)
    with pytest.raises(StoreError) as raised:
        store.get("a", max_bytes=1)
    assert "hunter2" not in str(raised.value)


def test_the_worst_case_is_every_attempt_timing_out() -> None:
    assert Limits(connect_s=1.0, read_s=4.0, attempts=3).worst_case_s == 15.0


@pytest.mark.parametrize(
    ("code", "status", "kind"),
    [
        ("QuotaExceeded", 403, StoreErrorKind.FULL),
        ("XMinioStorageFull", 507, StoreErrorKind.FULL),
        ("SomethingNew", 507, StoreErrorKind.FULL),
        ("AccessDenied", 403, StoreErrorKind.DENIED),
        ("PreconditionFailed", 412, StoreErrorKind.EXISTS),
        ("ConditionalRequestConflict", 409, StoreErrorKind.EXISTS),
        ("NoSuchBucket", 404, StoreErrorKind.MISSING),
        ("InternalError", 500, StoreErrorKind.OTHER),
    ],
)
def test_an_answer_no_test_server_gives_is_told_by_its_code_then_its_status(
    code: str, status: int, kind: StoreErrorKind
) -> None:
    """Ceph answers a full quota 403 QuotaExceeded: its code wins over its status."""
    from botocore.exceptions import ClientError  # noqa: PLC0415

    answer = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}
    assert error_kind(ClientError(answer, "PutObject")) is kind


@pytest.mark.parametrize("endpoint", ["not a url", "http://user:hunter2@[::1"])
def test_an_endpoint_that_is_no_url_is_a_store_error_that_masks_it(endpoint: str) -> None:
    env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"}
    with pytest.raises(StoreError) as raised:
        ObjectStore.for_lake(parse_lake_url("s3://results"), env, FAST)
    assert raised.value.kind is StoreErrorKind.OTHER
    assert "hunter2" not in str(raised.value)


def test_a_store_error_keeps_its_kind_across_processes() -> None:
    error = pickle.loads(pickle.dumps(StoreError(StoreErrorKind.FULL, "put s3://b/k: full")))
    assert (error.kind, str(error)) == (StoreErrorKind.FULL, "put s3://b/k: full")
