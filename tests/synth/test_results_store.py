"""A results store in the fleet file (`results_store:`): every mistake is an error at its
line and field with the credentials masked, and a cluster with a store gets the runner's env
and the NetworkPolicy egress to the store's networks; a cluster without one gets exactly
what it got before stores existed."""

import shutil
from pathlib import Path, PurePosixPath
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest

from contract.config import CA_DIR, CA_ENV, POD_NAME_ENV
from contract.lake import (
    CA_BUNDLE_ENV,
    CLUSTER_ENV,
    CREDENTIAL_KEYS,
    ENDPOINT_ENV,
    JOB_NAME_ENV,
    METADATA_DISABLED_ENV,
    REGION_ENV,
    RESULTS_URL_ENV,
)
from contract.layout import FLEET_FILE, JOB_NAME_LABEL
from synth.ca_bundles import check_ca_bundle
from synth.cache import RenderCache
from synth.charts.network import RESULTS_STORE_POLICY
from synth.load import load_specs
from synth.render import render
from tests.model_server import Authority, make_authority
from tests.synth.conftest import WriteSpec, problems_in
from tests.synth.manifests import KUBERNETES_VERSION, objects

SECRET = "hunter2-not-for-logs"
STORE = """\
results_store:
  url: s3://benchmarks/team-a/
  endpoint: https://s3.example.com:9443
  region: us-east-1
  credentials_secret: lake-writer
  endpoint_cidrs: [192.0.2.0/24, 198.51.100.7/32]
"""
ALPHA_STORE = """\
    results_store:
      url: s3://alpha-results/nightly
      endpoint: http://seaweed.lake.svc.cluster.local:8333
      region: eu-1
      credentials_secret: alpha-lake
      endpoint_cidrs: [10.96.0.0/12]
"""
ALPHA_KUEUE = "    kueue: {cluster_queue: shared}\n"
WORKFLOW = """\
id: stored
description: d
owner: o
clusters: [alpha, beta]
models:
  - name: baked
    image_path: /opt/models/baked.pt2
    sha256: cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd
benchmark:
  inputs: [{shape: [64]}]
targets:
  - gpu_type: cpu
"""

Files = dict[PurePosixPath, str]


def edit_fleet(root: Path, *, fleet: str = "", alpha: str = "") -> None:
    """The test fleet with `fleet` lines at its end and `alpha` lines in cluster alpha."""
    path = root / FLEET_FILE
    text = path.read_text(encoding="utf-8")
    assert ALPHA_KUEUE in text
    path.write_text(text.replace(ALPHA_KUEUE, ALPHA_KUEUE + alpha) + fleet, encoding="utf-8")


def rendered(root: Path, write_spec: WriteSpec) -> Files:
    return render(load_specs(root, [write_spec("stored.yaml", WORKFLOW)]))


def kinds(files: Files, path: str, kind: str) -> list[dict[str, Any]]:
    """The objects of `kind` in file `path`, each valid at Kubernetes 1.33 (strict)."""
    found = []
    for where, obj in objects(files):
        if where == PurePosixPath(path) and obj["kind"] == kind:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
            found.append(obj)
    return found


def job_of(files: Files, cluster: str) -> dict[str, Any]:
    (job,) = kinds(files, f"dist/{cluster}/workloads/stored.yaml", "Job")
    return job


def env_of(job: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return {entry["name"]: entry for entry in container["env"]}


def store_policies(files: Files, cluster: str) -> list[dict[str, Any]]:
    path = f"dist/{cluster}/infrastructure/network-policies.yaml"
    policies = kinds(files, path, "NetworkPolicy")
    return [p for p in policies if p["metadata"]["name"] == RESULTS_STORE_POLICY]


def secret_ref(name: str, key: str) -> dict[str, Any]:
    return {"valueFrom": {"secretKeyRef": {"name": name, "key": key, "optional": True}}}


def test_a_fleet_store_gives_each_runner_its_env_from_the_fleet_and_the_secret(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    edit_fleet(spec_repo, fleet=STORE)
    files = rendered(spec_repo, write_spec)
    for cluster in ("alpha", "beta"):
        env = env_of(job_of(files, cluster))
        store = {name: entry for name, entry in env.items() if name not in BEFORE_STORES}
        assert store == {
            RESULTS_URL_ENV: {"name": RESULTS_URL_ENV, "value": "s3://benchmarks/team-a"},
            ENDPOINT_ENV: {"name": ENDPOINT_ENV, "value": "https://s3.example.com:9443"},
            REGION_ENV: {"name": REGION_ENV, "value": "us-east-1"},
            METADATA_DISABLED_ENV: {"name": METADATA_DISABLED_ENV, "value": "true"},
            **{key: {"name": key, **secret_ref("lake-writer", key)} for key in CREDENTIAL_KEYS},
            CLUSTER_ENV: {"name": CLUSTER_ENV, "value": cluster},
            JOB_NAME_ENV: {
                "name": JOB_NAME_ENV,
                "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{JOB_NAME_LABEL}']"}},
            },
        }
        assert CA_BUNDLE_ENV not in env and CA_ENV not in env


def test_a_store_with_a_secret_per_workflow_gives_each_workflow_its_own(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    per_workflow = STORE.replace("  region:", "  secret_per_workflow: true\n  region:")
    edit_fleet(spec_repo, fleet=per_workflow)
    env = env_of(job_of(rendered(spec_repo, write_spec), "alpha"))
    for key in CREDENTIAL_KEYS:
        assert env[key] == {"name": key, **secret_ref("lake-writer-stored", key)}


BEFORE_STORES = {
    "WORKFLOW_ID",
    "MODEL_PATH",
    "CONFIG_PATH",
    "VARIANT_INDEX",
    "NODE_NAME",
    POD_NAME_ENV,
    "RUNNER_IMAGE",
}
"""The env of a runner without a store, for this workflow."""


def test_the_store_egress_is_its_networks_on_its_port_and_dns_for_its_name(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    edit_fleet(spec_repo, fleet=STORE)
    policies = store_policies(rendered(spec_repo, write_spec), "alpha")
    assert [p["metadata"]["namespace"] for p in policies] == ["benchfleet-dev", "benchfleet-prod"]
    dns, store = policies[0]["spec"]["egress"]
    assert store == {
        "to": [{"ipBlock": {"cidr": "192.0.2.0/24"}}, {"ipBlock": {"cidr": "198.51.100.7/32"}}],
        "ports": [{"protocol": "TCP", "port": 9443}],
    }
    assert [port["port"] for port in dns["ports"]] == [53, 53]
    selector = policies[0]["spec"]["podSelector"]["matchExpressions"]
    assert selector == [
        {
            "key": "app.kubernetes.io/name",
            "operator": "In",
            "values": ["benchfleet-collector", "benchfleet-runner"],
        }
    ]


def test_an_endpoint_given_by_address_needs_no_dns_and_https_defaults_to_443(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    store = STORE.replace("https://s3.example.com:9443", "https://[2001:db8::5]")
    edit_fleet(spec_repo, fleet=store.replace("192.0.2.0/24, 198.51.100.7/32", "2001:db8::5/128"))
    (policy, _) = store_policies(rendered(spec_repo, write_spec), "beta")
    assert policy["spec"]["egress"] == [
        {
            "to": [{"ipBlock": {"cidr": "2001:db8::5/128"}}],
            "ports": [{"protocol": "TCP", "port": 443}],
        }
    ]


def test_a_clusters_own_store_replaces_the_fleets_and_plain_http_inside_the_cluster_is_allowed(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    edit_fleet(spec_repo, fleet=STORE, alpha=ALPHA_STORE)
    files = rendered(spec_repo, write_spec)
    alpha, beta = env_of(job_of(files, "alpha")), env_of(job_of(files, "beta"))
    assert alpha[RESULTS_URL_ENV]["value"] == "s3://alpha-results/nightly"
    assert alpha[ENDPOINT_ENV]["value"] == "http://seaweed.lake.svc.cluster.local:8333"
    assert alpha[REGION_ENV]["value"] == "eu-1"
    assert alpha[CREDENTIAL_KEYS[0]] == {
        "name": CREDENTIAL_KEYS[0],
        **secret_ref("alpha-lake", CREDENTIAL_KEYS[0]),
    }
    assert beta[RESULTS_URL_ENV]["value"] == "s3://benchmarks/team-a"
    (policy, _) = store_policies(files, "alpha")
    assert policy["spec"]["egress"][1] == {
        "to": [{"ipBlock": {"cidr": "10.96.0.0/12"}}],
        "ports": [{"protocol": "TCP", "port": 8333}],
    }


def test_a_cluster_without_a_store_renders_exactly_as_before_stores(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    """Beta, storeless beside alpha's store, gets byte for byte what a fleet without any
    store gives it (the examples' dist/ is held to the committed one by test_synth)."""
    before = rendered(spec_repo, write_spec)
    assert not store_policies(before, "alpha")
    assert not set(env_of(job_of(before, "alpha"))) - BEFORE_STORES
    edit_fleet(spec_repo, alpha=ALPHA_STORE)
    after = rendered(spec_repo, write_spec)
    beta = {path: text for path, text in after.items() if "beta" in path.parts}
    assert beta == {path: text for path, text in before.items() if "beta" in path.parts}
    assert after != before


def test_a_store_is_in_the_job_names_hash_and_its_networks_are_not(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    """A Job's pod template is immutable: a store added to (or changed in) a cluster whose
    Jobs have not finished must give them new names, which Flux applies as new Jobs (and
    prunes the old), never as an edit the API server refuses. Its networks are only in the
    NetworkPolicy, which may change in place, so they rename nothing."""
    names = [job_of(rendered(spec_repo, write_spec), "alpha")["metadata"]["name"]]
    edit_fleet(spec_repo, fleet=STORE)
    names.append(job_of(rendered(spec_repo, write_spec), "alpha")["metadata"]["name"])
    fleet = spec_repo / FLEET_FILE
    text = fleet.read_text(encoding="utf-8")
    fleet.write_text(text.replace("lake-writer", "lake-writer-2"), encoding="utf-8")
    names.append(job_of(rendered(spec_repo, write_spec), "alpha")["metadata"]["name"])
    fleet.write_text(text.replace("198.51.100.7/32", "198.51.100.8/32"), encoding="utf-8")
    files = rendered(spec_repo, write_spec)
    assert len(set(names)) == 3
    assert job_of(files, "alpha")["metadata"]["name"] == names[1]
    (policy, _) = store_policies(files, "alpha")
    assert {"ipBlock": {"cidr": "198.51.100.8/32"}} in policy["spec"]["egress"][1]["to"]


def test_the_stores_ca_bundle_is_mounted_from_a_configmap_and_named_by_aws_ca_bundle(
    spec_repo: Path, write_spec: WriteSpec, company_ca: Authority
) -> None:
    bundle = spec_repo / "certs" / "store-ca.pem"
    bundle.parent.mkdir()
    shutil.copyfile(company_ca.certificate, bundle)
    edit_fleet(spec_repo, fleet=STORE + "  ca_bundle: certs/store-ca.pem\n")
    files = rendered(spec_repo, write_spec)
    key = check_ca_bundle("certs/store-ca.pem", bundle.read_bytes()).key
    job = job_of(files, "alpha")
    env = env_of(job)
    assert env[CA_BUNDLE_ENV] == {"name": CA_BUNDLE_ENV, "value": f"{CA_DIR}/{key}"}
    maps = kinds(files, "dist/alpha/workloads/stored.yaml", "ConfigMap")
    (ca_map,) = [m for m in maps if key in m.get("data", {})]
    assert ca_map["data"][key] == bundle.read_text(encoding="ascii")
    (volume,) = [v for v in job["spec"]["template"]["spec"]["volumes"] if v["name"] == "ca-bundles"]
    assert volume["projected"]["sources"] == [
        {"configMap": {"name": ca_map["metadata"]["name"], "items": [{"key": key, "path": key}]}}
    ]


def test_an_edited_store_ca_bundle_is_not_served_from_the_render_cache(
    spec_repo: Path, write_spec: WriteSpec, company_ca: Authority, tmp_path: Path
) -> None:
    bundle = spec_repo / "certs" / "store-ca.pem"
    bundle.parent.mkdir()
    shutil.copyfile(company_ca.certificate, bundle)
    edit_fleet(spec_repo, fleet=STORE + "  ca_bundle: certs/store-ca.pem\n")
    write_spec("stored.yaml", WORKFLOW)
    cache = RenderCache(tmp_path / "cache")
    path = PurePosixPath("dist/alpha/workloads/stored.yaml")
    first = render(load_specs(spec_repo), cache)[path]
    shutil.copyfile(make_authority(tmp_path / "next", "next-ca").certificate, bundle)
    second = render(load_specs(spec_repo), cache)[path]
    assert second != first and second == render(load_specs(spec_repo))[path]


def problems_with(root: Path, old: str, new: str, *, alpha: str = "") -> list[str]:
    store = STORE.replace(old, new)
    assert store != STORE or not old
    edit_fleet(root, fleet=store, alpha=alpha)
    return [str(problem) for problem in problems_in(root)]


@pytest.mark.parametrize(
    ("old", "new", "where", "message"),
    [
        (
            "s3://benchmarks/team-a/",
            "s3://benchmarks/team-a/../team-b",
            "22:8: results_store.url",
            "prefix folder '..' is not plain",
        ),
        (
            "s3://benchmarks/team-a/",
            f"s3://AKIAEXAMPLE:{SECRET}@benchmarks/team-a",
            "22:8: results_store.url",
            "s3://***@benchmarks/team-a: a lake URL carries no credentials",
        ),
        (
            "s3://benchmarks/team-a/",
            "s3://Bench_Marks/team-a",
            "22:8: results_store.url",
            "bucket 'Bench_Marks' is no S3 bucket name",
        ),
        (
            "s3://benchmarks/team-a/",
            "https://benchmarks/team-a",
            "22:8: results_store.url",
            "a lake URL is s3://BUCKET/PREFIX",
        ),
        (
            "https://s3.example.com:9443",
            f"https://AKIAEXAMPLE:{SECRET}@s3.example.com:9443",
            "23:13: results_store.endpoint",
            "https://***@s3.example.com:9443: an endpoint carries no credentials",
        ),
        (
            "https://s3.example.com:9443",
            "http://s3.example.com",
            "23:13: results_store.endpoint",
            "plain http is only for loopback or a Service inside the cluster",
        ),
        (
            "https://s3.example.com:9443",
            "https://s3.example.com/benchmarks",
            "23:13: results_store.endpoint",
            "no path, query or fragment",
        ),
        (
            "https://s3.example.com:9443",
            "https://s3.example.com:0",
            "23:13: results_store.endpoint",
            "port 0 is no TCP port",
        ),
        ("us-east-1", "us east 1", "24:11: results_store.region", "is not a store's region"),
        (
            "lake-writer",
            "Lake Writer",
            "25:23: results_store.credentials_secret",
            "name 'Lake Writer' is not DNS-label safe",
        ),
        (
            "  credentials_secret: lake-writer\n",
            "",
            "21:1: results_store.credentials_secret",
            "required key 'credentials_secret' is missing",
        ),
        (
            "[192.0.2.0/24, 198.51.100.7/32]",
            "[192.0.2.0/24, 192.0.2.0/24]",
            "26:34: results_store.endpoint_cidrs[1]",
            "is the network of endpoint_cidrs[0]",
        ),
        (
            "[192.0.2.0/24, 198.51.100.7/32]",
            "[s3.example.com]",
            "26:20: results_store.endpoint_cidrs[0]",
            "is not a network in CIDR notation",
        ),
        (
            "[192.0.2.0/24, 198.51.100.7/32]",
            "[]",
            "26:3: results_store.endpoint_cidrs",
            "the list is empty",
        ),
        (
            "  region: us-east-1\n",
            "  region: us-east-1\n  ca_bundle: certs/missing.pem\n",
            "25:14: results_store.ca_bundle",
            "certs/missing.pem",
        ),
        (
            "  region: us-east-1\n",
            "  region: us-east-1\n  path_style: true\n",
            "25:3: results_store.path_style",
            "unknown key 'path_style'",
        ),
    ],
)
def test_a_bad_results_store_is_an_error_at_its_field_with_credentials_masked(
    spec_repo: Path, old: str, new: str, where: str, message: str
) -> None:
    problems = problems_with(spec_repo, old, new)
    assert any(
        p.startswith(f"{FLEET_FILE.as_posix()}:{where}: ") and message in p for p in problems
    ), problems
    assert not any(SECRET in p for p in problems)


def test_a_clusters_own_store_is_located_in_the_cluster(spec_repo: Path) -> None:
    bad = ALPHA_STORE.replace(
        "http://seaweed.lake.svc.cluster.local:8333", f"http://k:{SECRET}@s3.example.com"
    )
    problems = problems_with(spec_repo, "", "", alpha=bad)
    (problem,) = problems
    assert problem.startswith(
        f"{FLEET_FILE.as_posix()}:18:17: clusters[0].results_store.endpoint: http://***@s3.example.com"
    )
    assert SECRET not in problem
