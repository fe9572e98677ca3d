"""The one reader of what synth wrote into dist/: YAML documents as plain dicts."""

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from contract.config import CONFIG_FILE, join_config_parts
from contract.layout import DIST, JOB_LABEL, WORKLOADS, namespaces_file

Manifest = dict[str, Any]


def documents(text: str) -> list[Manifest]:
    """The objects of one multi-document YAML file synth wrote (C loader: dist/ can be large)."""
    return [d for d in yaml.load_all(text, Loader=yaml.CSafeLoader) if d]


def read_documents(path: Path) -> list[Manifest]:
    """The objects of one file of dist/."""
    return documents(path.read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Workload:
    """The Jobs and ConfigMaps of one dist/<cluster>/workloads/<workflow>.yaml."""

    jobs: tuple[Manifest, ...]
    configmaps: dict[str, Manifest]
    """By name; a Job's config.json is in the ConfigMap named like the Job, or in parts
    (`config_text`)."""


def config_text(configmaps: Mapping[str, Manifest], job: str) -> str | None:
    """config.json of Job `job` as its pods read it, from `configmaps` (by name): the
    ConfigMap named like the Job, or, where config.json was too large for one, its parts
    joined (the ConfigMaps labelled with the Job's name); None where there is none. Raises
    ValueError where parts are missing."""
    whole = configmaps.get(job, {}).get("data", {}).get(CONFIG_FILE)
    if whole is not None:
        return str(whole)
    parts = {
        key: value.encode()
        for configmap in configmaps.values()
        if configmap["metadata"].get("labels", {}).get(JOB_LABEL) == job
        for key, value in configmap.get("data", {}).items()
    }
    return join_config_parts(parts).decode() if parts else None


def read_workload(path: Path) -> Workload:
    """A workloads file as Flux would apply it."""
    return read_workload_text(path.read_text(encoding="utf-8"))


def read_workload_text(text: str) -> Workload:
    """A workloads file's text (from the working tree or from git) as Flux would apply it."""
    objects = documents(text)
    return Workload(
        jobs=tuple(d for d in objects if d["kind"] == "Job"),
        configmaps={d["metadata"]["name"]: d for d in objects if d["kind"] == "ConfigMap"},
    )


def dist_clusters(root: Path) -> list[str]:
    """The clusters dist/ has a folder for."""
    folder = root / DIST
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def namespaces(root: Path, cluster: str) -> list[str]:
    """The benchfleet namespaces synth writes for `cluster`."""
    objects = read_documents(namespaces_file(root, cluster))
    return sorted(d["metadata"]["name"] for d in objects if d["kind"] == "Namespace")


def job_names(root: Path, cluster: str) -> set[str]:
    """Names of every Job dist/<cluster>/workloads/ holds."""
    return {
        job["metadata"]["name"]
        for path in (root / DIST / cluster / WORKLOADS).glob("*.yaml")
        for job in read_workload(path).jobs
    }
