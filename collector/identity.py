"""Which cluster a credential reaches: read from the cluster, never assumed from the name asked.

A kubeconfig's context names are labels on the client's side; nothing stops a single-context
kubeconfig (or the wrong one) from reaching us-east when eu-west is asked for. What a cluster
applies is what makes it a fleet cluster: Flux applies dist/<cluster>/ there, and synth puts
the ConfigMap `benchfleet-cluster` into it, naming the cluster. The collector reads it in the
namespace it is about to work in, and records nothing under a cluster it has not confirmed.
"""

from collections.abc import Sequence

from collector.kube import KubeClient, KubeError, Object
from contract.layout import CLUSTER_IDENTITY, CLUSTER_KEY


class UnconfirmedCluster(RuntimeError):
    """The credential reaches another cluster, or one that does not say which it is."""


def _readable(
    client: KubeClient, namespaces: Sequence[str], provider: str, deadline: float | None
) -> tuple[str, Object | None]:
    """The first of `namespaces` whose identity ConfigMap the credential may read, and the
    ConfigMap (None if there is none there): a collector whose Role is in one namespace
    cannot read it in the others."""
    forbidden = []
    for namespace in namespaces:
        try:
            return namespace, client.read_configmap(namespace, CLUSTER_IDENTITY, deadline=deadline)
        except KubeError as error:
            if not error.forbidden:
                raise
            forbidden.append(namespace)
    raise UnconfirmedCluster(
        f"the credentials from {provider} may not read ConfigMap {CLUSTER_IDENTITY} in any of "
        f"{', '.join(forbidden)}: cannot confirm which cluster they reach"
    )


def confirm_cluster(
    client: KubeClient,
    cluster: str,
    namespaces: Sequence[str],
    provider: str,
    deadline: float | None = None,
) -> None:
    """Return if `client` reaches fleet cluster `cluster`, as the first of `namespaces` it may
    read says (asking no longer than `deadline`, a time.monotonic() moment); raise
    UnconfirmedCluster if not, KubeError if the cluster did not answer."""
    namespace, found = _readable(client, namespaces, provider, deadline)
    if found is None:
        raise UnconfirmedCluster(
            f"cannot confirm that the credentials from {provider} reach cluster {cluster}: "
            f"there is no ConfigMap {namespace}/{CLUSTER_IDENTITY} (Flux applies it from "
            f"dist/{cluster}/infrastructure/; is this {cluster}, and has Flux applied it?)"
        )
    reached = (found.get("data") or {}).get(CLUSTER_KEY)
    if reached != cluster:
        raise UnconfirmedCluster(
            f"the credentials from {provider} reach cluster {reached!r} (ConfigMap "
            f"{namespace}/{CLUSTER_IDENTITY}), not {cluster}: nothing is recorded under "
            f"{cluster} from it; give {cluster} its own credentials (see docs/collector.md)"
        )
