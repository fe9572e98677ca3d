"""Pushing gather's metrics to a Pushgateway: a side output of gather, never its outcome.

A push is bounded in time (PUSH_TIMEOUT_S, however the gateway answers or does not), and
whatever goes wrong (refused, reset, hung, an error status, a bad answer) is a `PushFailed`
of one line naming the gateway and what happened, which gather prints beside the summary it
keeps. The gateway's address may carry `user:password@`, sent as HTTP Basic auth (as a
Pushgateway's `--web.config.file` asks); it is masked in every message
(contract/addresses.py), and the password wherever a library quotes it alone.
"""

import http.client
import threading
import urllib.error
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Final
from urllib.parse import unquote, urlsplit

from prometheus_client import CollectorRegistry, push_to_gateway
from prometheus_client.exposition import basic_auth_handler, default_handler

from collector.redact import Redactor
from contract.addresses import masked_address, url_port_problem

PUSH_JOB: Final = "benchfleet-collector"
PUSH_TIMEOUT_S: Final = 10.0
"""How long a push may take in all: a Pushgateway on the same network answers in
milliseconds, and gather's results are stored whatever it does."""
_SCHEMES: Final = ("http", "https")


class PushFailed(Exception):
    """The metrics did not reach the Pushgateway: one line, credentials masked."""


@dataclass(frozen=True)
class Pushgateway:
    """Where metrics are pushed, and the Basic auth its address carried."""

    url: str
    """scheme://host[:port][/path], without credentials."""
    shown: str
    """The address as given, its credentials masked: what every message names."""
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @property
    def redact(self) -> Redactor:
        """Masks the credentials wherever a message might quote them."""
        secrets = (
            [] if self.password is None else [self.password, f"{self.username}:{self.password}"]
        )
        return Redactor().adding(secrets)


def pushgateway(address: str) -> Pushgateway:
    """The Pushgateway `address` names: host:port, or an http(s) URL, either with
    `user:password@` for Basic auth (percent-encoded where it holds ':', '@' or '/').
    Raises ValueError, its words masked, where it names no host or no TCP port."""
    shown = masked_address(address)
    text = address if "://" in address else f"http://{address}"
    parts = urlsplit(text)
    if parts.scheme not in _SCHEMES:
        raise ValueError(f"{shown!r}: a Pushgateway is reached over http or https")
    if problem := url_port_problem(parts):
        raise ValueError(f"{shown!r}: its {problem}")
    if not parts.hostname:
        raise ValueError(f"{shown!r} names no host")
    url = parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()
    if parts.username is None:
        return Pushgateway(url, shown)
    return Pushgateway(url, shown, unquote(parts.username), unquote(parts.password or ""))


def push(
    registry: CollectorRegistry,
    gateway: Pushgateway,
    workflow: str,
    timeout_s: float = PUSH_TIMEOUT_S,
) -> None:
    """Replace this workflow's group on the Pushgateway with the current metrics, within
    `timeout_s`; raises PushFailed."""
    handler: Callable[..., Callable[[], None]] = default_handler
    if gateway.username is not None:
        handler = partial(basic_auth_handler, username=gateway.username, password=gateway.password)
    failure: list[BaseException] = []

    def send() -> None:
        try:
            push_to_gateway(
                gateway.url,
                job=PUSH_JOB,
                grouping_key={"workflow": workflow},
                registry=registry,
                timeout=timeout_s,
                handler=handler,
            )
        except Exception as error:  # worded below, whatever urllib or the gateway raised
            failure.append(error)

    # Each socket operation times out on its own: a gateway dripping its answer byte by
    # byte would not. The thread is a daemon, so a gather that gives up on it ends anyway.
    sender = threading.Thread(target=send, name="pushgateway", daemon=True)
    sender.start()
    sender.join(timeout_s)
    if sender.is_alive():
        words = f"no answer within {timeout_s:g} s"
    elif failure:
        words = _words(failure[0])
    else:
        return
    raise PushFailed(
        gateway.redact(f"metrics not pushed to the Pushgateway {gateway.shown}: {words}")
    )


def _words(error: BaseException) -> str:
    """What went wrong, in one line."""
    if isinstance(error, urllib.error.HTTPError):
        return f"it answered {error.code} {error.reason}"
    if isinstance(error, urllib.error.URLError):
        error = error.reason if isinstance(error.reason, BaseException) else error
    if isinstance(error, TimeoutError):
        return "no answer in time"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused (is it running there?)"
    if isinstance(error, ConnectionResetError | http.client.RemoteDisconnected):
        return "it closed the connection without an answer"
    if isinstance(error, http.client.HTTPException):
        return f"its answer is no HTTP: {type(error).__name__}"
    text = " ".join(str(error).split()) or type(error).__name__
    return text[:300]
