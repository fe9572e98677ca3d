"""contract.addresses: the one rule that masks an address's credentials, in a text or a value
on its own, and the one rule for its port."""

import pytest

from contract.addresses import masked, masked_address, port_problem, userinfo


@pytest.mark.parametrize(
    ("value", "shown", "found"),
    [
        ("https://user:pa@ss@host:9091/x", "https://***@host:9091/x", "user:pa@ss"),
        ("user:s3cret@registry.example.com/m@sha256:" + "a" * 64, None, "user:s3cret"),
        ("t0ken@registry.example.com/m:v1", "***@registry.example.com/m:v1", "t0ken"),
        ("busybox@sha256:" + "a" * 64, None, None),
        ("registry.example.com/m@sha256:" + "a" * 64, None, None),
        ("http://host:9091", None, None),
    ],
)
def test_a_value_shows_without_its_userinfo(
    value: str, shown: str | None, found: str | None
) -> None:
    if shown is None:
        shown = value if found is None else "***@" + value.split("@", 1)[1]
    assert masked_address(value) == shown
    assert userinfo(value) == found


def test_a_text_masks_every_url_in_it_and_nothing_else() -> None:
    text = "pushing to http://u:p@gw:9091/metrics failed; ask me@example.com, or https://a@b/c"
    assert masked(text) == (
        "pushing to http://***@gw:9091/metrics failed; ask me@example.com, or https://***@b/c"
    )


@pytest.mark.parametrize(
    ("port", "ok"),
    [
        ("1", True),
        ("65535", True),
        ("0", False),
        ("65536", False),
        ("99999", False),
        ("8o", False),
        ("", False),
    ],
)
def test_a_port_is_a_tcp_port(port: str, ok: bool) -> None:
    assert (port_problem(port) is None) == ok
