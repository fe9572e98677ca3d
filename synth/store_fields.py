"""The fleet file's `results_store:` strings, each held to the rule contract/lake.py spells
for it (`lake_url_problem`, `endpoint_problem`): a value the runner's client refuses would
be found only in a pod, and a credential in one would be published in dist/."""

import re
from dataclasses import dataclass
from typing import Final

from contract.lake import MAX_ENDPOINT, MAX_PREFIX, endpoint_problem, lake_url_problem
from synth.fields import StringRule, line_break_hint, schema_pattern
from synth.hints import SpecError

_REGION: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?")


@dataclass(frozen=True)
class LakeUrlRule(StringRule):
    """`s3://BUCKET/PREFIX`: an S3 bucket name and plain folders, no credentials."""

    def check(self, value: str) -> str:
        if problem := lake_url_problem(value):
            raise SpecError(
                problem,
                line_break_hint(value)
                or "write s3://BUCKET/PREFIX, e.g. s3://benchmarks/team-a; the credentials go "
                "in the Secret credentials_secret names",
            )
        return value

    def schema_keywords(self) -> dict[str, object]:
        return {
            "pattern": schema_pattern(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](?:/[^@\s]*)?"),
            "maxLength": len("s3://") + 63 + 1 + MAX_PREFIX + 1,
            "examples": ["s3://benchmarks/team-a"],
        }


@dataclass(frozen=True)
class EndpointRule(StringRule):
    """The store's S3 endpoint: https://HOST[:PORT] (plain http to loopback or a Service of
    the cluster only)."""

    def check(self, value: str) -> str:
        if problem := endpoint_problem(value):
            raise SpecError(
                problem,
                line_break_hint(value)
                or "write the endpoint alone, e.g. https://s3.us-east-1.amazonaws.com or "
                "https://minio.example.com:9000; the bucket goes in url",
            )
        return value

    def schema_keywords(self) -> dict[str, object]:
        return {
            "pattern": schema_pattern(r"https?://[^/@?#\s]+/?"),
            "maxLength": MAX_ENDPOINT,
            "examples": ["https://s3.us-east-1.amazonaws.com"],
        }


@dataclass(frozen=True)
class StoreRegion(StringRule):
    """The region a request is signed for (SigV4's credential scope)."""

    def check(self, value: str) -> str:
        if not _REGION.fullmatch(value):
            raise SpecError(
                f"region {value[:80]!r} is not a store's region: letters, digits, '-' and '_', "
                "at most 63",
                line_break_hint(value) or "e.g. us-east-1; a store that has none takes us-east-1",
            )
        return value

    def schema_keywords(self) -> dict[str, object]:
        return {"pattern": schema_pattern(_REGION), "maxLength": 63, "examples": ["us-east-1"]}
