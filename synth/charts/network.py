"""NetworkPolicies: nothing in or out by default; the collector may reach the API server;
runner pods of a workflow that downloads its model may reach HTTPS and DNS; where the cluster
has a results store, the runners and the collector may reach its endpoint."""

from typing import Any, Final

from cdk8s import Chart
from constructs import Construct

from contract.lake import endpoint_by_name, endpoint_port
from contract.layout import APP, APP_LABEL, MANAGED_BY, WORKFLOW_LABEL
from synth.constructs import api_object, joined_id
from synth.fleet import Cluster, ResultsStore

API_SERVER_PORTS = (443, 6443)
RESULTS_STORE_POLICY: Final = "results-store"
_DNS: Final = {
    "to": [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ],
    "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
}
"""Egress to the cluster's DNS, for a pod that reaches a host by its name."""
_STORE_CLIENTS: Final = ("benchfleet-collector", "benchfleet-runner")
"""The `app.kubernetes.io/name` of the pods that read or write the results store."""


def _store_egress(store: ResultsStore) -> dict[str, Any]:
    """The results store's policy: its endpoint's networks on its port, and DNS where the
    endpoint is a name. NetworkPolicy cannot name a host, so the fleet lists its networks."""
    to_store = {
        "to": [{"ipBlock": {"cidr": cidr}} for cidr in store.endpoint_cidrs],
        "ports": [{"protocol": "TCP", "port": endpoint_port(store.endpoint)}],
    }
    return {
        "podSelector": {
            "matchExpressions": [
                {"key": "app.kubernetes.io/name", "operator": "In", "values": list(_STORE_CLIENTS)}
            ]
        },
        "policyTypes": ["Egress"],
        "egress": [_DNS, to_store] if endpoint_by_name(store.endpoint) else [to_store],
    }


class NetworkPoliciesChart(Chart):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: Cluster,
        namespaces: list[str],
        downloading: dict[str, list[str]],
        store: ResultsStore | None,
    ) -> None:
        """`downloading` maps a namespace to the workflows whose models come from a URL;
        `store` is the cluster's results store."""
        super().__init__(scope, construct_id, disable_resource_name_hashes=True)
        labels = {MANAGED_BY: APP}
        for namespace in namespaces:

            def policy(name: str, spec: dict[str, Any], ns: str = namespace) -> None:
                api_object(
                    self,
                    joined_id(ns, name),
                    "networking.k8s.io/v1",
                    "NetworkPolicy",
                    {"metadata": {"name": name, "namespace": ns, "labels": labels}, "spec": spec},
                )

            policy("default-deny", {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})
            # The API server is not a pod: only an ipBlock can allow it. With in-cluster
            # config the client dials the kubernetes Service, and most CNIs evaluate the
            # policy after kube-proxy has translated that to an endpoint address, so the
            # clusters config lists the endpoints' addresses.
            policy(
                "collector-to-api-server",
                {
                    "podSelector": {
                        "matchLabels": {"app.kubernetes.io/name": "benchfleet-collector"}
                    },
                    "policyTypes": ["Egress"],
                    "egress": [
                        {
                            "to": [
                                {"ipBlock": {"cidr": cidr}} for cidr in cluster.api_server_cidrs
                            ],
                            "ports": [{"protocol": "TCP", "port": p} for p in API_SERVER_PORTS],
                        }
                    ],
                },
            )
            for workflow in downloading.get(namespace, []):
                # NetworkPolicy cannot name hosts; the sha256 check guards what is fetched.
                policy(
                    f"{workflow}-model-download",
                    {
                        "podSelector": {"matchLabels": {APP_LABEL: APP, WORKFLOW_LABEL: workflow}},
                        "policyTypes": ["Egress"],
                        "egress": [_DNS, {"ports": [{"protocol": "TCP", "port": 443}]}],
                    },
                )
            if store is not None:
                policy(RESULTS_STORE_POLICY, _store_egress(store))
