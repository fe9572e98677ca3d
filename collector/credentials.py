"""Find the credentials for a cluster through a chain of secret providers, first match wins.

1. environment: `BENCHFLEET_K8S_KUBECONFIG_<CLUSTER>` or `BENCHFLEET_K8S_KUBECONFIG` holds a
   kubeconfig's YAML (what a CI secret injects);
2. credentials folder: `config/credentials/k8s_kubeconfig_<cluster>` or `.../k8s_kubeconfig`,
   a kubeconfig file (mode 0600 expected);
3. in-cluster: the pod's service account token (the collector running as a CronJob);
4. kubectl's own: `$KUBECONFIG` or `~/.kube/config`.

Only the provider's name is ever printed or logged, never a secret's content; errors about a
malformed kubeconfig name the provider and the line, not what is on it.
"""

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml
from kubernetes import client, config

from collector.redact import Redactor, kubeconfig_secrets

SECRET_NAME: Final = "k8s_kubeconfig"
ENV_PREFIX: Final = "BENCHFLEET_"
DEFAULT_CREDENTIALS_DIR: Final = Path("config") / "credentials"
_SERVICE_ACCOUNT_TOKEN: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount/token")


class CredentialsError(RuntimeError):
    """No provider had credentials, or the ones found cannot be used."""


@dataclass(frozen=True)
class Connection:
    """An API client and where its credentials came from (for messages, never the secret)."""

    api_client: client.ApiClient
    provider: str
    context: str | None
    redactor: Redactor = field(default_factory=Redactor)
    """Masks what the kubeconfig holds of secrets, for every message about this connection."""


def _secret_names(cluster: str) -> tuple[str, str]:
    return f"{SECRET_NAME}_{cluster.replace('-', '_')}", SECRET_NAME


def _parse(text: str, where: str) -> dict[str, Any]:
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise CredentialsError(f"the kubeconfig from {where} is not valid YAML{line}") from None
    if not isinstance(loaded, dict) or "clusters" not in loaded:
        raise CredentialsError(f"the kubeconfig from {where} has no `clusters`: not a kubeconfig")
    return loaded


def _context(kubeconfig: Mapping[str, Any], cluster: str, wanted: str | None) -> str | None:
    """The explicit context, else one named like the fleet's cluster, else the current one."""
    names = [entry.get("name") for entry in kubeconfig.get("contexts") or []]
    if wanted is not None:
        if wanted not in names:
            raise CredentialsError(f"no context {wanted!r} in the kubeconfig; it has {names}")
        return wanted
    return cluster if cluster in names else None


class _Complaints(logging.Filter):
    """Keeps what is logged on the root logger, and lets none of it through."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.messages.append(record.getMessage())
        return False


@contextmanager
def _library_complaints() -> Iterator[list[str]]:
    """What the kubernetes library logs while it loads a kubeconfig. It logs an exec plugin's
    failure (with the plugin's stderr) on the root logger rather than raising it, which would
    print it whole, unmasked, and configure the root logger on the way (with no handler there,
    `logging.error` calls basicConfig: the NullHandler prevents that)."""
    root = logging.getLogger()
    complaints, quiet = _Complaints(), logging.NullHandler()
    root.addFilter(complaints)
    root.addHandler(quiet)
    try:
        yield complaints.messages
    finally:
        root.removeHandler(quiet)
        root.removeFilter(complaints)


def _from_kubeconfig(
    kubeconfig: dict[str, Any], where: str, cluster: str, context: str | None
) -> Connection:
    chosen = _context(kubeconfig, cluster, context)
    redactor = Redactor().adding(kubeconfig_secrets(kubeconfig))
    configuration = client.Configuration()
    try:
        with _library_complaints() as complaints:
            config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
                kubeconfig, context=chosen, client_configuration=configuration
            )
    except (config.ConfigException, KeyError, ValueError, TypeError) as error:
        complaints = [str(error) or type(error).__name__]
    if complaints:
        # Only the first line: an exec plugin's stderr follows it, and it may say anything
        # (masked all the same, in case the plugin echoes what it was given).
        first = complaints[0].splitlines()[0] if complaints[0] else "no reason given"
        raise CredentialsError(f"the kubeconfig from {where} cannot be used: {redactor(first)}")
    return Connection(client.ApiClient(configuration), where, chosen, redactor)


def connect(
    cluster: str,
    *,
    context: str | None = None,
    credentials_dir: Path = DEFAULT_CREDENTIALS_DIR,
    environ: Mapping[str, str] = os.environ,
    home: Path | None = None,
) -> Connection:
    """An API client for `cluster`, from the first provider in the chain that has one."""
    specific, generic = _secret_names(cluster)
    for name in (specific, generic):
        variable = ENV_PREFIX + name.upper()
        if environ.get(variable):
            where = f"environment variable {variable}"
            return _from_kubeconfig(_parse(environ[variable], where), where, cluster, context)
    for name in (specific, generic):
        path = credentials_dir / name
        if path.is_file():
            where = f"credentials file {path}"
            text = path.read_text(encoding="utf-8")
            return _from_kubeconfig(_parse(text, where), where, cluster, context)
    if _SERVICE_ACCOUNT_TOKEN.is_file() and "KUBERNETES_SERVICE_HOST" in environ:
        configuration = client.Configuration()
        config.load_incluster_config(  # type: ignore[no-untyped-call]
            client_configuration=configuration
        )
        return Connection(client.ApiClient(configuration), "in-cluster service account", None)
    kubectl = environ.get("KUBECONFIG") or str((home or Path.home()) / ".kube" / "config")
    first = Path(kubectl.split(os.pathsep)[0])
    if first.is_file():
        where = f"kubeconfig {first}"
        text = first.read_text(encoding="utf-8")
        return _from_kubeconfig(_parse(text, where), where, cluster, context)
    raise CredentialsError(
        f"no credentials for cluster {cluster}: set {ENV_PREFIX}{specific.upper()} (or "
        f"{ENV_PREFIX}{generic.upper()}) to a kubeconfig, put one at {credentials_dir / specific}"
        f" (or {credentials_dir / generic}), run in a pod with a service account, or have "
        f"kubectl configured ({kubectl})"
    )
