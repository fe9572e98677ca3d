"""What a runner's container is given of its cluster's results store (docs/specs.md,
"Results store"): the standard AWS variables its client is built from, the credentials from
the cluster's Secret, and the names its objects' keys are made of (contract/lake.py's
`raw_key`)."""

from typing import Any

from contract.lake import (
    CA_BUNDLE_ENV,
    CLUSTER_ENV,
    CREDENTIAL_KEYS,
    ENDPOINT_ENV,
    JOB_NAME_ENV,
    METADATA_DISABLED_ENV,
    REGION_ENV,
    RESULTS_URL_ENV,
    parse_lake_url,
)
from contract.layout import JOB_NAME_LABEL
from synth.fleet import ResultsStore


def _field(path: str) -> dict[str, Any]:
    return {"fieldRef": {"fieldPath": path}}


def store_env(
    store: ResultsStore, cluster: str, workflow: str, ca_file: str | None
) -> list[dict[str, Any]]:
    """The env of a runner of `workflow` writing to `store` from `cluster`; `ca_file` is where
    its CA bundle is mounted, where it has one."""
    env: list[dict[str, Any]] = [
        {"name": RESULTS_URL_ENV, "value": str(parse_lake_url(store.url))},
        {"name": ENDPOINT_ENV, "value": store.endpoint},
        {"name": REGION_ENV, "value": store.region},
        # Credentials come from the Secret or nowhere: never the node's own role, which a
        # client asks the instance metadata service for when the Secret gives none.
        {"name": METADATA_DISABLED_ENV, "value": "true"},
    ]
    if ca_file is not None:
        env.append({"name": CA_BUNDLE_ENV, "value": ca_file})
    # Optional: a namespace without the Secret still runs its benchmarks; the runner, denied
    # by the store, hands its result over as it does without one and says why.
    env += [
        {
            "name": key,
            "valueFrom": {
                "secretKeyRef": {"name": store.secret_of(workflow), "key": key, "optional": True}
            },
        }
        for key in CREDENTIAL_KEYS
    ]
    return [
        *env,
        {"name": CLUSTER_ENV, "value": cluster},
        # Set by the Job controller on every pod of the Job: the name is hashed from this
        # template, so the template cannot hold it as a value.
        {"name": JOB_NAME_ENV, "valueFrom": _field(f"metadata.labels['{JOB_NAME_LABEL}']")},
    ]
