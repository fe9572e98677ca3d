"""Ports on loopback for the servers started here: the registry of localrun's tests, and
each process of the local cluster (which stands on localrun)."""

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
