"""The fingerprint of where a result was measured."""

import os
import platform
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import torch

from contract.config import POD_NAME_ENV
from contract.instructions import isa_flags
from contract.result import Environment

CPUINFO: Final = Path("/proc/cpuinfo")


def cpu_model(cpuinfo: Path = CPUINFO) -> str:
    """The CPU's model name, or the platform's processor string where /proc says nothing."""
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in {"model name", "Model"}:
                return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags(cpuinfo: Path = CPUINFO) -> tuple[str, ...] | None:
    """The CPU's instruction-set extensions (contract.instructions.isa_flags) from its first
    processor's `flags` (x86) or `Features` (arm) line; None where /proc says neither."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in {"flags", "Features"}:
            return isa_flags(value.split())
    return None


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
        cpu_flags=cpu_flags(),
        gpu_capability=torch.cuda.get_device_capability(device) if device.type == "cuda" else None,
        node_name=env.get("NODE_NAME"),
        pod_name=env.get(POD_NAME_ENV),
        image=env.get("RUNNER_IMAGE"),
        hostname=socket.gethostname(),
    )
