"""The fingerprint of where a result was measured."""

import os
import platform
import socket
from collections.abc import Mapping
from pathlib import Path

import torch

from contract.result import Environment


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The CPU's model name, or the platform's processor string where /proc says nothing."""
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in {"model name", "Model"}:
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def fingerprint(
    device: torch.device,
    device_name: str,
    threads: int,
    quota: float | None,
    env: Mapping[str, str] = os.environ,
) -> Environment:
    """Versions, hardware and the pod's identity (from the downward API's env vars)."""
    return Environment(
        python=platform.python_version(),
        torch=torch.__version__,
        cuda=torch.version.cuda,
        device=str(device),
        device_name=device_name,
        cpu_model=cpu_model(),
        threads=threads,
        cpu_quota=quota,
        node_name=env.get("NODE_NAME"),
        pod_name=env.get("POD_NAME"),
        image=env.get("RUNNER_IMAGE"),
        hostname=socket.gethostname(),
    )
