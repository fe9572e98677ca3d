"""What a cluster running kube-prometheus-stack has, as far as synth's monitoring objects
need it (`monitoring` in specs/clusters.yaml, docs/monitoring.md): their namespace, and,
where the fleet says the Prometheus Operator is installed, its PrometheusRule kind.

A stand-in, kept thin: no Prometheus or Grafana runs in the harness, and this CRD takes any
spec. It is shaped as the Operator's (group, version, kind, plural, namespaced), so the API
server maps and stores synth's objects as a real cluster does; the Operator's own schema
checks what synth writes in tests/synth (tests/data/crds).
"""

from typing import Any, Final

from synth.fleet import Monitoring

GROUP: Final = "monitoring.coreos.com"
PROMETHEUS_RULE_CRD: Final[dict[str, Any]] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"prometheusrules.{GROUP}"},
    "spec": {
        "group": GROUP,
        "names": {
            "kind": "PrometheusRule",
            "listKind": "PrometheusRuleList",
            "plural": "prometheusrules",
            "singular": "prometheusrule",
            "categories": ["prometheus-operator"],
            "shortNames": ["promrule"],
        },
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}


def monitoring_documents(monitoring: Monitoring | None) -> list[dict[str, Any]]:
    """The objects a cluster with `monitoring` has before Flux applies synth's."""
    if monitoring is None:
        return []
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": monitoring.namespace},
    }
    if monitoring.prometheus_rule is None:
        return [namespace]
    return [namespace, PROMETHEUS_RULE_CRD]
