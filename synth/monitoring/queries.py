"""PromQL pieces the dashboard and the rules share: selectors narrowed by the dashboard's
variables, and a variant's labels."""

from typing import Final

from contract.metrics import CLUSTER_LABEL, GPU_TYPE_LABEL, WORKFLOW_LABEL
from contract.variant import SETTING_LABELS

FILTERED_LABELS: Final = (WORKFLOW_LABEL, CLUSTER_LABEL)
"""The labels every metric has and the dashboard offers as variables."""


def selector(series: str, **matchers: str) -> str:
    """`series{workflow=~"$workflow",cluster=~"$cluster",...}`: the dashboard's choice of
    workflows and clusters (variables hold regular expressions: All is `.*`), plus exact
    `matchers`."""
    narrowed = [f'{label}=~"${label}"' for label in FILTERED_LABELS]
    exact = [f'{label}="{value}"' for label, value in sorted(matchers.items())]
    return f"{series}{{{','.join(narrowed + exact)}}}"


def legend(*labels: str) -> str:
    """Grafana's legend template showing each label's value: `{{workflow}} {{cluster}}`."""
    return " ".join(f"{{{{{label}}}}}" for label in labels)


VARIANT_LEGEND: Final = legend(CLUSTER_LABEL, GPU_TYPE_LABEL, *SETTING_LABELS)
"""A series' name in a legend: where it ran and what it measured."""
