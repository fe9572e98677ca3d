"""Pushing metrics is a side output of gather: a Pushgateway that answers an error, hangs,
resets the connection, talks no HTTP or is not there costs one line naming it (credentials
masked), never gather's summary or exit code (issue #31). Here the gateways are local
sockets misbehaving on purpose; tests/monitoring pushes to Debian's real Pushgateway."""

import base64
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import Result
from prometheus_client import CollectorRegistry

from collector.metrics import ObservedJob, build_registry
from collector.pushgateway import PushFailed, push, pushgateway
from contract.records import JobRecord
from localrun.ports import free_port
from standin.api import FakeApiServer
from tests.collector.gathering import Collect, Obj, finish_all
from tests.collector.stored import JOB, succeeded

Answer = Callable[[socket.socket, bytes], None]
OK = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def _error(connection: socket.socket, _: bytes) -> None:
    connection.sendall(
        b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )


def _reset(connection: socket.socket, _: bytes) -> None:
    # SO_LINGER with a zero timeout: close() sends a reset, not a FIN.
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _no_http(connection: socket.socket, _: bytes) -> None:
    connection.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")


@contextmanager
def gateway(answer: Answer | None) -> Iterator[tuple[str, list[bytes]]]:
    """`127.0.0.1:<port>` of a server answering each request with `answer` (None: holding
    it unanswered until the test ends), and the requests it read."""
    server = socket.create_server(("127.0.0.1", 0))
    requests: list[bytes] = []
    done = threading.Event()

    # accept() wakes up now and then to see whether the test has ended: closing the socket
    # from another thread does not wake it.
    server.settimeout(0.2)

    def serve() -> None:
        while not done.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            connection.settimeout(None)
            with connection:
                request = connection.recv(65536)
                requests.append(request)
                if answer is None:
                    done.wait()
                else:
                    answer(connection, request)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.getsockname()[1]}", requests
    finally:
        done.set()
        server.close()
        thread.join(timeout=10)


@pytest.fixture
def registry() -> CollectorRegistry:
    record = JobRecord(**JOB.model_dump(), outcome="complete", variants=(succeeded(0),))
    return build_registry([ObservedJob(record, duration_s=60.0)])


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (_error, "it answered 500 Internal Server Error"),
        (_reset, "it closed the connection without an answer"),
        (_no_http, "its answer is no HTTP"),
        (None, "no answer"),
    ],
)
def test_a_gateway_that_fails_is_one_line_naming_it(
    registry: CollectorRegistry, answer: Answer | None, words: str
) -> None:
    with gateway(answer) as (address, _), pytest.raises(PushFailed) as failed:
        push(registry, pushgateway(f"http://ci:s3cret@{address}"), "cpu-smoke", timeout_s=1)
    message = str(failed.value)
    assert message.startswith(f"metrics not pushed to the Pushgateway http://***@{address}: ")
    assert words in message
    assert "\n" not in message and "s3cret" not in message


def test_a_gateway_that_is_not_there_is_one_line_naming_it(registry: CollectorRegistry) -> None:
    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(PushFailed) as failed:
        push(registry, pushgateway(address), "cpu-smoke", timeout_s=5)
    assert str(failed.value) == (
        f"metrics not pushed to the Pushgateway {address}: connection refused (is it running "
        "there?)"
    )


def test_credentials_in_the_address_are_sent_as_basic_auth(registry: CollectorRegistry) -> None:
    with gateway(lambda connection, _: connection.sendall(OK)) as (address, requests):
        push(
            registry, pushgateway(f"https://ci:p%40ss@{address}/base".replace("https", "http")), "w"
        )
    (request,) = requests
    head = request.split(b"\r\n\r\n", 1)[0].decode()
    assert head.startswith("PUT /base/metrics/job/benchfleet-collector/workflow/w HTTP/1.1")
    expected = base64.b64encode(b"ci:p@ss").decode()
    assert f"Authorization: Basic {expected}" in head.splitlines()


@pytest.mark.parametrize(
    ("address", "words"),
    [
        ("gw:99999", "'gw:99999': its port 99999 is no TCP port (1 to 65535)"),
        ("http://ci:s3cret@gw:0", "'http://***@gw:0': its port 0 is no TCP port"),
        ("ftp://gw:21", "'ftp://gw:21': a Pushgateway is reached over http or https"),
        ("http://:9091", "'http://:9091' names no host"),
    ],
)
def test_an_address_that_cannot_work_is_refused_masked(address: str, words: str) -> None:
    with pytest.raises(ValueError) as refused:
        pushgateway(address)
    assert str(refused.value).startswith(words)


def test_gather_keeps_its_summary_and_exit_code_when_its_metrics_fail(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    finish_all(api, job)
    blocked = repo / "a-file"
    blocked.write_text("where the textfile's folder should be")
    with gateway(_error) as (address, _):
        run: Result = collector(
            "gather",
            "--pushgateway",
            f"http://ci:s3cret@{address}",
            "--metrics-textfile",
            str(blocked / "benchfleet.prom"),
        )
    assert run.exit_code == 0, run.output
    assert "stored 6 variant runs" in run.stdout
    textfile, pushed = (line for line in run.stderr.splitlines() if line.startswith("warning: "))
    assert textfile.startswith(f"warning: metrics not written to {blocked / 'benchfleet.prom'}: ")
    assert pushed == (
        f"warning: metrics not pushed to the Pushgateway http://***@{address}: it answered 500 "
        "Internal Server Error"
    )
    assert "Traceback" not in run.output and "s3cret" not in run.output


def test_a_failed_gather_keeps_its_exit_code_when_the_gateway_is_down(
    collector: Collect, api: FakeApiServer, repo: Path, job: Obj
) -> None:
    api.add("jobs", job)
    run = collector("gather", "--no-wait", "--pushgateway", f"127.0.0.1:{free_port()}")
    assert run.exit_code == 1
    assert "did not finish" in run.output
    assert "connection refused" in run.stderr
