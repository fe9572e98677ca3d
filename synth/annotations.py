"""The size of an object's annotations, which the API server caps: a Job over the cap is
refused on apply, and Flux then stops applying the whole cluster."""

from collections.abc import Mapping

from synth.limits import MAX_ANNOTATION_BYTES

HINT = (
    "shorten the description or the owner; where the Job reuses thousands of recorded "
    "results (benchfleet.io/reuses), split the workflow; where thousands of its variants "
    "have gates of their own (benchfleet.io/accuracy-gates: models[i].accuracy), give "
    "models a shared one in benchmark.accuracy"
)


def annotation_bytes(annotations: Mapping[str, str]) -> int:
    """What the API server counts against the cap: every key and value, in UTF-8 bytes."""
    return sum(len(key.encode()) + len(value.encode()) for key, value in annotations.items())


def too_large(annotations: Mapping[str, str]) -> str | None:
    """Why an object with these annotations would be refused, or None if it would not."""
    size = annotation_bytes(annotations)
    if size <= MAX_ANNOTATION_BYTES:
        return None
    sizes = {key: annotation_bytes({key: value}) for key, value in annotations.items()}
    largest = max(sizes, key=sizes.__getitem__)
    return (
        f"its annotations add up to {size:,} bytes; Kubernetes refuses an object with more "
        f"than {MAX_ANNOTATION_BYTES:,}, and Flux would stop applying the cluster (the "
        f"largest, {largest}, is {sizes[largest]:,} bytes)"
    )
