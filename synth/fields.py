"""Annotated field types shared by the spec models: names, durations, quantities, digests.

Each type validates with a message that says what a correct value looks like, and carries a
JSON Schema pattern so that editors flag a bad value before the spec ever reaches synth.
"""

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Annotated, Any, Final
from urllib.parse import SplitResult, parse_qsl, urlsplit

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    StrictInt,
    WithJsonSchema,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

from contract.addresses import masked_address, port_problem, url_port_problem, userinfo
from contract.quantity import MAX_QUANTITY, parse_quantity
from synth.hints import SpecError
from synth.limits import MAX_DURATION_SECONDS, MAX_IMAGE_NAME_CHARS, MAX_URL_CHARS

_DNS_LABEL: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def schema_pattern(regex: re.Pattern[str] | str) -> str:
    """A pattern that validation applies to the whole string (fullmatch), as a JSON Schema
    pattern: anchored at both ends for ECMA-262, which editors use, and for Python's
    `re.search`, which the `jsonschema` package uses and where `$` also matches before a
    final line break (the lookahead refuses one)."""
    body = regex if isinstance(regex, str) else regex.pattern
    return f"^(?:{body})$(?!\\n)"


def line_break_hint(value: str) -> str | None:
    """Advice for a value that ends in a line break, as a YAML block scalar's does."""
    if value.endswith(("\n", "\r")):
        return (
            "a block scalar (`|` or `>`) keeps the line break at its end: write the value on "
            "the key's line, or use `|-`"
        )
    return None


class StringRule(ABC):
    """A rule the whole of a str field's value must meet, and the JSON Schema keywords that
    let editors flag a value that breaks it; used as `Annotated[str, Rule(...)]`."""

    @abstractmethod
    def check(self, value: str) -> str:
        """`value`, or a ValueError (a SpecError for advice) saying what is wrong with it."""

    @abstractmethod
    def schema_keywords(self) -> dict[str, object]:
        """What the field's JSON Schema says besides `type: string`."""

    def __get_pydantic_core_schema__(
        self, source: type[Any], handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(self.check, handler(source))

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        json_schema = handler(schema)
        json_schema.update(self.schema_keywords())
        return json_schema


@dataclass(frozen=True)
class DnsLabel(StringRule):
    """Marks a str field as a DNS label of at most `max_length` characters, named `kind`."""

    kind: str
    max_length: int

    def check(self, value: str) -> str:
        if len(value) > self.max_length:
            raise ValueError(
                f"{self.kind} {value!r} is {len(value)} characters; at most {self.max_length} "
                "are allowed because it becomes part of Kubernetes names"
            )
        if not _DNS_LABEL.fullmatch(value):
            raise SpecError(
                f"{self.kind} {value!r} is not DNS-label safe: use lower-case letters, digits "
                "and '-', starting with a letter and not ending with '-'",
                line_break_hint(value),
            )
        return value

    def schema_keywords(self) -> dict[str, object]:
        return {"pattern": schema_pattern(_DNS_LABEL), "maxLength": self.max_length}


WorkflowId = Annotated[str, DnsLabel("workflow id", 40)]
ModelName = Annotated[str, DnsLabel("model name", 30)]
TargetName = Annotated[str, DnsLabel("target name", 20)]
ClusterName = Annotated[str, DnsLabel("cluster name", 30)]
EnvironmentName = Annotated[str, DnsLabel("environment name", 20)]
ObjectName = Annotated[str, DnsLabel("name", 63)]

Count = Annotated[StrictInt, Field(gt=0)]
"""A whole number of at least 1, written as one: `true` and `2.0` are not counts."""

_DURATION: Final = re.compile(
    r"(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m(?!s))?(?:(?P<s>\d+(?:\.\d+)?)s)?(?:(?P<ms>\d+)ms)?"
)
_DURATION_PATTERN: Final = r"(\d+h)?(\d+m)?(\d+(\.\d+)?s)?(\d+ms)?"
"""_DURATION without its group names, which ECMA-262 spells otherwise."""


def parse_duration(value: object) -> object:
    """Turn "1h30m", "90s", "250ms" or a number of seconds into seconds (a float)."""
    if isinstance(value, bool):
        raise ValueError(
            f"{value!r} is not a duration; write seconds as a number, or e.g. '90s', '5m'"
        )
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        match = _DURATION.fullmatch(value.strip())
        if value.strip() and match is not None:
            return (
                int(match["h"] or 0) * 3600
                + int(match["m"] or 0) * 60
                + float(match["s"] or 0)
                + int(match["ms"] or 0) / 1000
            )
        raise ValueError(
            f"{value!r} is not a duration; write seconds as a number, or e.g. '90s', '5m', "
            "'1h30m', '250ms'"
        )
    return value


def _check_duration(seconds: float) -> float:
    if seconds > MAX_DURATION_SECONDS:
        raise ValueError(
            f"{seconds:g}s is longer than {MAX_DURATION_SECONDS:,} seconds (30 days), the "
            "longest duration a spec may give"
        )
    return seconds


Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    Field(ge=0),
    AfterValidator(_check_duration),
    WithJsonSchema(
        {
            "anyOf": [
                {
                    "type": "number",
                    "minimum": 0,
                    "maximum": MAX_DURATION_SECONDS,
                    "description": "seconds",
                },
                {
                    "type": "string",
                    "pattern": schema_pattern(_DURATION_PATTERN),
                    "examples": ["90s", "5m"],
                },
            ]
        }
    ),
]
"""A length of time in seconds, written as a number or as a string like '5m'."""


def _check_quantity(value: str) -> str:
    # Written into the manifest as it is, so it must be exactly what the API server parses:
    # no padding, and no value Kubernetes would round or refuse.
    if value != value.strip():
        raise SpecError(
            f"{value!r} has spaces around it; write the quantity alone", line_break_hint(value)
        )
    amount = parse_quantity(value)
    if amount < 0:
        raise ValueError(f"{value!r} is negative; a request or limit is more than 0")
    if amount == 0:
        # Kubernetes reads a limit of 0 as none and a request of 0 reserves nothing: the
        # benchmark would be unbounded, which requiring cpu and memory is there to prevent.
        raise SpecError(
            f"{value!r} is zero: a request of 0 reserves nothing and a limit of 0 sets none, so "
            "the benchmark would measure whatever its neighbours leave over",
            "give a quantity above 0, e.g. cpu: 1, memory: 2Gi",
        )
    if amount > MAX_QUANTITY:
        raise ValueError(
            f"{value!r} is more than Kubernetes holds in a quantity ({MAX_QUANTITY:,} of the "
            "base unit)"
        )
    if amount != amount.quantize(_SMALLEST_QUANTITY, rounding=ROUND_CEILING):
        raise ValueError(
            f"{value!r} is finer than 1m, the smallest step Kubernetes keeps; it would round it up"
        )
    return value


def _quantity_from_number(value: object) -> object:
    # YAML reads `cpu: 2` as an int; Kubernetes reads the same text as the quantity "2".
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a Kubernetes quantity; write a number, e.g. 2")
    if isinstance(value, int | float):
        return str(value)
    return value


Quantity = Annotated[
    str,
    BeforeValidator(_quantity_from_number),
    AfterValidator(_check_quantity),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_QUANTITY},
                {"type": "string", "examples": ["500m", "2", "4Gi"]},
            ]
        }
    ),
]
"""A Kubernetes resource quantity above 0, such as '500m', '2' or '4Gi'."""

_SMALLEST_QUANTITY: Final = Decimal("0.001")

_SHA256: Final = re.compile(r"[0-9a-f]{64}")


def _check_sha256(value: str) -> str:
    if not _SHA256.fullmatch(value):
        raise SpecError(
            f"{value!r} is not a sha256 digest: expected 64 lower-case hex characters "
            "(the output of `sha256sum FILE`)",
            line_break_hint(value),
        )
    return value


Sha256 = Annotated[
    str,
    AfterValidator(_check_sha256),
    Field(json_schema_extra={"pattern": schema_pattern(_SHA256)}),
]
"""A hex sha256 digest of a file's bytes."""


_IMAGE_NAME: Final = (
    r"(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*"
    r"(?::[0-9]+)?/)?"
    r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?"
)
_IMAGE_DIGEST: Final = r"@sha256:[0-9a-f]{64}"
_IMAGE_REF: Final = re.compile(f"{_IMAGE_NAME}(?:{_IMAGE_DIGEST})?")
"""An OCI image reference as the distribution project's grammar spells it: an optional
registry host (with port), lower-case path components, an optional tag and digest."""
_PINNED_IMAGE_REF: Final = re.compile(_IMAGE_NAME + _IMAGE_DIGEST)

_IMAGE_TAG_OR_DIGEST: Final = re.compile(r"(?::[^:/@]*)?(?:@.*)?\Z", re.DOTALL)
"""What follows an image's name: a tag after its last ':' (one not followed by '/', which
would be a registry's port) and a digest after '@'."""


def _check_image(value: str) -> str:
    # Every message quotes the reference masked: it lands in CI logs.
    shown = masked_address(value)
    if value != value.strip():
        raise SpecError(
            f"{shown!r} has spaces around it; write the image reference alone",
            line_break_hint(value),
        )
    if userinfo(value) is not None:
        raise SpecError(
            f"{shown!r} carries credentials (user:password@registry); they would be written "
            "into dist/ for everyone to read",
            "give the nodes the registry's credentials (an imagePullSecret, or the kubelet's "
            "credential provider) and the reference without them",
        )
    name = _IMAGE_TAG_OR_DIGEST.sub("", value)
    if len(name) > MAX_IMAGE_NAME_CHARS:
        raise ValueError(
            f"the image's name (registry and path) is {len(name):,} characters; at most "
            f"{MAX_IMAGE_NAME_CHARS} are allowed"
        )
    if not _IMAGE_REF.fullmatch(value):
        raise ValueError(
            f"{shown!r} is not an image reference: expected registry/path/name:tag or "
            "registry/path/name@sha256:<64 hex>, path in lower case"
        )
    # Only a registry host has a ':' before the first '/' (a path component cannot).
    registry = value.split("/", 1)[0] if "/" in value else ""
    if ":" in registry and (problem := port_problem(registry.rpartition(":")[2])):
        raise ValueError(f"{shown!r}: its registry's {problem}")
    return value


ImageRef = Annotated[
    str,
    AfterValidator(_check_image),
    Field(json_schema_extra={"pattern": schema_pattern(_IMAGE_REF)}),
]
"""A container image reference; the kubelet would refuse anything else at pull time."""


def _check_pinned_image(value: str) -> str:
    _check_image(value)
    if not _PINNED_IMAGE_REF.fullmatch(value):
        raise SpecError(
            f"{masked_address(value)!r} is not pinned by digest: a tag can move, and the "
            "artifact a pod mounts would no longer be the one reviewed",
            "write registry/repository@sha256:<64 hex>, as `make push-model` prints it",
        )
    return value


PinnedImageRef = Annotated[
    str,
    AfterValidator(_check_pinned_image),
    Field(json_schema_extra={"pattern": schema_pattern(_PINNED_IMAGE_REF)}),
]
"""An image or artifact reference with its digest, which is what is pulled."""


_SECRET_QUERY_KEYS: Final = re.compile(
    r"token|key|sig|signature|secret|password|passwd|credential|auth|x-amz-|x-goog-",
    re.IGNORECASE,
)


def split_url(value: str) -> SplitResult:
    """`value`'s parts, where it is short enough and holds no spaces or control characters
    (they must be percent-encoded)."""
    if len(value) > MAX_URL_CHARS:
        raise ValueError(
            f"the url is {len(value):,} characters; at most {MAX_URL_CHARS:,} are allowed"
        )
    if any(character.isspace() or not character.isprintable() for character in value):
        raise SpecError(
            "the url holds spaces or control characters; percent-encode them",
            line_break_hint(value),
        )
    return urlsplit(value)


def url_port(parts: SplitResult, value: str) -> int | None:
    """The port `value` names, if any, once it is sure to name a valid host and a TCP port
    (the rule an image's registry is held to too)."""
    shown = masked_address(value)
    if problem := url_port_problem(parts):
        raise ValueError(f"url {shown!r}: its {problem}")
    try:
        named = parts.port
    except ValueError:
        named = None
        parts = parts._replace(netloc="")
    if not parts.hostname:
        raise ValueError(f"url {shown!r} has no valid host ({parts.scheme}://host/path)")
    return named


def _check_https_url(value: str) -> str:
    """An https URL with a host, and nothing in it that looks like a credential: the URL is
    written into config.json in dist/, which everyone with the repository can read."""
    parts = split_url(value)
    shown = masked_address(value)
    if parts.scheme != "https":
        raise SpecError(
            f"url {shown!r} must use https",
            "plain http lets anyone on the path swap the model; the sha256 would catch it, "
            "but only after the download",
        )
    if parts.username is not None or parts.password is not None:
        raise SpecError(
            "the url carries credentials (user:password@host); they would be written into "
            "dist/ for everyone to read",
            "serve the model where the runner pods may read it without credentials, or bake "
            "it into the image (image_path)",
        )
    port = url_port(parts, value)
    if port not in (None, 443):
        raise SpecError(
            f"url {shown!r} names port {port}",
            "the runner pods' NetworkPolicy allows downloads on port 443 only (a policy cannot "
            "name hosts, so it opens no more ports than it must): serve the model on 443",
        )
    secret = [key for key, _ in parse_qsl(parts.query) if _SECRET_QUERY_KEYS.search(key)]
    if secret:
        raise SpecError(
            f"the url's query carries what looks like a credential ({', '.join(secret)}); it "
            "would be written into dist/ for everyone to read",
            "a signed or tokened URL expires and leaks; serve the model without one, or bake "
            "it into the image (image_path)",
        )
    return value


HttpsUrl = Annotated[
    str,
    AfterValidator(_check_https_url),
    Field(json_schema_extra={"pattern": "^https://[^/@?#]+"}),
]
"""Where the runner downloads a model from."""
