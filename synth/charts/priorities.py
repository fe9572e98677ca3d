"""The fleet's PriorityClasses (cluster-scoped, so their names carry a prefix)."""

from cdk8s import Chart
from constructs import Construct

from contract.layout import APP, MANAGED_BY
from synth.constructs import api_object
from synth.fleet import Fleet
from synth.names import priority_class_name


class PriorityClassesChart(Chart):
    def __init__(self, scope: Construct, construct_id: str, *, fleet: Fleet) -> None:
        super().__init__(scope, construct_id, disable_resource_name_hashes=True)
        for name, spec in sorted(fleet.priority_classes.items()):
            api_object(
                self,
                name,
                "scheduling.k8s.io/v1",
                "PriorityClass",
                {
                    "metadata": {
                        "name": priority_class_name(name),
                        "labels": {MANAGED_BY: APP},
                    },
                    "value": spec.value,
                    "preemptionPolicy": spec.preemption,
                    "globalDefault": False,
                    "description": spec.description or f"benchfleet priority {name}",
                },
            )
