"""The Kubernetes names synth derives from a workflow, and the limits they must respect.

Validation uses the same functions as synth, so a name that would be too long is reported at
the spec field that makes it long, before any manifest exists.
"""

from typing import Final

DIGEST_LENGTH: Final = 10
"""Hex characters of the content hash in a name: 40 bits, so an accidental clash among a
workflow's few dozen objects is out of reach."""

DNS_LABEL_MAX: Final = 63
"""Names used as label values or pod hostnames must fit a DNS label."""

RUNNER_SERVICE_ACCOUNT: Final = "benchfleet-runner"
COLLECTOR_SERVICE_ACCOUNT: Final = "benchfleet-collector"


def namespace_of(environment: str) -> str:
    """The namespace of an environment."""
    return f"benchfleet-{environment}"


def priority_class_name(name: str) -> str:
    """The PriorityClass object of a fleet priority class (cluster-scoped, so prefixed)."""
    return f"benchfleet-{name}"


def job_name(workflow_id: str, target: str, digest: str) -> str:
    """The Job (and its config ConfigMap) of one workflow and hardware target."""
    return f"{workflow_id}-{target}-{digest[:DIGEST_LENGTH]}"


def config_part_name(job: str, number: int) -> str:
    """The ConfigMap holding part `number` (from 1) of a Job's config.json, where the whole
    is too large for the ConfigMap named like the Job."""
    return f"{job}-config-{number}"


def model_bundle_name(workflow_id: str, digest: str) -> str:
    """The ConfigMap carrying a bundle of a workflow's committed model files."""
    return f"{workflow_id}-models-{digest[:DIGEST_LENGTH]}"


def ca_bundle_name(workflow_id: str, digest: str) -> str:
    """The ConfigMap carrying one CA bundle a workflow's downloads trust."""
    return f"{workflow_id}-ca-{digest[:DIGEST_LENGTH]}"


def indexed_pod_suffix(completions: int) -> str:
    """What Kubernetes appends to an Indexed Job's name for its last pod's hostname."""
    return f"-{completions - 1}"


def placeholder_digest() -> str:
    """A digest of the right length, for checking lengths before content is hashed."""
    return "0" * DIGEST_LENGTH


def content_name(prefix: str, digest: str) -> str:
    """An immutable ConfigMap named for its content, so that a change is a new object (Flux
    prunes the old one) and never an edit in place."""
    return f"{prefix}-{digest[:DIGEST_LENGTH]}"
