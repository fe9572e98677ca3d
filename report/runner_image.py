"""What ran a Job's benchmarks, in words for the provenance: the image its pods named, or
this checkout's runner for a local try, and whether that image is the examples' stand-in."""

import re
from typing import Final

from contract.layout import LOCAL_CLUSTER

LOCAL_RUNNER: Final = "this checkout's runner (localrun)"
"""localrun runs the runner of the checkout it is started from, whatever image the Job names."""
PLACEHOLDER: Final = "(placeholder: `make pin-image` sets the real one)"
_EXAMPLE_REGISTRY: Final = "registry.example.com"
"""The registry specs/clusters.yaml names until `make pin-image` writes the pushed digest."""
_ONE_DIGIT_DIGEST: Final = re.compile(r"@sha256:([0-9a-f])\1*$")


def runner_words(cluster: str, image: str | None) -> str | None:
    """The image as the provenance says it; None where the Job named none."""
    if cluster == LOCAL_CLUSTER:
        return LOCAL_RUNNER
    if image is None:
        return None
    placeholder = image.split("/", 1)[0] == _EXAMPLE_REGISTRY or _ONE_DIGIT_DIGEST.search(image)
    return f"{image} {PLACEHOLDER}" if placeholder else image
