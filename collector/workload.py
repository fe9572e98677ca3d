"""What dist/ says a workflow runs: its Jobs per cluster, as Flux applies them.

Gather follows what git holds rather than whatever the cluster happens to have: a Job that
dist/ names but the cluster lacks is reported (Flux has not applied it yet), and a Job the
cluster has but dist/ does not is left to `collector clean`.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from collector.records import JobIdentity
from runner.config import CONFIG_FILE, RunConfig
from runner.result import VariantRef

APP_LABEL: Final = "app=benchfleet"


class WorkloadError(ValueError):
    """dist/ holds nothing for the workflow, or a file there is not what synth writes."""


@dataclass(frozen=True)
class ExpectedJob:
    """A Job of the workflow that dist/ holds for one cluster."""

    identity: JobIdentity
    completions: int
    variants: dict[int, VariantRef]
    """What each index runs, from the Job's config.json ConfigMap."""


def label_selector(workflow: str) -> str:
    """The labels synth puts on every object of a workflow."""
    return f"{APP_LABEL},workflow={workflow}"


def _variants(configmap: dict[str, Any] | None) -> dict[int, VariantRef]:
    if configmap is None:
        return {}
    config = RunConfig.model_validate_json(configmap["data"][CONFIG_FILE])
    return {v.index: VariantRef.of(v) for v in config.variants}


def expected_from(
    cluster: str, job: dict[str, Any], configmap: dict[str, Any] | None = None
) -> ExpectedJob:
    """The ExpectedJob of a Job manifest (from dist/, or as the cluster returns it), with
    its variants when the config.json ConfigMap is given."""
    metadata = job["metadata"]
    annotations = metadata.get("annotations", {})
    (container,) = job["spec"]["template"]["spec"]["containers"]
    identity = JobIdentity(
        workflow=metadata["labels"]["workflow"],
        cluster=cluster,
        namespace=metadata["namespace"],
        job=metadata["name"],
        target=metadata["labels"].get("benchfleet.io/target"),
        spec_file=annotations.get("benchfleet.io/spec-file"),
        spec_sha256=annotations.get("benchfleet.io/spec-sha256"),
        image=container["image"],
    )
    return ExpectedJob(
        identity=identity,
        completions=job["spec"].get("completions", 1),
        variants=_variants(configmap),
    )


def clusters_with(root: Path, workflow: str) -> list[str]:
    """Clusters whose dist/ folder runs `workflow`, sorted."""
    return sorted(
        path.parent.parent.name for path in root.glob(f"dist/*/workloads/{workflow}.yaml")
    )


def expected_jobs(root: Path, workflow: str, cluster: str) -> list[ExpectedJob]:
    """The Jobs of `workflow` in `cluster`'s dist/ folder ([] when it has none left)."""
    path = root / "dist" / cluster / "workloads" / f"{workflow}.yaml"
    if not (root / "dist" / cluster).is_dir():
        known = sorted(p.name for p in (root / "dist").glob("*") if p.is_dir())
        raise WorkloadError(f"dist/ has no cluster {cluster!r}; it has {', '.join(known)}")
    if not path.is_file():
        return []
    try:
        documents = [
            d for d in yaml.load_all(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader) if d
        ]
        # The config.json ConfigMap is named like its Job.
        configmaps = {d["metadata"]["name"]: d for d in documents if d["kind"] == "ConfigMap"}
        return [
            expected_from(cluster, d, configmaps.get(d["metadata"]["name"]))
            for d in documents
            if d["kind"] == "Job"
        ]
    except (yaml.YAMLError, KeyError, TypeError, ValueError) as error:
        raise WorkloadError(f"{path} is not what `make synth` writes: {error}") from error
