"""The upstream programs the local cluster runs, and the versions built.

Each is a main package of a module on the Go module proxy, built through a wrapper module
under localcluster/go/<wrapper>/ whose go.mod and go.sum are committed (no upstream source
here, no prebuilt binaries). Versions are the newest whose go.mod builds with Go 1.26:
kubernetes 1.37 and Flux 1.10 already ask for Go 1.27.
"""

from dataclasses import dataclass
from pathlib import Path

GO_WRAPPERS = Path(__file__).resolve().parent / "go"

KUBERNETES_VERSION = "v1.36.3"


@dataclass(frozen=True)
class Component:
    """One wrapper module and the binaries built from it."""

    wrapper: str
    module: str
    version: str
    binaries: dict[str, str]
    build_tags: tuple[str, ...] = ()
    version_ldflags: tuple[str, ...] = ()
    # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them with
    # folders of its own repository; a wrapper maps each to this published tag instead.
    staging_version: str | None = None
    # Files of the module the cluster needs at run time (CRDs, kwok's Stages), by glob;
    # copied beside the binaries so they always match the version built.
    data: tuple[str, ...] = ()

    @property
    def directory(self) -> Path:
        return GO_WRAPPERS / self.wrapper


def _kubernetes_version_ldflags(version: str) -> tuple[str, ...]:
    """The -X flags upstream's hack/lib/version.sh sets, so /version reports the release."""
    major, minor = version.lstrip("v").split(".")[:2]
    values = {
        "gitVersion": version,
        "gitMajor": major,
        "gitMinor": minor,
        "gitTreeState": "clean",
    }
    return tuple(
        f"-X {package}.{name}={value}"
        for package in ("k8s.io/client-go/pkg/version", "k8s.io/component-base/version")
        for name, value in values.items()
    )


ETCD = Component(
    wrapper="etcd",
    module="go.etcd.io/etcd/server/v3",
    version="v3.6.17",
    binaries={"etcd": "."},
)

KUBERNETES = Component(
    wrapper="kubernetes",
    module="k8s.io/kubernetes",
    version=KUBERNETES_VERSION,
    binaries={
        name: f"k8s.io/kubernetes/cmd/{name}"
        for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
    },
    # Upstream's own tags for the server binaries (hack/lib/golang.sh).
    build_tags=("selinux", "notest", "grpcnotrace"),
    version_ldflags=_kubernetes_version_ldflags(KUBERNETES_VERSION),
    staging_version="v0." + KUBERNETES_VERSION.split(".", 1)[1],
)

KWOK = Component(
    wrapper="kwok",
    module="sigs.k8s.io/kwok",
    version="v0.8.0",
    binaries={"kwok": "sigs.k8s.io/kwok/cmd/kwok"},
    data=(
        "kustomize/stage/node/fast/node-initialize.yaml",
        "kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
        "kustomize/crd/bases/kwok.x-k8s.io_logs.yaml",
    ),
)

SOURCE_CONTROLLER = Component(
    wrapper="source-controller",
    module="github.com/fluxcd/source-controller",
    version="v1.9.0",
    binaries={"source-controller": "github.com/fluxcd/source-controller"},
    data=("config/crd/bases/*.yaml",),
)

KUSTOMIZE_CONTROLLER = Component(
    wrapper="kustomize-controller",
    module="github.com/fluxcd/kustomize-controller",
    version="v1.9.6",
    binaries={"kustomize-controller": "github.com/fluxcd/kustomize-controller"},
    data=("config/crd/bases/*.yaml",),
)

# Data only: the CRDs of the Kueue objects synth emits, so dist/ applies as it does on a
# cluster with Kueue installed. Kueue's controller is not run: nothing here needs quotas.
KUEUE = Component(
    wrapper="kueue",
    module="sigs.k8s.io/kueue",
    version="v0.17.0",
    binaries={},
    data=(
        "config/components/crd/bases/kueue.x-k8s.io_localqueues.yaml",
        "config/components/crd/bases/kueue.x-k8s.io_clusterqueues.yaml",
    ),
)

# The result lake's S3-compatible server (Apache-2.0): master, volume, filer and S3 gateway
# in one process (`weed mini`). Upstream's go.mod replaces tyler-smith/go-bip39 (deleted
# from GitHub) by cosmos/go-bip39, a replace the wrapper copies.
SEAWEEDFS = Component(
    wrapper="seaweedfs",
    module="github.com/seaweedfs/seaweedfs",
    version="v0.0.0-20261109003541-7506e5f91cd6",
    binaries={"weed": "github.com/seaweedfs/seaweedfs/weed"},
)


@dataclass(frozen=True)
class Toolset:
    """Components built together into one folder of the user's cache, keyed by their
    versions: the lake's server apart from the cluster's, so `make lake` builds only it and
    adding it left the cluster's built binaries valid."""

    folder: str
    components: tuple[Component, ...]
    override: str
    """The environment variable that names a folder of prebuilt binaries instead."""


# Build order: the control plane first, so a cluster without Flux is usable soonest.
COMPONENTS = (ETCD, KUBERNETES, KWOK, KUEUE, SOURCE_CONTROLLER, KUSTOMIZE_CONTROLLER)
CLUSTER_TOOLS = Toolset("cluster-bin", COMPONENTS, "BENCHFLEET_CLUSTER_BIN")
LAKE_TOOLS = Toolset("lake-bin", (SEAWEEDFS,), "BENCHFLEET_LAKE_BIN")
TOOLSETS = (CLUSTER_TOOLS, LAKE_TOOLS)
