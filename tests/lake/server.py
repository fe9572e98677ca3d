"""A lake on a real S3-compatible server for one test: its own prefix under the lake that
`make lake`'s lines export (AWS_ENDPOINT_URL, the AWS keys, BENCHFLEET_LAKE), so tests share
one server and never see each other's objects. Skipped, saying why, where none is exported."""

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from contract.lake import (
    ACCESS_KEY_ENV,
    ENDPOINT_ENV,
    LAKE_ENV,
    SECRET_KEY_ENV,
    LakeUrl,
    parse_lake_url,
)
from contract.objectstore import ObjectStore


@dataclass(frozen=True)
class Lake:
    """A fresh prefix of a real server's bucket, and how a command reaches it."""

    url: LakeUrl
    env: dict[str, str]
    objects: ObjectStore


@pytest.fixture
def lake() -> Iterator[Lake]:
    names = (ENDPOINT_ENV, ACCESS_KEY_ENV, SECRET_KEY_ENV, LAKE_ENV)
    if missing := [name for name in names if not os.environ.get(name)]:
        pytest.skip(f"no lake server: `make lake` and export its lines ({', '.join(missing)})")
    env = {name: os.environ[name] for name in names[:3]}
    base = parse_lake_url(os.environ[LAKE_ENV])
    url = LakeUrl(bucket=base.bucket, prefix=base.key(f"test-{uuid.uuid4().hex[:12]}"))
    yield Lake(url=url, env=env, objects=ObjectStore.for_lake(url, env))
