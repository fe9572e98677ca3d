"""Debian's docker-registry (the distribution project's registry) serving plain HTTP on
loopback, storing in a folder: what the push tests and `make e2e-container` push to."""

import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import yaml

from localrun.ports import free_port

PROGRAM: Final = "/usr/bin/docker-registry"
START_S: Final = 30.0


class RegistryStartError(RuntimeError):
    """docker-registry did not answer in time; carries its log."""


@contextmanager
def loopback_registry(folder: Path) -> Iterator[str]:
    """`127.0.0.1:<port>` of a registry storing under `folder`, stopped (and its blobs
    deleted) when the block ends."""
    address = f"127.0.0.1:{free_port()}"
    config = {
        "version": 0.1,
        "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(folder / "storage")}},
        "http": {"addr": address},
    }
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    with (folder / "registry.log").open("wb") as log:
        server = subprocess.Popen(
            [PROGRAM, "serve", str(folder / "config.yml")], stdout=log, stderr=subprocess.STDOUT
        )
        try:
            _wait_until_ready(address, server, folder / "registry.log")
            yield address
        finally:
            server.terminate()
            server.wait(timeout=30)
            # Gigabytes of blobs must not pile up in kept temp folders.
            shutil.rmtree(folder / "storage", ignore_errors=True)


def _wait_until_ready(address: str, server: "subprocess.Popen[bytes]", log: Path) -> None:
    deadline = time.monotonic() + START_S
    while True:
        try:
            with urllib.request.urlopen(f"http://{address}/v2/", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise RegistryStartError(
                    f"docker-registry did not start: {log.read_text(errors='replace')}"
                ) from None
            time.sleep(0.2)
