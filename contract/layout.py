"""Names that synth writes into a cluster and the collector reads back."""

from typing import Final

CLUSTER_IDENTITY: Final = "benchfleet-cluster"
"""A ConfigMap in each benchfleet namespace of a cluster, applied from dist/<cluster>/: which
fleet cluster this is. The collector records nothing under a cluster until it has read this
ConfigMap and found that cluster's name in it."""
CLUSTER_KEY: Final = "cluster"
REGION_KEY: Final = "region"
