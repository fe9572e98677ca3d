"""Every generated path and every cdk8s construct is unique by construction: names that
differ give different files and objects, however their parts line up around a '-'."""

from pathlib import Path

import yaml

from synth.main import synth
from tests.conftest import TEST_DATA
from tests.synth.conftest import WriteSpec

MINIMAL = (TEST_DATA / "specs" / "valid-minimal.yaml").read_text(encoding="utf-8")

FLEET = """\
git: {url: ssh://git@example.com/benchfleet}
image: "registry.example.com/runner@sha256:\\
  3333333333333333333333333333333333333333333333333333333333333333"
environments: [dev, dev-identity, dev-collector]
clusters:
  - {name: alpha, region: r, api_server_cidrs: [10.0.0.1/32], device_types: [cpu]}
  - {name: alpha-beta, region: r, api_server_cidrs: [10.0.0.2/32], device_types: [cpu]}
"""

# (workflow id, clusters, environment): ids that name an infrastructure file's chart, and a
# cluster-workflow pair that reads the same as another with the '-' moved.
WORKFLOWS = [
    ("beta-x", "[alpha]", "dev"),
    ("x", "[alpha-beta]", "dev"),
    ("namespaces", "[alpha]", "dev-identity"),
    ("rbac", "[alpha]", "dev-collector"),
    ("network-policies", "[alpha]", "dev"),
    ("priority-classes", "[alpha]", "dev"),
]


def test_names_that_meet_around_a_dash_still_give_their_own_files(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    (spec_repo / "specs" / "clusters.yaml").write_text(FLEET, encoding="utf-8")
    for workflow, clusters, environment in WORKFLOWS:
        spec = MINIMAL.replace("id: valid-minimal", f"id: {workflow}")
        spec = spec.replace(
            "clusters: [alpha]", f"clusters: {clusters}\nenvironment: {environment}"
        )
        write_spec(f"{workflow}.yaml", spec)
    synth(spec_repo)
    dist = spec_repo / "dist"
    for workflow, clusters, _ in WORKFLOWS:
        cluster = clusters.strip("[]")
        documents = yaml.safe_load_all(
            (dist / cluster / "workloads" / f"{workflow}.yaml").read_text()
        )
        jobs = [d for d in documents if d and d["kind"] == "Job"]
        assert [job["metadata"]["labels"]["workflow"] for job in jobs] == [workflow]
    namespaces = yaml.safe_load_all(
        (dist / "alpha" / "infrastructure" / "namespaces.yaml").read_text()
    )
    kinds = sorted(
        (
            d["kind"],
            d["metadata"]["namespace"] if d["kind"] == "ConfigMap" else d["metadata"]["name"],
        )
        for d in namespaces
        if d
    )
    assert kinds == sorted(
        [("Namespace", f"benchfleet-{e}") for e in ("dev", "dev-identity", "dev-collector")]
        + [("ConfigMap", f"benchfleet-{e}") for e in ("dev", "dev-identity", "dev-collector")]
    )
