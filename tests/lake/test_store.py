"""contract/objectstore.py against the real S3 server (SeaweedFS on loopback): each fault a
store has surfaces as its kind of StoreError, the call returns, and nothing is written
twice or half."""

import base64
import hashlib
import os

import pytest
from botocore.exceptions import ClientError

from contract.lake import raw_key, sha256_of
from contract.objectstore import (
    Limits,
    ObjectStore,
    StoreError,
    StoreErrorKind,
    client,
    error_kind,
)
from tests.lakeserver import FaultyProxy, Lake

# One attempt of a few seconds: a test of a fault need not wait out a caller's retries.
QUICK = Limits(connect_s=2.0, read_s=3.0, attempts=1)
RESULT = b'{"samples": [1.0, 2.0, 3.0]}'


def _key(lake: Lake, workflow: str = "nightly", attempt: str = "pod-1") -> str:
    return raw_key(
        lake.url, workflow=workflow, cluster="us-east", job="job-1", variant="v1", attempt=attempt
    )


def _kind(call: object) -> StoreErrorKind:
    with pytest.raises(StoreError) as raised:
        call()  # type: ignore[operator]
    return raised.value.kind


def test_an_object_is_written_once_and_read_back_whole(lake: Lake) -> None:
    store, key = lake.store(), _key(lake)
    stored = store.put_once(key, RESULT)
    assert (stored.key, stored.sha256, stored.bytes) == (key, sha256_of(RESULT), len(RESULT))
    assert store.get(key, max_bytes=len(RESULT)) == RESULT


def test_the_same_bytes_again_are_the_same_object_and_other_bytes_are_refused(
    lake: Lake,
) -> None:
    """A retried put whose answer was lost finds its own object: success, one object."""
    store, key = lake.store(), _key(lake)
    first = store.put_once(key, RESULT)
    assert store.put_once(key, RESULT) == first
    assert _kind(lambda: store.put_once(key, RESULT + b" ")) is StoreErrorKind.EXISTS
    assert store.get(key, max_bytes=1 << 10) == RESULT
    assert [listed.key for listed in store.list(lake.url.key(""))] == [key]


def test_a_get_larger_than_asked_is_refused_and_a_missing_key_is_missing(lake: Lake) -> None:
    store, key = lake.store(), _key(lake)
    store.put_once(key, RESULT)
    assert _kind(lambda: store.get(key, max_bytes=len(RESULT) - 1)) is StoreErrorKind.TOO_LARGE
    assert _kind(lambda: store.get(key + ".gone", max_bytes=10)) is StoreErrorKind.MISSING


def test_listing_pages_through_every_key_and_refuses_more_than_its_limit(lake: Lake) -> None:
    store = lake.store()
    keys = [_key(lake, attempt=f"pod-{n}") for n in range(5)]
    for key in keys:
        store.put_once(key, RESULT)
    listed = store.list(lake.url.key("raw", ""), page_size=2)
    assert listed == [(key, len(RESULT)) for key in sorted(keys)]
    assert _kind(lambda: store.list(lake.url.key(""), limit=4)) is StoreErrorKind.TOO_LARGE


def test_delete_removes_the_keys_and_a_key_already_gone_is_no_error(lake: Lake) -> None:
    store = lake.store()
    keys = [_key(lake, attempt=f"pod-{n}") for n in range(3)]
    for key in keys:
        store.put_once(key, RESULT)
    store.delete([*keys[:2], _key(lake, attempt="never-written")])
    assert [listed.key for listed in store.list(lake.url.key(""))] == keys[2:]


def test_a_workflows_writer_may_write_under_its_raw_prefix_only(lake: Lake) -> None:
    writer = lake.store(lake.writer_for("nightly"))
    own = _key(lake, "nightly")
    assert writer.put_once(own, RESULT).key == own
    other = _key(lake, "weekly")
    assert _kind(lambda: writer.put_once(other, RESULT)) is StoreErrorKind.DENIED
    published = lake.url.key("runs", "workflow=nightly", "x.parquet")
    assert _kind(lambda: writer.put_once(published, RESULT)) is StoreErrorKind.DENIED
    assert lake.store().list(lake.url.key("")) == [(own, len(RESULT))]


def test_wrong_credentials_are_denied_and_never_quoted(lake: Lake) -> None:
    env = {**lake.env(), "AWS_SECRET_ACCESS_KEY": "not-the-secret-at-all"}
    store = ObjectStore.for_lake(lake.url, env, QUICK)
    with pytest.raises(StoreError) as raised:
        store.put_once(_key(lake), RESULT)
    assert raised.value.kind is StoreErrorKind.DENIED
    assert "not-the-secret-at-all" not in str(raised.value)
    assert lake.server.admin.secret_key not in str(raised.value)


@pytest.mark.slow
def test_a_stopped_store_is_unreachable_and_keeps_every_object_once_started(lake: Lake) -> None:
    store, key = lake.store(limits=QUICK), _key(lake)
    store.put_once(key, RESULT)
    with lake.stopped():
        assert _kind(lambda: store.put_once(_key(lake, attempt="pod-2"), RESULT)) is (
            StoreErrorKind.UNREACHABLE
        )
    assert store.get(key, max_bytes=1 << 10) == RESULT
    assert [listed.key for listed in store.list(lake.url.key(""))] == [key]


@pytest.mark.slow
def test_a_hanging_store_times_out_every_call_and_a_retry_after_stores_once(lake: Lake) -> None:
    """SIGSTOP: the kernel still accepts connections, the server answers nothing. The put
    the client gave up on was in the kernel's buffers and may land once the server wakes:
    put_once again then finds its own bytes, and there is one object."""
    key, late = _key(lake), _key(lake, attempt="pod-2")
    # The put before the pause is the setting, not the case: on a loaded machine the server
    # may take longer than QUICK's 3 s read to answer it.
    lake.store().put_once(key, RESULT)
    store = lake.store(limits=QUICK)
    with lake.paused():
        assert _kind(lambda: store.get(key, max_bytes=1 << 10)) is StoreErrorKind.TIMED_OUT
        assert _kind(lambda: store.put_once(late, RESULT)) is StoreErrorKind.TIMED_OUT
    # Woken, the server first works through what queued while it was stopped: on a loaded
    # machine longer than QUICK's 3 s read, so the retry gets the default bounds.
    again = lake.store()
    assert again.put_once(late, RESULT).sha256 == sha256_of(RESULT)
    assert again.list(lake.url.key("")) == [(key, len(RESULT)), (late, len(RESULT))]


@pytest.mark.slow
def test_a_bucket_over_its_quota_refuses_every_write(full_lake: Lake) -> None:
    """SeaweedFS makes a bucket over its quota read-only and answers a write 403
    AccessDenied, as it answers any write it refuses: from it, `full` reads `denied`."""
    store = full_lake.store(limits=QUICK)
    key = _key(full_lake)
    assert _kind(lambda: store.put_once(key, RESULT)) is StoreErrorKind.DENIED
    assert store.list(full_lake.url.key("")) == []


def test_a_connection_cut_mid_upload_stores_nothing_and_a_retry_stores_it_once(
    lake: Lake,
) -> None:
    data = os.urandom(256 << 10)
    key = _key(lake)
    with lake.through(FaultyProxy(after=64 << 10, fault="cut")) as env:
        once = ObjectStore.for_lake(lake.url, env, QUICK)
        assert _kind(lambda: once.put_once(key, data)) is StoreErrorKind.UNREACHABLE
        assert lake.store().list(lake.url.key("")) == []
    with lake.through(FaultyProxy(after=64 << 10, fault="cut")) as env:
        # The default bounds' attempts and waits: the case is the retry after the cut, and a
        # loaded machine's server may take longer than QUICK's 3 s to answer it.
        retrying = ObjectStore.for_lake(lake.url, env, Limits())
        assert retrying.put_once(key, data).sha256 == sha256_of(data)
    assert lake.store().get(key, max_bytes=len(data)) == data


def test_a_connection_cut_mid_download_is_unreachable_not_a_short_object(lake: Lake) -> None:
    data = os.urandom(256 << 10)
    key = _key(lake)
    lake.store().put_once(key, data)
    with lake.through(FaultyProxy(after=64 << 10, fault="cut", direction="down")) as env:
        store = ObjectStore.for_lake(lake.url, env, QUICK)
        assert _kind(lambda: store.get(key, max_bytes=len(data))) is StoreErrorKind.UNREACHABLE


@pytest.mark.slow
def test_an_upload_stalled_midway_times_out(lake: Lake) -> None:
    data = os.urandom(256 << 10)
    key = _key(lake)
    with lake.through(FaultyProxy(after=64 << 10, fault="stall")) as env:
        store = ObjectStore.for_lake(lake.url, env, QUICK)
        assert _kind(lambda: store.put_once(key, data)) is StoreErrorKind.TIMED_OUT
    assert lake.store().list(lake.url.key("")) == []


def test_the_server_refuses_a_body_that_does_not_hash_to_its_checksum(lake: Lake) -> None:
    """What put_once's ChecksumSHA256 buys: bytes changed on the way are never stored."""
    s3, key = client(lake.env(), QUICK), _key(lake)
    claimed = base64.b64encode(hashlib.sha256(RESULT).digest()).decode()
    with pytest.raises(ClientError) as raised:
        s3.put_object(Bucket=lake.url.bucket, Key=key, Body=RESULT[:-1], ChecksumSHA256=claimed)
    assert error_kind(raised.value) is StoreErrorKind.OTHER
    assert lake.store().list(lake.url.key("")) == []
