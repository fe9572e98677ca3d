"""A cluster's monitoring objects: the alert rules as a plain rules file in a ConfigMap (for a
Prometheus that mounts it), as a PrometheusRule where the Operator is installed, and the
Grafana dashboard as a ConfigMap its sidecar loads."""

from collections.abc import Sequence
from typing import Final

from cdk8s import Chart
from constructs import Construct

from contract.layout import APP, MANAGED_BY, RULES_LABEL
from synth.constructs import api_object
from synth.digests import digest
from synth.fleet import Monitoring
from synth.monitoring.dashboard import dashboard_json
from synth.monitoring.rules import Schedule, rule_groups, rules_file
from synth.names import content_name

RULES_NAME: Final = "benchfleet-alert-rules"
RULES_KEY: Final = "benchfleet.rules.yaml"
DASHBOARD_NAME: Final = "benchfleet-dashboard"
DASHBOARD_KEY: Final = "benchfleet.json"


class MonitoringChart(Chart):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        monitoring: Monitoring,
        schedules: Sequence[Schedule],
    ) -> None:
        super().__init__(scope, construct_id, disable_resource_name_hashes=True)
        namespace = monitoring.namespace
        managed = {MANAGED_BY: APP}
        rules_labels = {RULES_LABEL: "true", **managed}
        self._config_map(RULES_NAME, namespace, rules_labels, {RULES_KEY: rules_file(schedules)})
        if monitoring.prometheus_rule is not None:
            api_object(
                self,
                "prometheus-rule",
                "monitoring.coreos.com/v1",
                "PrometheusRule",
                {
                    "metadata": {
                        "name": APP,
                        "namespace": namespace,
                        "labels": {**monitoring.prometheus_rule.labels, **managed},
                    },
                    "spec": {"groups": rule_groups(schedules)},
                },
            )
        if monitoring.grafana_dashboard is not None:
            labels = {**monitoring.grafana_dashboard.labels, **managed}
            self._config_map(DASHBOARD_NAME, namespace, labels, {DASHBOARD_KEY: dashboard_json()})

    def _config_map(
        self, prefix: str, namespace: str, labels: dict[str, str], data: dict[str, str]
    ) -> None:
        """Immutable and named for its content, like every ConfigMap synth writes: sidecars
        find it by its labels, whatever its name."""
        metadata = {"name": content_name(prefix, digest(data)), "namespace": namespace}
        api_object(
            self,
            prefix,
            "v1",
            "ConfigMap",
            {"metadata": {**metadata, "labels": labels}, "immutable": True, "data": data},
        )
