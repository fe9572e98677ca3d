"""Synthesis of the examples: committed output is current, deterministic, and valid against
Kubernetes' own schemas (strict, at 1.33), the Flux CRDs, kustomize and our own rules."""

import json
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from contract.errors import ExitCode
from contract.layout import (
    CAPACITY_ANNOTATION,
    DEVICE_TYPE_ANNOTATION,
    DIST,
    MESH_OPT_OUT_ANNOTATIONS,
    MESH_OPT_OUT_LABELS,
    TARGET_LABEL,
)
from contract.records import JobRecord, write_record
from localcluster.build import binary_dir
from synth.load import load_specs, workflow_files
from synth.main import synth
from synth.problems import SpecProblems
from synth.render import render
from synth.write import generated, tree
from tests.conftest import REPO_ROOT
from tests.synth.conftest import LinkModels
from tests.synth.manifests import (
    KUBERNETES_VERSION,
    crd_violations,
    is_custom_resource,
    objects,
    rule_violations,
)

Files = dict[PurePosixPath, str]


@pytest.fixture(scope="module")
def rendered() -> Files:
    return render(load_specs(REPO_ROOT))


def all_objects(rendered: Files) -> list[tuple[PurePosixPath, dict[str, Any]]]:
    return list(objects(rendered))


def object_id(item: tuple[PurePosixPath, dict[str, Any]]) -> str:
    path, obj = item
    return f"{path}:{obj['kind']}/{obj['metadata']['name']}"


def test_committed_dist_and_clusters_are_current(rendered: Files) -> None:
    committed = generated(REPO_ROOT)
    stale = sorted(
        str(p) for p in rendered.keys() | committed.keys() if rendered.get(p) != committed.get(p)
    )
    assert stale == [], "dist/ or clusters/ is stale: run `make synth` and commit the result"


def test_render_is_deterministic_in_any_file_order(rendered: Files) -> None:
    files = list(reversed(workflow_files(REPO_ROOT)))
    assert render(load_specs(REPO_ROOT, files)) == rendered


def test_every_kubernetes_object_is_valid_at_its_clusters_version_strict(
    rendered: Files,
) -> None:
    """dist/<cluster>/ at the version specs/clusters.yaml records for the cluster (a version
    kubernetes-validate has no schemas for raises SchemaNotFoundError)."""
    clusters = load_specs(REPO_ROOT).fleet.clusters
    versions = {c.name: f"{c.kubernetes_version}.0" for c in clusters}
    failures = []
    for item in all_objects(rendered):
        if is_custom_resource(item[1]):
            continue
        path = item[0]
        version = versions[path.parts[1]] if path.parts[0] == DIST else KUBERNETES_VERSION
        try:
            kubernetes_validate.validate(item[1], version, strict=True)
        except kubernetes_validate.ValidationError as error:
            failures.append(f"{object_id(item)}: {error.message}")
    assert failures == []


def test_every_custom_resource_matches_its_crd(rendered: Files) -> None:
    custom = [item for item in all_objects(rendered) if is_custom_resource(item[1])]
    kinds = {obj["kind"] for _, obj in custom}
    assert kinds == {"GitRepository", "Kustomization", "LocalQueue", "PrometheusRule"}
    for _, obj in custom:
        assert crd_violations(obj) == []


def test_every_object_follows_our_rules(rendered: Files) -> None:
    violations = {
        object_id(item): found
        for item in all_objects(rendered)
        if (found := rule_violations(item[1]))
    }
    assert violations == {}


def test_rules_catch_a_job_that_breaks_them(rendered: Files) -> None:
    """The rule checks above can fail: a Job with a TTL and root user is reported."""
    _, job = next(item for item in all_objects(rendered) if item[1]["kind"] == "Job")
    job["spec"]["ttlSecondsAfterFinished"] = 3600
    job["spec"]["template"]["spec"]["securityContext"]["runAsUser"] = 0
    assert len(rule_violations(job)) == 2


@pytest.mark.cluster
def test_kubectl_kustomize_renders_every_dist_folder(tmp_path: Path, rendered: Files) -> None:
    """With the kubectl the project builds (localcluster/), not whichever is installed."""
    for path, text in rendered.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    folders = sorted({path.parent for path in rendered if path.name == "kustomization.yaml"})
    assert [folder.parts[0] for folder in folders] == ["dist"] * 4
    kubectl = str(binary_dir() / "kubectl")
    for folder in folders:
        subprocess.run(
            [kubectl, "kustomize", str(tmp_path / folder)], check=True, capture_output=True
        )


def test_clusters_folders_hold_no_kustomization_yaml(rendered: Files) -> None:
    """Flux generates one covering the whole folder, flux-system/ included; one listing only
    synth's file would hide flux bootstrap's files from Flux (#13)."""
    clusters = [path for path in rendered if path.parts[0] == "clusters"]
    assert sorted(str(path) for path in clusters) == [
        "clusters/eu-west/benchfleet.yaml",
        "clusters/us-east/benchfleet.yaml",
    ]


def test_flux_applies_infrastructure_before_workloads(rendered: Files) -> None:
    flux = [obj for path, obj in all_objects(rendered) if path.parts[0] == "clusters"]
    workloads = [o for o in flux if o["metadata"]["name"] == "benchfleet-workloads"]
    assert workloads
    for kustomization in workloads:
        assert kustomization["spec"]["dependsOn"] == [{"name": "benchfleet-infrastructure"}]
        assert kustomization["spec"]["prune"] is True
        assert kustomization["spec"]["wait"] is False


def jobs_of(rendered: Files, workflow: str) -> list[dict[str, Any]]:
    return [
        obj
        for _, obj in all_objects(rendered)
        if obj["kind"] == "Job" and obj["metadata"]["labels"]["workflow"] == workflow
    ]


def test_sweep_is_one_indexed_job_capped_at_max_parallel(rendered: Files) -> None:
    jobs = jobs_of(rendered, "quantization-sweep")
    assert len(jobs) == 1
    assert jobs[0]["spec"]["completions"] == 96
    assert jobs[0]["spec"]["parallelism"] == 10
    assert jobs[0]["spec"]["completionMode"] == "Indexed"


def test_spot_targets_tolerate_spot_taints_and_ignore_preemption(rendered: Files) -> None:
    jobs = jobs_of(rendered, "nightly-spot")
    assert len(jobs) == 2
    for job in jobs:
        pod = job["spec"]["template"]["spec"]
        assert pod["nodeSelector"]["node-type"] == "spot"
        assert {"key": "spot", "operator": "Equal", "value": "true", "effect": "NoSchedule"} in (
            pod["tolerations"]
        )
        assert job["spec"]["podFailurePolicy"]["rules"][0]["action"] == "Ignore"
        assert pod["priorityClassName"] == "benchfleet-nightly"
        assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "nightly"


@pytest.mark.parametrize(
    ("workflow", "devices"),
    [
        ("nightly-spot", {"t4-spot": ("nvidia-t4", "spot"), "cpu-spot": ("cpu", "spot")}),
        (
            "gpu-comparison",
            {"a100": ("nvidia-a100", "on-demand"), "t4": ("nvidia-t4", "on-demand")},
        ),
    ],
)
def test_each_job_says_what_its_pods_hold_and_how_it_is_bought(
    rendered: Files, workflow: str, devices: dict[str, tuple[str, str]]
) -> None:
    """What gather keeps with each variant's allocated time, for the report to price."""
    said = {
        job["metadata"]["labels"][TARGET_LABEL]: (
            job["metadata"]["annotations"][DEVICE_TYPE_ANNOTATION],
            job["metadata"]["annotations"][CAPACITY_ANNOTATION],
        )
        for job in jobs_of(rendered, workflow)
    }
    assert devices.items() <= said.items()


def test_an_index_fails_at_once_on_runner_exits_a_retry_would_repeat(rendered: Files) -> None:
    job = jobs_of(rendered, "cpu-smoke")[0]
    (rule,) = [r for r in job["spec"]["podFailurePolicy"]["rules"] if r["action"] == "FailIndex"]
    container = job["spec"]["template"]["spec"]["containers"][0]["name"]
    assert rule["onExitCodes"]["containerName"] == container
    fail_now = set(rule["onExitCodes"]["values"])
    assert fail_now == {
        ExitCode.BAD_CONFIG,
        ExitCode.OUT_OF_MEMORY,
        ExitCode.UNSUPPORTED_VARIANT,
        ExitCode.MODEL_MISMATCH,
        ExitCode.MODEL_REFUSED,
        ExitCode.DOWNLOAD_REFUSED,
        ExitCode.DOWNLOAD_UNTRUSTED,
    }
    # A read or a download may fail transiently and another node may have the GPU: retried.
    retried = {ExitCode.MODEL_LOAD, ExitCode.DOWNLOAD_FAILED, ExitCode.DEVICE_MISSING}
    assert not fail_now & {*retried, ExitCode.INTERNAL}


class TestSynthOnDisk:
    @pytest.fixture
    def repo(self, tmp_path: Path, link_models: LinkModels) -> Path:
        shutil.copytree(REPO_ROOT / "specs", tmp_path / "specs")
        link_models(tmp_path)
        for path in (tmp_path / "specs" / "workflows").glob("*.yaml"):
            if path.stem not in ("cpu-smoke", "gpu-comparison"):
                path.unlink()
        synth(tmp_path)
        return tmp_path

    def test_second_synth_changes_nothing(self, repo: Path) -> None:
        assert synth(repo).changed == {}

    def test_a_new_workflows_files_are_said_added_not_changed(self, repo: Path) -> None:
        spec = repo / "specs" / "workflows" / "cpu-smoke.yaml"
        text = spec.read_text(encoding="utf-8")
        (spec.parent / "cpu-smoke-copy.yaml").write_text(
            text.replace("id: cpu-smoke", "id: cpu-smoke-copy", 1), encoding="utf-8"
        )
        changed = synth(repo).changed
        copies = {path: how for path, how in changed.items() if "cpu-smoke-copy" in path.name}
        assert copies and set(copies.values()) == {"added"}

    def test_invalid_spec_leaves_dist_exactly_as_it_was(self, repo: Path) -> None:
        before = tree(repo, "dist")
        spec = repo / "specs" / "workflows" / "cpu-smoke.yaml"
        spec.write_text(spec.read_text(encoding="utf-8").replace("gpu_type: cpu", "gpu_type: cpx"))
        with pytest.raises(SpecProblems):
            synth(repo)
        assert tree(repo, "dist") == before

    def test_removed_workflow_disappears_from_dist(self, repo: Path) -> None:
        (repo / "specs" / "workflows" / "gpu-comparison.yaml").unlink()
        changed = synth(repo).changed
        assert changed[PurePosixPath("dist/us-east/workloads/gpu-comparison.yaml")] == "removed"
        assert not (repo / "dist" / "us-east" / "workloads" / "gpu-comparison.yaml").exists()
        assert (repo / "dist" / "us-east" / "workloads" / "cpu-smoke.yaml").exists()
        assert not list(repo.glob(".dist-*"))

    @staticmethod
    def jobs_in(workload: Path) -> list[dict[str, Any]]:
        documents = yaml.safe_load_all(workload.read_text(encoding="utf-8"))
        return [d for d in documents if d and d["kind"] == "Job"]

    def record(self, repo: Path, workflow: str, job: dict[str, Any]) -> None:
        write_record(
            repo,
            JobRecord(
                workflow=workflow,
                cluster="us-east",
                namespace=job["metadata"]["namespace"],
                job=job["metadata"]["name"],
                target=None,
                spec_file=None,
                spec_sha256=None,
                image=None,
                outcome="complete",
                variants=(),
            ),
        )

    def test_a_job_with_stored_results_leaves_dist(self, repo: Path) -> None:
        workload = repo / "dist" / "us-east" / "workloads" / "gpu-comparison.yaml"
        jobs = self.jobs_in(workload)
        self.record(repo, "gpu-comparison", jobs[0])
        synth(repo)
        documents = yaml.safe_load_all(workload.read_text(encoding="utf-8"))
        left = {(d["kind"], d["metadata"]["name"]) for d in documents if d}
        # Its config.json ConfigMap is named like the Job, and goes with it.
        assert (
            not {("Job", jobs[0]["metadata"]["name"]), ("ConfigMap", jobs[0]["metadata"]["name"])}
            & left
        )
        left = {name for kind, name in left if kind == "Job"}
        assert {job["metadata"]["name"] for job in jobs[1:]} <= left

    def test_a_workflow_whose_jobs_are_all_stored_leaves_dist(self, repo: Path) -> None:
        workload = repo / "dist" / "us-east" / "workloads" / "cpu-smoke.yaml"
        for job in self.jobs_in(workload):
            self.record(repo, "cpu-smoke", job)
        changed = synth(repo).changed
        assert PurePosixPath("dist/us-east/workloads/cpu-smoke.yaml") in changed
        assert not workload.exists()
        kustomization = (workload.parent / "kustomization.yaml").read_text()
        assert "cpu-smoke" not in kustomization
        assert (repo / "dist" / "eu-west" / "workloads" / "cpu-smoke.yaml").exists()


CHECKOV = REPO_ROOT / ".venv" / "tools" / "checkov" / "bin" / "checkov"
CHECKOV_SKIPS = [
    # CKV_K8S_15 wants imagePullPolicy Always. Images are pinned by digest, which cannot
    # change under a name, so Always would only add a registry round trip to each of a
    # sweep's hundred pods, and fail them when the registry blinks.
    "CKV_K8S_15",
]


@pytest.mark.slow
def test_checkov_finds_nothing(tmp_path: Path, rendered: Files) -> None:
    assert CHECKOV.exists(), "checkov is missing: run `make install`"
    for path, text in rendered.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text, encoding="utf-8")
    completed = subprocess.run(
        [
            str(CHECKOV),
            "--framework",
            "kubernetes",
            "--directory",
            str(tmp_path),
            "--quiet",
            "--compact",
            "--output",
            "json",
            "--skip-check",
            ",".join(CHECKOV_SKIPS),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    report, _ = json.JSONDecoder().raw_decode(completed.stdout)
    failed = [
        f"{check['check_id']} {check['resource']} ({check['file_path']})"
        for check in report["results"]["failed_checks"]
    ]
    assert failed == []
    assert report["summary"]["passed"] > 500


def test_a_named_queue_gets_a_local_queue_in_the_workflows_namespace(rendered: Files) -> None:
    queues = [
        (str(path), obj["metadata"]["namespace"], obj["metadata"]["name"], obj["spec"])
        for path, obj in all_objects(rendered)
        if obj["kind"] == "LocalQueue"
    ]
    assert queues == [
        (
            "dist/us-east/infrastructure/queues.yaml",
            "benchfleet-prod",
            "nightly",
            {"clusterQueue": "benchfleet"},
        )
    ]


class TestClustersFolder:
    """synth writes clusters/<cluster>/benchfleet.yaml and leaves everything else there to
    its owners: `flux bootstrap`'s flux-system/ above all (#13)."""

    @pytest.fixture
    def repo(self, tmp_path: Path, link_models: LinkModels) -> Path:
        shutil.copytree(REPO_ROOT / "specs", tmp_path / "specs")
        link_models(tmp_path)
        for path in (tmp_path / "specs" / "workflows").glob("*.yaml"):
            if path.stem != "cpu-smoke":
                path.unlink()
        return tmp_path

    def bootstrap(self, repo: Path, cluster: str) -> dict[Path, str]:
        """What `flux bootstrap --path=clusters/<cluster>` commits, and a team's own file."""
        files = {
            repo / "clusters" / cluster / "flux-system" / name: f"# {name} of flux bootstrap\n"
            for name in ("gotk-components.yaml", "gotk-sync.yaml", "kustomization.yaml")
        }
        files[repo / "clusters" / cluster / "monitoring.yaml"] = "# the team's own\n"
        for path, text in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return files

    def test_synth_leaves_flux_bootstrap_files_alone(self, repo: Path) -> None:
        theirs = self.bootstrap(repo, "us-east")
        synth(repo)
        assert (repo / "clusters" / "us-east" / "benchfleet.yaml").is_file()
        assert all(path.read_text(encoding="utf-8") == text for path, text in theirs.items())
        assert synth(repo).changed == {}

    def test_a_kustomization_yaml_an_earlier_synth_wrote_is_removed(self, repo: Path) -> None:
        theirs = self.bootstrap(repo, "us-east")
        legacy = repo / "clusters" / "us-east" / "kustomization.yaml"
        legacy.write_text(
            "# Generated by `make synth` from specs/; do not edit.\nresources: [benchfleet.yaml]\n"
        )
        changed = synth(repo).changed
        assert PurePosixPath("clusters/us-east/kustomization.yaml") in changed
        assert not legacy.exists()
        assert all(path.exists() for path in theirs)

    def test_a_kustomization_yaml_of_the_team_is_kept(self, repo: Path) -> None:
        own = repo / "clusters" / "us-east" / "kustomization.yaml"
        own.parent.mkdir(parents=True)
        own.write_text("resources: [benchfleet.yaml, flux-system]\n", encoding="utf-8")
        synth(repo)
        assert own.read_text(encoding="utf-8") == "resources: [benchfleet.yaml, flux-system]\n"

    def test_a_cluster_leaving_the_fleet_loses_only_synths_file(self, repo: Path) -> None:
        synth(repo)
        theirs = self.bootstrap(repo, "eu-west")
        fleet = repo / "specs" / "clusters.yaml"
        text = fleet.read_text(encoding="utf-8")
        fleet.write_text(text[: text.index("  - name: eu-west")], encoding="utf-8")
        changed = synth(repo).changed
        assert changed[PurePosixPath("clusters/eu-west/benchfleet.yaml")] == "removed"
        assert not (repo / "clusters" / "eu-west" / "benchfleet.yaml").exists()
        assert all(path.exists() for path in theirs)
        assert not (repo / "dist" / "eu-west").exists()


def test_every_namespace_opts_its_runner_pods_out_of_mesh_sidecars(rendered: Files) -> None:
    """A mesh's sidecar keeps a pod Running after its runner ends; set on the namespace, the
    opt-out reaches the pods of running Jobs too, without a rename (docs/synth.md)."""
    namespaces = [obj for _, obj in all_objects(rendered) if obj["kind"] == "Namespace"]
    assert namespaces
    for namespace in namespaces:
        metadata = namespace["metadata"]
        assert MESH_OPT_OUT_LABELS.items() <= metadata["labels"].items()
        assert MESH_OPT_OUT_ANNOTATIONS.items() <= metadata["annotations"].items()
