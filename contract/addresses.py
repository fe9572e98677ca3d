"""Addresses as text (URLs, image and artifact references): the one rule that masks the
credentials they carry wherever one is shown, and the one rule for their ports.

Credentials are the userinfo before a host: `https://user:password@host/path` and, in a
reference without a scheme, `user:password@registry.example.com/models/x@sha256:...`.
Whatever a message quotes of an address goes through `masked` (in a text) or
`masked_address` (a value on its own): a spec's mistakes, the collector's errors and a
Pushgateway's failures land in CI logs.
"""

import re
from typing import Final
from urllib.parse import SplitResult

MASK: Final = "***"
_DIGEST: Final = r"[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9a-fA-F]{32,}"
"""What follows the '@' of an image's digest (`busybox@sha256:...`), which is no userinfo."""
_USERINFO: Final = rf"[^\s/?#]*@(?!{_DIGEST})"
"""Everything up to the last '@' before the host's end (a password may hold an '@')."""
_SCHEME: Final = r"[A-Za-z][A-Za-z0-9+.-]*://"
_IN_TEXT: Final = re.compile(rf"(?P<scheme>{_SCHEME}){_USERINFO}")
_ADDRESS: Final = re.compile(rf"\A(?P<scheme>(?:{_SCHEME})?){_USERINFO}")
MAX_PORT: Final = 65535


def masked(text: str) -> str:
    """`text` with the userinfo of every URL in it (one with a scheme) masked."""
    return _IN_TEXT.sub(rf"\g<scheme>{MASK}@", text)


def masked_address(value: str) -> str:
    """A URL or a reference on its own with its userinfo masked, whether it has a scheme
    or not."""
    return _ADDRESS.sub(rf"\g<scheme>{MASK}@", value)


def userinfo(value: str) -> str | None:
    """The userinfo (credentials) a URL or a reference on its own carries, without its '@';
    None where it carries none."""
    found = _ADDRESS.match(value)
    return found.group()[len(found["scheme"]) : -1] if found else None


def port_problem(port: str) -> str | None:
    """What is wrong with a port as an address spells it (the digits after the host's
    ':'), or None for a TCP port (1 to 65535)."""
    if not (port.isascii() and port.isdigit()) or not 0 < int(port) <= MAX_PORT:
        return f"port {port} is no TCP port (1 to {MAX_PORT})"
    return None


def url_port_problem(parts: SplitResult) -> str | None:
    """What is wrong with the port a URL's host names (`port_problem`); None where it names
    none, or a TCP port."""
    _, colon, port = parts.netloc.rpartition("@")[2].rpartition(":")
    # A ']' after the last ':' is an IPv6 address's, which then has no port.
    if not colon or not port or "]" in port:
        return None
    return port_problem(port)
