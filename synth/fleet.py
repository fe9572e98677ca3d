"""The fleet config (`specs/clusters.yaml`): the clusters workflows may target and their facts.

A workflow names clusters; everything a manifest needs to know about a cluster (which devices
it has, how its nodes are labelled, where its API server is for NetworkPolicy, how its spot
nodes are tainted) is written here once rather than in every workflow.
"""

from collections.abc import Iterator
from ipaddress import ip_network
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    Field,
    StrictFloat,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from contract.allocation import Capacity
from contract.layout import LOCAL_CLUSTER
from synth.base import SpecModel
from synth.catalogue import DEFAULT_NODE_LABEL, DEVICE_TYPES
from synth.fields import ClusterName, EnvironmentName, ImageRef, ObjectName
from synth.flux_fields import Branch, GitUrl, GoDuration
from synth.hints import SpecError, unknown
from synth.kubernetes import (
    OLDEST_SUPPORTED,
    KubernetesVersion,
    Version,
    parse_version,
    version_text,
)
from synth.labels import LabelKey, LabelValue
from synth.limits import (
    MAX_DESCRIPTION_CHARS,
    MAX_PATH_CHARS,
    MAX_PRICE_PER_HOUR,
    MAX_REGION_CHARS,
)
from synth.store_fields import EndpointRule, LakeUrlRule, StoreRegion
from synth.texts import Text


def _check_device_type(name: str) -> str:
    if name not in DEVICE_TYPES:
        raise unknown("device type", name, DEVICE_TYPES)
    return name


DeviceTypeName = Annotated[
    str,
    AfterValidator(_check_device_type),
    Field(json_schema_extra={"enum": sorted(DEVICE_TYPES)}),
]
"""A name from the device catalogue: 'cpu' or a GPU type such as 'nvidia-a100'."""


def _check_cidr(value: str) -> str:
    try:
        network = ip_network(value, strict=True)
    except ValueError as error:
        raise SpecError(
            f"{value!r} is not a network in CIDR notation ({error})",
            "write the API server's address as e.g. '10.0.0.1/32', or its range as '10.0.0.0/24'",
        ) from None
    if "%" in value:
        # Python reads an IPv6 scope (fe80::1%eth0); a NetworkPolicy's ipBlock does not.
        raise SpecError(
            f"{value!r} names an IPv6 scope ('%...'), which a NetworkPolicy cannot hold",
            f"write the network alone: {network.network_address.compressed.split('%')[0]}"
            f"/{network.prefixlen}",
        )
    return value


Cidr = Annotated[str, AfterValidator(_check_cidr)]

NodeLabels = Annotated[
    dict[
        Annotated[str, LabelKey("node label key")], Annotated[str, LabelValue("node label value")]
    ],
    # The keys' pattern becomes patternProperties, which alone would let editors pass any key.
    Field(json_schema_extra={"additionalProperties": False}),
]
"""Labels a pod's nodeSelector asks of a node."""


class Toleration(SpecModel):
    """A Kubernetes toleration, as in a pod spec."""

    key: Annotated[str, LabelKey("toleration key")]
    """The taint key to tolerate."""
    operator: Literal["Equal", "Exists"] = "Equal"
    """'Equal' matches `value`; 'Exists' matches any value."""
    value: Annotated[str, LabelValue("toleration value")] | None = None
    """The taint value; leave it out with operator 'Exists'."""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"
    """The taint effect to tolerate."""

    @model_validator(mode="after")
    def _value_matches_operator(self) -> "Toleration":
        if self.operator == "Exists" and self.value is not None:
            raise SpecError(
                "operator 'Exists' tolerates every value; 'value' must be left out",
                "remove 'value', or use operator: Equal",
            )
        if self.operator == "Equal" and self.value is None:
            raise SpecError("operator 'Equal' needs a 'value'", 'add value: "true"')
        return self


class SpotNodes(SpecModel):
    """How a cluster's spot (preemptible) nodes are selected and tainted."""

    node_selector: NodeLabels = Field(min_length=1)
    """Labels that spot nodes carry, e.g. `node-type: spot`."""
    tolerations: list[Toleration] = Field(default_factory=list)
    """Tolerations for the taints spot nodes carry."""


class Kueue(SpecModel):
    """Kueue on a cluster: where the LocalQueues synth creates send their workloads."""

    cluster_queue: ObjectName
    """The ClusterQueue (set up with the cluster's quotas, outside this repository) that every
    LocalQueue of benchfleet's namespaces points to."""


ObjectLabels = Annotated[
    dict[Annotated[str, LabelKey("label key")], Annotated[str, LabelValue("label value")]],
    Field(json_schema_extra={"additionalProperties": False}),
]
"""Labels put on an object, for a controller that selects objects by them."""


class GrafanaDashboard(SpecModel):
    """The dashboard as a ConfigMap that Grafana's dashboard sidecar loads."""

    labels: ObjectLabels = Field(default_factory=lambda: {"grafana_dashboard": "1"}, min_length=1)
    """The labels the sidecar looks for (its `label` and `labelValue` settings; the Grafana
    Helm chart's default is `grafana_dashboard: "1"`)."""


class PrometheusRules(SpecModel):
    """The alert rules as a PrometheusRule: set only where the Prometheus Operator's CRD
    (monitoring.coreos.com/v1) is installed, or Flux cannot apply the file."""

    labels: ObjectLabels = Field(default_factory=dict)
    """The labels the Prometheus object's ruleSelector matches (kube-prometheus-stack's
    default: `release: <its release name>`)."""


class Monitoring(SpecModel):
    """Prometheus and Grafana objects synth adds to a cluster's infrastructure
    (docs/monitoring.md): always the alert rules as a plain rules file in a ConfigMap, and the
    dashboard and a PrometheusRule where asked for."""

    namespace: ObjectName
    """The namespace they go in, which must exist: the one Grafana's sidecar and Prometheus
    watch, e.g. `monitoring`."""
    grafana_dashboard: GrafanaDashboard | None = None
    """Emit the Grafana dashboard for the sidecar."""
    prometheus_rule: PrometheusRules | None = None
    """Emit the rules as a PrometheusRule too."""


def _check_currency(code: str) -> str:
    if not (len(code) == 3 and code.isascii() and code.isalpha() and code.isupper()):
        raise SpecError(
            f"{code[:40]!r} is not a currency code",
            "write the ISO 4217 code of the currency the prices are in, e.g. USD or EUR",
        )
    return code


Currency = Annotated[
    str, AfterValidator(_check_currency), Field(json_schema_extra={"pattern": "^[A-Z]{3}$"})
]
"""An ISO 4217 currency code: three capital letters."""
PricePerHour = Annotated[StrictFloat, Field(ge=0, le=MAX_PRICE_PER_HOUR, allow_inf_nan=False)]


class DevicePrice(SpecModel):
    """What one device of a type costs per hour: one GPU of a GPU type, one CPU of `cpu`."""

    on_demand: PricePerHour | None = None
    """On the cluster's regular nodes."""
    spot: PricePerHour | None = None
    """On its spot nodes: what a target with `spot: true` runs on."""

    @model_validator(mode="after")
    def _a_price(self) -> "DevicePrice":
        if self.on_demand is None and self.spot is None:
            raise SpecError(
                "a device's entry names no price", "give on_demand, spot, or both, per hour"
            )
        return self

    def per_hour(self, capacity: Capacity) -> float | None:
        """The price on `capacity` nodes, where the entry gives one."""
        return self.spot if capacity == "spot" else self.on_demand


class Prices(SpecModel):
    """What devices cost, for the collector's report: each variant's cost from the time its
    pods held their devices, and the cost of 1,000 inferences at its measured speed
    (docs/collector.md, "Cost"). Without prices the report gives GPU-seconds and
    CPU-seconds."""

    currency: Currency
    """The currency every price is in (ISO 4217: USD, EUR); one for the whole fleet."""
    per_hour: dict[DeviceTypeName, DevicePrice] = Field(min_length=1)
    """Per device type, the price of one device for one hour, on demand and on spot nodes:
    `nvidia-a100: {on_demand: 3.67, spot: 1.10}`; for `cpu`, of one CPU (what a pod
    requests)."""


class ResultsStore(SpecModel):
    """An S3-compatible bucket the runners write their whole results to (docs/specs.md,
    "Results store"). The credentials never pass through this repository: each workload
    namespace holds them in a Secret the cluster's own means create."""

    url: Annotated[str, LakeUrlRule()]
    """`s3://BUCKET/PREFIX`: the bucket and the folder inside it; no credentials."""
    endpoint: Annotated[str, EndpointRule()]
    """The S3 API's address, `https://HOST[:PORT]` (e.g. `https://s3.us-east-1.amazonaws.com`);
    plain `http://` only to loopback or a Service of the cluster (`*.svc`,
    `*.svc.cluster.local`). No credentials, no path."""
    region: Annotated[str, StoreRegion()]
    """The region requests are signed for, e.g. `us-east-1` (a store that has none takes
    that)."""
    credentials_secret: ObjectName
    """The Secret, in every workload namespace (`benchfleet-<environment>`), holding the keys
    `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`: made by the cluster's own means (an
    operator, sealed or external secrets), never committed."""
    secret_per_workflow: bool = False
    """Each workflow's pods take their credentials from a Secret of their own,
    `<credentials_secret>-<workflow id>`, whose keys may write only under
    `raw/<workflow id>/` (docs/lake.md shows the bucket policy): one workflow's pods then
    cannot write where another's results go. Off: every workflow of a namespace shares
    `credentials_secret` (the collector's digest check still refuses an object that is not
    the one a pod's termination message names)."""
    endpoint_cidrs: list[Cidr] = Field(min_length=1)
    """The endpoint's addresses. The runners' NetworkPolicy allows egress to exactly these, on
    the endpoint's port: a NetworkPolicy cannot name a host."""
    ca_bundle: Annotated[str, Text("ca_bundle", MAX_PATH_CHARS, one_line=True)] | None = None
    """A PEM file of CA certificates in this repository that the endpoint's certificate comes
    from, where that is not a CA the runner image trusts (your company's); carried to the pods
    in a ConfigMap like a model's `ca_bundle`."""

    def secret_of(self, workflow: str) -> str:
        """The Secret a workflow's pods take their credentials from."""
        return (
            f"{self.credentials_secret}-{workflow}"
            if self.secret_per_workflow
            else (self.credentials_secret)
        )


class Cluster(SpecModel):
    """One Kubernetes cluster, in one region, that Flux applies this repository to."""

    name: ClusterName
    """Becomes the folder `clusters/<name>/`; `local` is reserved (localrun's runs)."""
    region: Annotated[str, Text("region", MAX_REGION_CHARS, one_line=True)]
    """Where the cluster runs, e.g. 'us-east-1'; recorded with every result."""
    api_server_cidrs: list[Cidr] = Field(min_length=1)
    """The API server's addresses. The collector's NetworkPolicy allows egress to exactly these:
    the API server is not a pod, so no namespace or pod selector can match it."""
    device_types: list[DeviceTypeName] = Field(min_length=1)
    """The device types the cluster has nodes for."""
    node_labels: dict[DeviceTypeName, NodeLabels] = Field(default_factory=dict)
    """Node labels selecting each device type, where they differ from the default
    `gpu-type: <device type>` (e.g. GPU feature discovery's `nvidia.com/gpu.product`)."""
    spot: SpotNodes | None = None
    """How spot nodes are selected; targets with `spot: true` need it."""
    kueue: Kueue | None = None
    """Set where Kueue is installed, so workflows may name a `queue`."""
    kubernetes_version: Annotated[str, KubernetesVersion()] = version_text(OLDEST_SUPPORTED)
    """The cluster's Kubernetes version, major.minor in quotes (`"1.35"`, from `kubectl
    version`): synth uses only what is on there by default (an `oci` model's image volume
    needs 1.35). Default: 1.33, the oldest the manifests are written for."""
    monitoring: Monitoring | None = None
    """This cluster's monitoring objects, in place of the fleet's `monitoring` (whole, not
    merged)."""
    prices: Prices | None = None
    """What this cluster's devices cost where it differs from the fleet's `prices` (another
    region or cloud): its entries replace the fleet's for their device types, in the same
    currency."""
    results_store: ResultsStore | None = None
    """Where this cluster's runners write their results, in place of the fleet's
    `results_store` (whole, not merged)."""

    @field_validator("name")
    @classmethod
    def _not_this_machine(cls, name: str) -> str:
        if name == LOCAL_CLUSTER:
            raise SpecError(
                f"cluster name {name!r} is reserved: the results database stores `localrun`'s "
                "runs on this machine under it",
                "choose another name",
            )
        return name

    @field_validator("node_labels")
    @classmethod
    def _labels_only_for_present_devices(
        cls, node_labels: dict[str, dict[str, str]], info: ValidationInfo
    ) -> dict[str, dict[str, str]]:
        present = info.data.get("device_types", [])
        for device in node_labels:
            if device not in present:
                raise SpecError(
                    f"node_labels names {device!r}, which is not in device_types",
                    f"add {device!r} to device_types, or remove its node_labels entry",
                )
        return node_labels

    @property
    def version(self) -> Version:
        """`kubernetes_version` as (major, minor)."""
        return parse_version(self.kubernetes_version)

    def node_selector(self, device_type: str) -> dict[str, str]:
        """The nodeSelector that places a pod on a node with `device_type`: the cluster's own
        labels where it names them, else `gpu-type: <type>` for GPUs and none for CPUs."""
        if device_type in self.node_labels:
            return dict(self.node_labels[device_type])
        return {DEFAULT_NODE_LABEL: device_type} if DEVICE_TYPES[device_type].is_gpu else {}


class PriorityClass(SpecModel):
    """A PriorityClass synth creates in every cluster."""

    value: StrictInt = Field(ge=-(10**9), le=10**9)
    """Higher runs first; Kubernetes reserves values above one billion for system pods."""
    preemption: Literal["PreemptLowerPriority", "Never"] = "PreemptLowerPriority"
    """Whether pods of this class may evict lower-priority pods to get scheduled."""
    description: Annotated[str, Text("description", MAX_DESCRIPTION_CHARS)] | None = None
    """Shown by `kubectl get priorityclass`."""


class GitSource(SpecModel):
    """The repository Flux watches: this one."""

    url: Annotated[str, GitUrl()]
    """Clone URL, e.g. 'ssh://git@github.com/example/benchfleet'."""
    branch: Annotated[str, Branch()] = "main"
    """The branch Flux applies."""
    interval: Annotated[str, GoDuration("interval")] = "5m"
    """How often Flux polls the repository, as a Go duration: '5m', '1h30m'."""
    secret_name: ObjectName | None = None
    """A Secret in flux-system holding the deploy key, for private repositories."""


def _default_priorities() -> dict[str, PriorityClass]:
    return {
        "high": PriorityClass(value=100000, description="benchmarks that block a release"),
        "low": PriorityClass(
            value=1000, preemption="Never", description="background runs, e.g. nightly sweeps"
        ),
    }


class Fleet(SpecModel):
    """Everything synth needs to know about the clusters: the contents of `specs/clusters.yaml`."""

    git: GitSource
    """The repository Flux applies."""
    image: ImageRef
    """The default runner image, ideally pinned by digest (`...@sha256:...`)."""
    ca_bundle: Annotated[str, Text("ca_bundle", MAX_PATH_CHARS, one_line=True)] | None = None
    """A PEM file of CA certificates in this repository (relative to its root) that every
    `url` model's download trusts besides the runner image's own CAs: your company's root
    CA, where its model store's certificate comes from it. A model may name its own
    `ca_bundle` instead. Never baked into the image: synth puts it in a ConfigMap."""
    environments: list[EnvironmentName] = Field(default_factory=lambda: ["dev"], min_length=1)
    """Each environment is a namespace `benchfleet-<name>` in every cluster."""
    priority_classes: dict[ObjectName, PriorityClass] = Field(default_factory=_default_priorities)
    """PriorityClasses workflows choose from with `scheduling.priority`."""
    default_priority: ObjectName = "low"
    """The class of workflows that name none."""
    clusters: list[Cluster] = Field(min_length=1)
    """The clusters, each a folder under `clusters/`."""
    monitoring: Monitoring | None = None
    """Prometheus and Grafana objects for every cluster that names none of its own; none by
    default."""
    prices: Prices | None = None
    """What devices cost per hour, on demand and on spot nodes: optional. With it the
    collector's report gives each variant's cost and the cost of 1,000 inferences; a
    cluster's own `prices` replace its entries there."""
    results_store: ResultsStore | None = None
    """Where the runners of every cluster that names none of its own write their whole
    results; none by default (results travel in termination messages and logs only)."""

    @field_validator("default_priority")
    @classmethod
    def _default_priority_exists(cls, name: str, info: ValidationInfo) -> str:
        classes = info.data.get("priority_classes")
        if classes is not None and name not in classes:
            raise unknown("priority class", name, classes)
        return name

    def monitoring_of(self, cluster: Cluster) -> Monitoring | None:
        """The cluster's own monitoring, else the fleet's."""
        return cluster.monitoring or self.monitoring

    def ca_bundles(self) -> Iterator[tuple[tuple[str | int, ...], str]]:
        """The CA bundle files the fleet names, each with its field's place."""
        if self.ca_bundle is not None:
            yield ("ca_bundle",), self.ca_bundle
        stores: list[tuple[tuple[str | int, ...], ResultsStore | None]]
        stores = [(("results_store",), self.results_store)]
        stores += [
            (("clusters", index, "results_store"), cluster.results_store)
            for index, cluster in enumerate(self.clusters)
        ]
        for loc, store in stores:
            if store is not None and store.ca_bundle is not None:
                yield (*loc, "ca_bundle"), store.ca_bundle

    def results_store_of(self, cluster: Cluster) -> ResultsStore | None:
        """The cluster's own results store, else the fleet's."""
        return cluster.results_store or self.results_store

    def cluster(self, name: str) -> Cluster:
        """The cluster called `name` (names are validated before anyone asks)."""
        return next(cluster for cluster in self.clusters if cluster.name == name)

    def prices_in(self, name: str) -> Prices | None:
        """The prices of cluster `name`'s devices: the fleet's, its own entries over them;
        None where neither gives any (or no such cluster is in the fleet)."""
        own = next((c.prices for c in self.clusters if c.name == name), None)
        if own is None or self.prices is None:
            return own or (self.prices if any(c.name == name for c in self.clusters) else None)
        return Prices(currency=own.currency, per_hour=self.prices.per_hour | own.per_hour)
