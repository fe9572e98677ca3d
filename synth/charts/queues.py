"""Kueue LocalQueues: one per queue name a workflow uses, in that workflow's namespace."""

from cdk8s import Chart
from constructs import Construct

from contract.layout import APP, MANAGED_BY
from synth.constructs import api_object, joined_id


class QueuesChart(Chart):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_queue: str,
        queues: set[tuple[str, str]],
    ) -> None:
        """`queues` holds (namespace, queue name) pairs."""
        super().__init__(scope, construct_id, disable_resource_name_hashes=True)
        for namespace, queue in sorted(queues):
            api_object(
                self,
                joined_id(namespace, queue),
                "kueue.x-k8s.io/v1beta2",
                "LocalQueue",
                {
                    "metadata": {
                        "name": queue,
                        "namespace": namespace,
                        "labels": {MANAGED_BY: APP},
                    },
                    "spec": {"clusterQueue": cluster_queue},
                },
            )
