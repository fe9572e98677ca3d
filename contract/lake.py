"""The result lake: an S3-compatible bucket every runner, collector, CI job and notebook shares.

Two kinds of object live under a lake's prefix, each kind under its own folder:

- `raw/<workflow>/<cluster>/<job>/<variant>/<attempt>.json`: what a runner wrote, one whole
  result (every sample, every stage, the fingerprint) per variant and attempt. A workflow's
  pods are given write access to `raw/<workflow>/` only (docs/lake.md shows the policy), so
  one workflow's pods cannot overwrite another's results. Raw objects expire (lifecycle).
- `runs/workflow=<w>/cluster=<c>/date=<YYYY-MM-DD>/<job>.<format>`: what `collector sync`
  published of a stored Job, append-only and written once (a second collector's copy is
  refused by the store, not written twice). The `key=value` folders are the Hive layout
  DuckDB and pyarrow read as columns. Runs are kept.

This module is the one place that spells a lake's URL, its keys and its environment; it
imports no client, so that every floor may use it.
"""

import hashlib
import re
from ipaddress import ip_address
from typing import Final
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

from contract.addresses import masked_address, url_port_problem, userinfo

SCHEME: Final = "s3://"
LAKE_ENV: Final = "BENCHFLEET_LAKE"
"""The lake a command reads or writes by default (`s3://BUCKET/PREFIX`)."""
RESULTS_URL_ENV: Final = "BENCHFLEET_RESULTS_URL"
"""The lake a runner writes its results to, set by synth where the cluster has a store."""
CLUSTER_ENV: Final = "BENCHFLEET_CLUSTER"
"""The cluster a pod runs on, as the fleet names it: a folder of its raw objects' keys."""
JOB_NAME_ENV: Final = "BENCHFLEET_JOB_NAME"
"""The Job a pod belongs to: a folder of its raw objects' keys."""
ENDPOINT_ENV: Final = "AWS_ENDPOINT_URL"
REGION_ENV: Final = "AWS_REGION"
CA_BUNDLE_ENV: Final = "AWS_CA_BUNDLE"
ACCESS_KEY_ENV: Final = "AWS_ACCESS_KEY_ID"
SECRET_KEY_ENV: Final = "AWS_SECRET_ACCESS_KEY"
"""The standard AWS variables: how every command, and the runner, finds the store."""
METADATA_DISABLED_ENV: Final = "AWS_EC2_METADATA_DISABLED"
"""Set in a runner's pod: its credentials are the Secret's or none, never the node's role."""
CREDENTIAL_KEYS: Final = (ACCESS_KEY_ENV, SECRET_KEY_ENV)
"""The keys of a results store's credentials Secret, named like the variables they fill."""

RAW: Final = "raw"
RUNS: Final = "runs"
RESULT_SUFFIX: Final = ".json"

# S3's rules for a bucket's name (DNS-compatible, as path-style and virtual-host both need).
_BUCKET: Final = re.compile(r"\A[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]\Z")
_SEGMENT: Final = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._=-]{0,127}\Z")
MAX_PREFIX: Final = 512
MAX_RESULT_BYTES: Final = 16 << 20
"""The most a variant's whole result object may hold: its samples are at most 65,536
durations, compressed (contract/samples.py), and the rest of a result is a few KiB; a
reader reads no more than this, whatever a reference says."""


class LakeUrlError(ValueError):
    """A lake URL that is not `s3://BUCKET[/PREFIX]`; the message masks its credentials."""


class LakeUrl(BaseModel):
    """`s3://BUCKET/PREFIX`: a bucket and a prefix inside it (no leading or trailing '/')."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bucket: str
    prefix: str = ""

    def __str__(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}" if self.prefix else f"{SCHEME}{self.bucket}"

    def key(self, *parts: str) -> str:
        """The key of `parts` under this lake's prefix."""
        return "/".join((self.prefix, *parts) if self.prefix else parts)


def lake_url_problem(text: str) -> str | None:
    """What is wrong with `text` as a lake URL, or None. Never quotes credentials."""
    shown = masked_address(text)
    if userinfo(text) is not None or "@" in text:
        return f"{shown}: a lake URL carries no credentials (they come from the cluster)"
    if not text.startswith(SCHEME):
        return f"{shown}: a lake URL is s3://BUCKET/PREFIX"
    bucket, _, prefix = text[len(SCHEME) :].partition("/")
    if not _BUCKET.match(bucket) or ".." in bucket:
        return (
            f"{shown}: bucket {bucket!r} is no S3 bucket name (3 to 63 lowercase letters, "
            "digits, '.' and '-', starting and ending with a letter or digit)"
        )
    prefix = prefix.rstrip("/")
    if len(prefix) > MAX_PREFIX:
        return f"{shown}: the prefix is longer than {MAX_PREFIX} characters"
    for segment in prefix.split("/") if prefix else ():
        if segment in {".", ".."} or not _SEGMENT.match(segment):
            return (
                f"{shown}: prefix folder {segment!r} is not plain (letters, digits, '.', "
                "'_', '=', '-'; no empty folder, no '.' or '..')"
            )
    return None


_PLAIN_HTTP_SUFFIXES: Final = (".svc", ".svc.cluster.local")
"""Kubernetes Service names (`<service>.<namespace>.svc[.cluster.local]`): traffic to them
stays inside the cluster, where a store may serve plain http."""
MAX_ENDPOINT: Final = 2048
_LABEL: Final = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_HOST_NAME: Final = re.compile(rf"\A(?=.{{1,253}}\Z){_LABEL}(?:\.{_LABEL})*\Z")
_ENDPOINT_FORM: Final = "https://HOST[:PORT]"


def _is_address(host: str) -> bool:
    try:
        ip_address(host)
    except ValueError:
        return False
    return True


def _inside(host: str) -> bool:
    """Whether `host` is this machine or a Service of the pod's own cluster."""
    if host == "localhost" or host.endswith(_PLAIN_HTTP_SUFFIXES):
        return True
    return _is_address(host) and ip_address(host).is_loopback


def endpoint_problem(text: str) -> str | None:
    """What is wrong with `text` as a store's endpoint (`AWS_ENDPOINT_URL`), or None: an
    https URL of a host and port, or plain http to loopback or a cluster's own Service,
    without credentials, path, query or fragment. Never quotes credentials."""
    shown = masked_address(text)
    if len(text) > MAX_ENDPOINT or any(c.isspace() or not c.isprintable() for c in text):
        return (
            f"{shown[:80]!r}: an endpoint is a URL of at most {MAX_ENDPOINT} printable characters"
        )
    if userinfo(text) is not None or "@" in text:
        return f"{shown}: an endpoint carries no credentials (they come from the cluster's Secret)"
    problem = _url_problem(text)
    return f"{shown}: {problem}" if problem else None


def _url_problem(text: str) -> str | None:
    try:
        parts = urlsplit(text)
    except ValueError:  # an unclosed '[' of an IPv6 address
        parts = urlsplit("")
    host = parts.hostname
    problem = None
    if parts.scheme not in ("https", "http") or not host:
        problem = f"an endpoint is {_ENDPOINT_FORM}"
    elif parts.path not in ("", "/") or parts.query or parts.fragment or text[-1] in "?#":
        problem = f"an endpoint is {_ENDPOINT_FORM}, with no path, query or fragment"
    elif port := url_port_problem(parts):
        problem = f"its {port}"
    elif not (_HOST_NAME.match(host) or _is_address(host)):
        problem = f"an endpoint names its host by a DNS name or an address ({_ENDPOINT_FORM})"
    elif parts.scheme == "http" and not _inside(host):
        problem = (
            "plain http is only for loopback or a Service inside the cluster (a host ending in "
            f"{' or '.join(_PLAIN_HTTP_SUFFIXES)}); anyone on the way could read the results"
        )
    return problem


def endpoint_port(text: str) -> int:
    """The TCP port a valid endpoint is reached on: the one it names, else its scheme's."""
    parts = urlsplit(text)
    return parts.port or (443 if parts.scheme == "https" else 80)


def endpoint_by_name(text: str) -> bool:
    """Whether a valid endpoint names its host by a DNS name (so a pod needs DNS to reach it),
    not by an address."""
    return not _is_address(urlsplit(text).hostname or "")


def parse_lake_url(text: str) -> LakeUrl:
    """`text` as a lake URL; LakeUrlError (masked) where it is not one."""
    problem = lake_url_problem(text)
    if problem is not None:
        raise LakeUrlError(problem)
    bucket, _, prefix = text[len(SCHEME) :].partition("/")
    return LakeUrl(bucket=bucket, prefix=prefix.rstrip("/"))


def _segment(value: str, what: str) -> str:
    if not _SEGMENT.match(value) or value in {".", ".."}:
        raise LakeUrlError(f"{what} {value!r} cannot name a folder of the lake")
    return value


def raw_prefix(lake: LakeUrl, workflow: str) -> str:
    """Where a workflow's runners write, and all they may write (with a trailing '/')."""
    return lake.key(RAW, _segment(workflow, "workflow"), "")


def raw_job_prefix(lake: LakeUrl, *, workflow: str, cluster: str, job: str | None = None) -> str:
    """Where a cluster's runners of a workflow wrote (one Job's, where given), '/' ended:
    what `collector forget --everywhere` deletes of a run's raw objects."""
    folders = [_segment(workflow, "workflow"), _segment(cluster, "cluster")]
    if job is not None:
        folders.append(_segment(job, "job"))
    return lake.key(RAW, *folders, "")


def raw_key(
    lake: LakeUrl, *, workflow: str, cluster: str, job: str, variant: str, attempt: str
) -> str:
    """The key of one variant's whole result from one attempt (a pod) of a Job."""
    folders = (
        _segment(workflow, "workflow"),
        _segment(cluster, "cluster"),
        _segment(job, "job"),
        _segment(variant, "variant"),
    )
    return lake.key(RAW, *folders, _segment(attempt, "attempt") + RESULT_SUFFIX)


def runs_prefix(lake: LakeUrl, workflow: str | None = None, cluster: str | None = None) -> str:
    """The published runs' folder, of one workflow (and cluster) where given ('/' ended)."""
    parts = [RUNS]
    if workflow is not None:
        parts.append(f"workflow={_segment(workflow, 'workflow')}")
        if cluster is not None:
            parts.append(f"cluster={_segment(cluster, 'cluster')}")
    return lake.key(*parts, "")


def run_key(lake: LakeUrl, *, workflow: str, cluster: str, date: str, job: str, ext: str) -> str:
    """The key of one published Job's file in one format (`jsonl.gz`, `parquet`)."""
    return lake.key(
        RUNS,
        f"workflow={_segment(workflow, 'workflow')}",
        f"cluster={_segment(cluster, 'cluster')}",
        f"date={_segment(date, 'date')}",
        f"{_segment(job, 'job')}.{ext}",
    )


class StoredObject(BaseModel):
    """Where a runner put a result, and what its bytes hash to: the collector trusts the
    object only where the bytes it reads hash to `sha256`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str = Field(min_length=1, max_length=1024)
    """The object's key in the bucket of the lake the pod was given."""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    """The hex SHA-256 of the object's bytes."""
    bytes: int = Field(ge=0)
    """The object's size."""


def sha256_of(data: bytes) -> str:
    """The hex digest a StoredObject carries."""
    return hashlib.sha256(data).hexdigest()
