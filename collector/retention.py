"""`collector retention`: how long the lake keeps what runners wrote, as the bucket's own
lifecycle rule, so the store expires objects with no collector running.

Raw objects (raw/, a runner's whole result per variant and attempt) expire after N days:
by then gather has stored them, and sync has published every recorded Job, samples and all.
Published runs (runs/) are kept: no rule names them. The rule is the bucket's one rule
with RULE_ID for this lake's prefix; every other rule of the bucket is kept as it is.
"""

from collections.abc import Mapping
from typing import Any, Final

from contract.lake import RAW, LakeUrl
from contract.objectstore import StoreError, client, error_kind

RULE_PREFIX: Final = "benchfleet-raw"
MAX_DAYS: Final = 36_500


def rule_id(lake: LakeUrl) -> str:
    """The rule's ID: one per lake prefix, so two lakes in one bucket keep theirs apart."""
    return f"{RULE_PREFIX}:{lake.prefix}" if lake.prefix else RULE_PREFIX


def raw_rule(lake: LakeUrl, days: int) -> dict[str, Any]:
    """Expire every object under the lake's raw/ `days` days after it was written."""
    return {
        "ID": rule_id(lake),
        "Filter": {"Prefix": lake.key(RAW, "")},
        "Status": "Enabled",
        "Expiration": {"Days": days},
    }


def _call(what: str, call: Any, **arguments: Any) -> Any:
    from botocore.exceptions import BotoCoreError, ClientError  # noqa: PLC0415 - lazily

    try:
        return call(**arguments)
    except (BotoCoreError, ClientError) as error:
        code = (
            error.response.get("Error", {}).get("Code") if isinstance(error, ClientError) else None
        )
        if code == "NoSuchLifecycleConfiguration":
            return {"Rules": []}
        kind = error_kind(error)
        raise StoreError(kind, f"{what}: {kind.value}: {error}") from error


def rules(lake: LakeUrl, env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The bucket's lifecycle rules as the store says them ([] for none)."""
    s3 = client(env)
    answer = _call(
        f"read the lifecycle of s3://{lake.bucket}",
        s3.get_bucket_lifecycle_configuration,
        Bucket=lake.bucket,
    )
    return list(answer.get("Rules", []))


def set_raw_days(lake: LakeUrl, days: int, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Make the bucket expire the lake's raw objects after `days` days, keeping its other
    rules; the rule set. Needs credentials that may set the bucket's configuration."""
    if not 1 <= days <= MAX_DAYS:
        raise ValueError(f"raw objects are kept 1 to {MAX_DAYS} days, not {days}")
    rule = raw_rule(lake, days)
    kept = [other for other in rules(lake, env) if other.get("ID") != rule["ID"]]
    s3 = client(env)
    _call(
        f"set the lifecycle of s3://{lake.bucket}",
        s3.put_bucket_lifecycle_configuration,
        Bucket=lake.bucket,
        LifecycleConfiguration={"Rules": [*kept, rule]},
    )
    return rule
