"""Kubernetes versions: what a cluster runs, and from which version a feature synth uses is on.

A cluster's `kubernetes_version` (specs/clusters.yaml) decides what synth may put into its
manifests: a field whose feature gate is off is dropped by the API server, so a pod using
it would be refused or would run without it.
"""

import re
from dataclasses import dataclass
from typing import Final

from synth.fields import StringRule, schema_pattern
from synth.hints import SpecError

Version = tuple[int, int]
"""(major, minor)."""

OLDEST_SUPPORTED: Final[Version] = (1, 33)
"""The oldest version the manifests are written for: `matchLabelKeys` in pod affinity and
`backoffLimitPerIndex` are GA there, and namespaces enforce PodSecurity at v1.33."""
IMAGE_VOLUMES_ON: Final[Version] = (1, 35)
"""Image volumes (KEP-4639) are on by default from 1.35 (beta; GA and locked on in 1.36);
before, the API server drops the `image` source and the pod is refused."""

_VERSION: Final = re.compile(r"1\.(0|[1-9][0-9]{0,2})")


def parse_version(text: str) -> Version:
    """`"1.35"` -> (1, 35); the text has passed KubernetesVersion's check."""
    major, minor = text.split(".")
    return int(major), int(minor)


def version_text(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


@dataclass(frozen=True)
class KubernetesVersion(StringRule):
    """A Kubernetes major.minor version, quoted ("1.35"), not older than OLDEST_SUPPORTED."""

    def check(self, value: str) -> str:
        if not _VERSION.fullmatch(value):
            raise SpecError(
                f'{value!r} is not a Kubernetes version: write major.minor in quotes, e.g. "1.35"',
                "`kubectl version` prints the server's version; unquoted, YAML reads 1.30 as "
                "the number 1.3",
            )
        if parse_version(value) < OLDEST_SUPPORTED:
            raise SpecError(
                f"Kubernetes {value} is older than {version_text(OLDEST_SUPPORTED)}, the oldest "
                "version benchfleet's manifests are written for",
                "upgrade the cluster, or leave it out of specs/clusters.yaml",
            )
        return value

    def schema_keywords(self) -> dict[str, object]:
        return {"pattern": schema_pattern(_VERSION), "examples": ["1.35"]}
