"""What the API server refuses of one object for its size or its labels' form: the one place
synth knows those limits.

Every object synth renders is held to them before anything is written (`synth.render`):
one the API server refuses fails Flux's whole apply, which stops every workflow of that
cluster, not just the one that grew. `tests/cluster/test_object_budget.py` holds them to a
real kube-apiserver and etcd: at each of the API server's limits accepted, one byte over
refused, and past etcd's refused by etcd.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from synth.hints import SpecError
from synth.labels import LabelKey, LabelValue

CONFIGMAP_DATA_BYTES: Final = 1024 * 1024
"""A ConfigMap's `data` values (UTF-8 bytes) and `binaryData` values (decoded bytes) together:
the API server's ConfigMap validation refuses more (its keys are not counted)."""

ANNOTATION_BYTES: Final = 256 * 1024
"""All annotations of one object, keys and values in UTF-8 bytes: ObjectMeta validation
refuses more."""

ETCD_REQUEST_BYTES: Final = 1536 * 1024
"""etcd's default `--max-request-bytes`: a write holding the object, as the API server stores
it, must fit, unless the cluster's operator raised etcd's limit."""

STORED_HEADROOM_BYTES: Final = 64 * 1024
"""Kept free of `ETCD_REQUEST_BYTES` for what the API server adds to an object as it stores
it (the managedFields of a server-side apply, the status a controller writes) and for the
request around it (the key, the compare of a transaction)."""

OBJECT_BYTES: Final = ETCD_REQUEST_BYTES - STORED_HEADROOM_BYTES
"""The most `stored_bytes` of one object may be."""

Manifest = Mapping[str, Any]
"""An object as synth writes it: plain JSON values."""

Part = Literal["data", "annotations", "labels", "object"]
"""Which part of an object broke a limit: what the fix changes."""


@dataclass(frozen=True)
class Refusal:
    """Why the API server would refuse an object."""

    part: Part
    message: str


def refusals(obj: Manifest) -> list[Refusal]:
    """Everything of `obj` (a manifest, as synth writes it) the API server would refuse for
    its size or its labels' form."""
    metadata = obj.get("metadata") or {}
    found = [*_labels(metadata.get("labels") or {})]
    annotations = metadata.get("annotations") or {}
    if (size := annotation_bytes(annotations)) > ANNOTATION_BYTES:
        sizes = {key: annotation_bytes({key: value}) for key, value in annotations.items()}
        largest = max(sizes, key=sizes.__getitem__)
        found.append(
            Refusal(
                "annotations",
                f"its annotations add up to {size:,} bytes; Kubernetes refuses an object with "
                f"more than {ANNOTATION_BYTES:,}, and Flux would stop applying the cluster "
                f"(the largest, {largest}, is {sizes[largest]:,} bytes)",
            )
        )
    if obj.get("kind") == "ConfigMap" and (size := configmap_data_bytes(obj)) > (
        CONFIGMAP_DATA_BYTES
    ):
        found.append(
            Refusal(
                "data",
                f"its data adds up to {size:,} bytes; Kubernetes refuses a ConfigMap with more "
                f"than {CONFIGMAP_DATA_BYTES:,}",
            )
        )
    if (size := stored_bytes(obj)) > OBJECT_BYTES:
        found.append(
            Refusal(
                "object",
                f"it is about {size:,} bytes as the API server stores it; etcd takes at most "
                f"{ETCD_REQUEST_BYTES:,} with what the server adds, which leaves the object "
                f"{OBJECT_BYTES:,}",
            )
        )
    return found


def annotation_bytes(annotations: Mapping[str, str]) -> int:
    """What the API server counts against ANNOTATION_BYTES: every key and value, in UTF-8."""
    return sum(len(key.encode()) + len(value.encode()) for key, value in annotations.items())


def configmap_data_bytes(configmap: Manifest) -> int:
    """What the API server counts against CONFIGMAP_DATA_BYTES: the values alone."""
    data = configmap.get("data") or {}
    binary = configmap.get("binaryData") or {}
    return sum(len(value.encode()) for value in data.values()) + sum(
        _decoded_bytes(value) for value in binary.values()
    )


def stored_bytes(obj: Manifest) -> int:
    """About what etcd holds of `obj`: its compact JSON with strings counted as their UTF-8
    bytes, unescaped, and `binaryData` as the bytes it decodes to, as the API server's
    protobuf stores them (it names fields by number, so the JSON's keys make this a little
    more, never less, for the objects synth writes)."""
    rest = {key: value for key, value in obj.items() if key != "binaryData"}
    binary = obj.get("binaryData")
    if not binary:
        return _json_bytes(rest)
    return _json_bytes(rest) + len(',"binaryData":') + _mapping_bytes(binary, _binary_bytes)


def _json_bytes(value: object) -> int:
    if isinstance(value, str):
        return len(value.encode()) + 2
    if isinstance(value, Mapping):
        return _mapping_bytes(value, _json_bytes)
    if isinstance(value, list | tuple):
        return 2 + sum(_json_bytes(item) for item in value) + max(len(value) - 1, 0)
    if value is None or isinstance(value, bool):
        return 5 if value is False else 4
    return len(str(value))


def _mapping_bytes(mapping: Mapping[str, Any], value_bytes: Callable[[Any], int]) -> int:
    entries = sum(_json_bytes(str(key)) + 1 + value_bytes(value) for key, value in mapping.items())
    return 2 + entries + max(len(mapping) - 1, 0)


def _binary_bytes(text: str) -> int:
    return _decoded_bytes(text) + 2


def _decoded_bytes(text: str) -> int:
    """The bytes base64 `text` decodes to, counted without decoding it."""
    return len(text) // 4 * 3 - text[-2:].count("=")


def _labels(labels: Mapping[str, str]) -> list[Refusal]:
    found = []
    for key, value in labels.items():
        rules = ((LabelKey("label key"), key), (LabelValue(f"label {key}'s value"), value))
        for rule, text in rules:
            try:
                rule.check(text)
            except SpecError as error:
                found.append(Refusal("labels", error.message))
    return found
