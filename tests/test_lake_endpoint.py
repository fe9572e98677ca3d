"""A results store's endpoint (contract/lake.py's `endpoint_problem`): https to any host,
plain http only where the traffic stays on the machine or in the cluster, never a credential,
a path or a port out of range, and every message masks what credentials it quotes."""

import pytest

from contract.lake import endpoint_by_name, endpoint_port, endpoint_problem

SECRET = "s3cr3t-key"


@pytest.mark.parametrize(
    ("endpoint", "port", "by_name"),
    [
        ("https://s3.us-east-1.amazonaws.com", 443, True),
        ("https://minio.example.com:9000/", 9000, True),
        ("https://10.1.2.3", 443, False),
        ("https://[2001:db8::1]:8443", 8443, False),
        ("http://127.0.0.1:8333", 8333, False),
        ("http://[::1]:8333", 8333, False),
        ("http://localhost:8333", 8333, True),
        ("http://seaweed.lake.svc:8333", 8333, True),
        ("http://seaweed.lake.svc.cluster.local", 80, True),
    ],
)
def test_an_endpoint_is_accepted_with_its_port(endpoint: str, port: int, by_name: bool) -> None:
    assert endpoint_problem(endpoint) is None
    assert endpoint_port(endpoint) == port
    assert endpoint_by_name(endpoint) is by_name


@pytest.mark.parametrize(
    ("endpoint", "message"),
    [
        (
            f"https://AKIA:{SECRET}@s3.example.com",
            "https://***@s3.example.com: an endpoint carries",
        ),
        (f"https://AKIA:{SECRET}@@s3.example.com", "no credentials"),
        ("http://s3.example.com", "plain http is only for loopback or a Service"),
        ("http://10.0.0.5:9000", "plain http is only for loopback or a Service"),
        ("https://s3.example.com/bucket", "no path, query or fragment"),
        ("https://s3.example.com?x=1", "no path, query or fragment"),
        ("https://s3.example.com#", "no path, query or fragment"),
        ("https://s3.example.com:65536", "port 65536 is no TCP port"),
        ("https://s3.example.com:x", "port x is no TCP port"),
        ("https://s3_example.com", "names its host by a DNS name or an address"),
        ("https://[::1", "an endpoint is https://HOST[:PORT]"),
        ("s3.example.com", "an endpoint is https://HOST[:PORT]"),
        ("ftp://s3.example.com", "an endpoint is https://HOST[:PORT]"),
        ("https://", "an endpoint is https://HOST[:PORT]"),
        ("https://s3.example.com\n", "printable characters"),
        ("https://" + "a" * 3000 + ".com", "at most 2048"),
    ],
)
def test_a_bad_endpoint_says_why_and_never_quotes_a_credential(endpoint: str, message: str) -> None:
    problem = endpoint_problem(endpoint)
    assert problem is not None and message in problem
    assert SECRET not in problem
