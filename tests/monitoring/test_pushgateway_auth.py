"""Debian's Pushgateway asking for Basic auth (its --web.config.file): the credentials in
gather's --pushgateway address get the metrics there, and any failure is one line with the
password masked (issue #31)."""

import base64
import urllib.request
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from collector.metrics import ObservedJob, build_registry
from collector.pushgateway import PushFailed, push, pushgateway
from contract.metrics import LATENCY_P50
from contract.records import JobRecord
from tests.collector.stored import JOB, succeeded
from tests.monitoring.servers import PUSH_PASSWORD, PUSH_USER, needs_prometheus, pushgateway_server

pytestmark = [needs_prometheus, pytest.mark.slow]


@pytest.fixture
def registry() -> CollectorRegistry:
    record = JobRecord(**JOB.model_dump(), outcome="complete", variants=(succeeded(0),))
    return build_registry([ObservedJob(record, duration_s=60.0)])


def _metrics(address: str) -> str:
    request = urllib.request.Request(f"http://{address}/metrics")
    login = base64.b64encode(f"{PUSH_USER}:{PUSH_PASSWORD}".encode()).decode()
    request.add_header("Authorization", f"Basic {login}")
    with urllib.request.urlopen(request, timeout=10) as answer:
        return str(answer.read().decode())


def test_credentials_in_the_address_reach_a_gateway_that_asks_for_them(
    registry: CollectorRegistry, tmp_path: Path
) -> None:
    with pushgateway_server(tmp_path, basic_auth=True) as address:
        push(registry, pushgateway(f"http://{PUSH_USER}:{PUSH_PASSWORD}@{address}"), "cpu-smoke")
        assert f"{LATENCY_P50}{{" in _metrics(address)
        for given in (address, f"http://{PUSH_USER}:wrong-{PUSH_PASSWORD}@{address}"):
            with pytest.raises(PushFailed) as refused:
                push(registry, pushgateway(given), "cpu-smoke")
            assert "it answered 401 Unauthorized" in str(refused.value)
            assert PUSH_PASSWORD not in str(refused.value)
    # And once it is gone.
    with pytest.raises(PushFailed) as down:
        push(registry, pushgateway(f"http://{PUSH_USER}:{PUSH_PASSWORD}@{address}"), "cpu-smoke")
    assert str(down.value) == (
        f"metrics not pushed to the Pushgateway http://***@{address}: connection refused (is it "
        "running there?)"
    )
