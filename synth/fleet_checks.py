"""Rules that relate the fleet file's fields to each other, each reported at the entry to
change: repeats in the lists used as sets (an environment listed twice made cdk8s fail with
a traceback; a device type or CIDR listed twice passed in silence), and node selectors that
would not select what they say."""

from collections.abc import Iterator
from ipaddress import ip_network

from synth.catalogue import DEVICE_TYPES
from synth.checks import Finding
from synth.fleet import Cluster, Fleet, Prices, ResultsStore
from synth.problems import format_loc
from synth.repeats import repeats


def check_fleet(fleet: Fleet) -> list[Finding]:
    """Every problem of a fleet whose fields are each valid."""
    findings = [
        Finding(
            ("environments", index),
            f"environment {fleet.environments[index]!r} is already listed at environments[{first}]",
            "each environment is one namespace per cluster; remove the repeat",
        )
        for index, first in repeats(fleet.environments)
    ]
    findings += [
        Finding(
            ("clusters", index, "name"),
            f"cluster name {fleet.clusters[index].name!r} is already used by clusters[{first}]",
            "each cluster is a folder of its own under clusters/ and dist/; rename or remove it",
        )
        for index, first in repeats(cluster.name for cluster in fleet.clusters)
    ]
    for index, cluster in enumerate(fleet.clusters):
        findings += _cluster_findings(("clusters", index), cluster)
        findings += _store_findings(("clusters", index, "results_store"), cluster.results_store)
    findings += _store_findings(("results_store",), fleet.results_store)
    return findings + list(_price_findings(fleet))


def _store_findings(loc: tuple[str | int, ...], store: ResultsStore | None) -> list[Finding]:
    cidrs = store.endpoint_cidrs if store is not None else []
    return [
        Finding(
            (*loc, "endpoint_cidrs", index),
            f"{cidrs[index]!r} is the network of endpoint_cidrs[{first}]",
            "remove the repeat",
        )
        for index, first in repeats(ip_network(cidr) for cidr in cidrs)
    ]


def _price_findings(fleet: Fleet) -> Iterator[Finding]:
    """Prices the report could not use as written: two currencies, a device no cluster it
    applies to has, a spot price where there are no spot nodes."""
    tables: list[tuple[tuple[str | int, ...], Prices, list[Cluster]]] = [
        (("clusters", index, "prices"), cluster.prices, [cluster])
        for index, cluster in enumerate(fleet.clusters)
        if cluster.prices is not None
    ]
    if fleet.prices is not None:
        tables.insert(0, (("prices",), fleet.prices, fleet.clusters))
    currency = tables[0][1].currency if tables else None
    for loc, prices, clusters in tables:
        if prices.currency != currency:
            yield Finding(
                (*loc, "currency"),
                f"prices in {prices.currency}, but {format_loc(tables[0][0])} are in {currency}",
                "give every price in one currency: a report compares costs across clusters",
            )
        for device, price in prices.per_hour.items():
            if not any(device in cluster.device_types for cluster in clusters):
                where = "no cluster has" if len(clusters) > 1 else "the cluster has no"
                yield Finding(
                    (*loc, "per_hour", device),
                    f"a price for {device}, which {where} {device} nodes",
                    f"add {device} to device_types, or remove its price",
                )
            elif price.spot is not None and not any(c.spot for c in clusters):
                yield Finding(
                    (*loc, "per_hour", device, "spot"),
                    "a spot price, but no cluster it applies to has spot nodes",
                    "remove the spot price, or describe the cluster's spot nodes under spot",
                )


def _cluster_findings(loc: tuple[str, int], cluster: Cluster) -> Iterator[Finding]:
    for index, first in repeats(cluster.device_types):
        yield Finding(
            (*loc, "device_types", index),
            f"device type {cluster.device_types[index]!r} is already listed at "
            f"device_types[{first}]",
            "remove the repeat",
        )
    for index, first in repeats(ip_network(cidr) for cidr in cluster.api_server_cidrs):
        yield Finding(
            (*loc, "api_server_cidrs", index),
            f"{cluster.api_server_cidrs[index]!r} is the network of api_server_cidrs[{first}]",
            "remove the repeat",
        )
    yield from _selectors_tell_devices_apart(loc, cluster)
    if cluster.spot is None:
        return
    tolerations = [toleration.model_dump_json() for toleration in cluster.spot.tolerations]
    for index, first in repeats(tolerations):
        yield Finding(
            (*loc, "spot", "tolerations", index),
            f"this toleration repeats spot.tolerations[{first}]",
            "remove the repeat",
        )
    for key, value in cluster.spot.node_selector.items():
        # The spot selector is added to a device's: a key in both would replace the device's.
        replaced = {
            device: selector[key]
            for device in cluster.device_types
            if (selector := cluster.node_selector(device)).get(key, value) != value
        }
        if replaced:
            yield Finding(
                (*loc, "spot", "node_selector", key),
                f"{key} also selects {', '.join(replaced)} nodes ({key}: "
                f"{', '.join(dict.fromkeys(replaced.values()))}): a spot pod would ask for "
                f"{key}: {value} instead, on any device's spot nodes",
                "select spot nodes by a label of their own, e.g. node-type: spot",
            )


def _selectors_tell_devices_apart(loc: tuple[str, int], cluster: Cluster) -> Iterator[Finding]:
    """Two GPU types whose nodes carry the labels of each other: a pod meant for one could
    run on the other, and its numbers would be filed under the wrong device."""
    # Each once: a device type listed twice is said above.
    gpus = [device for device in dict.fromkeys(cluster.device_types) if DEVICE_TYPES[device].is_gpu]
    selectors = [tuple(sorted(cluster.node_selector(device).items())) for device in gpus]
    for index, first in repeats(selectors):
        device = gpus[index] if gpus[index] in cluster.node_labels else gpus[first]
        yield Finding(
            (*loc, "node_labels", device),
            f"{gpus[index]} and {gpus[first]} nodes are selected by the same labels, so a pod "
            "meant for one could run on the other",
            "give each device type the labels only its nodes carry",
        )
