"""GitOps proved with Flux's own controllers (source-controller, kustomize-controller): a
cluster bootstrapped as `flux bootstrap` does it, a git server speaking smart HTTP, and
nobody running `kubectl apply` after the bootstrap. The pods hand over valid results at once
(rules of the pod executor): these tests are about what Flux applies and prunes; the real
runner's pods are proved in test_cpu_smoke.py and test_two_clusters.py.
"""

import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from click.testing import CliRunner

from contract.records import read_record
from localcluster.flux import start_flux
from localcluster.gitops import BRANCH, FluxRepository, git, prepare
from localcluster.gitserver import GitServer
from localcluster.podexecutor import NeverStart
from synth.cli import cli as synth_cli
from tests.cluster.conftest import (
    CLUSTER,
    NAMESPACE,
    LiveCluster,
    PodObserver,
    Repo,
    job_condition,
    running_cluster,
    service_account_kubeconfig,
    short_cpu_spec,
    succeed_quickly,
    wait_for,
)
from tests.conftest import REPO_ROOT

pytestmark = pytest.mark.cluster


@dataclass
class GitOps:
    """The Flux-managed repository, the cluster it is applied to, and the git server."""

    flux: FluxRepository
    live: LiveCluster
    server: GitServer

    @property
    def repo(self) -> Repo:
        return Repo(self.flux.work)


@pytest.fixture(scope="module")
def gitops(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GitOps]:
    """A fresh us-east twin with Flux, bootstrapped from a repository holding no workflow."""
    base = tmp_path_factory.mktemp("gitops")
    (base / "served").mkdir()
    with (
        running_cluster(CLUSTER, base / "cluster", apply_infrastructure=False) as live,
        GitServer(base / "served") as server,
    ):
        start_flux(live.cluster, live.binaries)
        fleet = (REPO_ROOT / "specs" / "clusters.yaml").read_text(encoding="utf-8")
        flux = prepare(base, live.cluster, live.binaries, server=server, fleet_text=fleet)
        shutil.copytree(REPO_ROOT / "models", flux.work / "models")
        flux.bootstrap()
        yield GitOps(flux, live, server)


def test_bootstrap_applies_flux_itself_and_benchfleet_from_one_folder(gitops: GitOps) -> None:
    """The layout Flux's bootstrap expects: no kustomization.yaml in clusters/us-east/, so
    Flux generates one holding flux-system/ and benchfleet.yaml alike; and source-controller
    cloned shallow from the smart-HTTP server."""
    assert not (gitops.flux.work / "clusters" / CLUSTER / "kustomization.yaml").exists()
    flux_system = gitops.flux.flux_object("kustomization", "flux-system")
    assert flux_system is not None
    inventory = flux_system["status"]["inventory"]
    ids = {entry["id"] for entry in inventory["entries"]}
    assert "flux-system_flux-system_source.toolkit.fluxcd.io_GitRepository" in ids
    assert "flux-system_benchfleet_source.toolkit.fluxcd.io_GitRepository" in ids
    assert "flux-system_benchfleet-workloads_kustomize.toolkit.fluxcd.io_Kustomization" in ids
    assert any("git-upload-pack" in r and "(shallow)" in r for r in gitops.server.requests)
    identity = gitops.live.get("configmap", "benchfleet-cluster", "-n", NAMESPACE)
    assert identity["data"]["cluster"] == CLUSTER


def _objects_of(live: LiveCluster, job: str) -> list[str]:
    """The Job and its config ConfigMap, where they still exist."""
    found = live.run("get", "job,configmap", "-n", NAMESPACE, "-o", "name", "--ignore-not-found",
                     f"--field-selector=metadata.name={job}")  # fmt: skip
    return found.stdout.split()


def test_a_workflow_runs_is_recorded_pruned_and_never_runs_again(gitops: GitOps) -> None:
    live, repo = gitops.live, gitops.repo
    repo.write_workflow("e2e-flux", short_cpu_spec("e2e-flux", "[1, 2]"))
    sha = gitops.flux.commit("e2e-flux: two variants")
    succeed_quickly(gitops.live, repo, "e2e-flux")
    (job,) = repo.job_names("e2e-flux")
    with PodObserver(live, f"job={job}") as observer:
        gitops.flux.converge(sha)
        gathered = repo.collector(
            "gather", "--workflow", "e2e-flux", "--cluster", CLUSTER, "--timeout", "3m",
            kubeconfig=service_account_kubeconfig(live),
        )  # fmt: skip
        assert gathered.exit_code == 0, gathered.output
        assert job_condition(live, job) == "Complete"

        # Recorded: synth drops the Job, Flux prunes it with the ConfigMap only it used.
        shared = [d["metadata"]["name"] for d in repo.documents("e2e-flux")
                  if d["kind"] == "ConfigMap" and d["metadata"]["name"] != job]  # fmt: skip
        recorded = gitops.flux.commit("e2e-flux: results")
        assert repo.job_names("e2e-flux") == []
        gitops.flux.converge(recorded)
        wait_for("the Job to be pruned", lambda: _objects_of(live, job) == [])
        for name in shared:
            assert live.run("get", "configmap", name, "-n", NAMESPACE).returncode != 0
        for _ in range(3):
            gitops.flux.reconcile(kustomizations=True)
            gitops.flux.converge(recorded)
    assert len(observer.seen) == 2, "no pod of the recorded Job ran again"


def test_an_edited_spec_is_a_new_job_and_the_old_one_is_pruned(gitops: GitOps) -> None:
    live, repo = gitops.live, gitops.repo
    repo.write_workflow("e2e-flux-edit", short_cpu_spec("e2e-flux-edit", "[1, 2]"))
    first = gitops.flux.commit("e2e-flux-edit: two variants")
    succeed_quickly(gitops.live, repo, "e2e-flux-edit")
    (old,) = repo.job_names("e2e-flux-edit")
    gitops.flux.converge(first)
    wait_for("the first Job", lambda: job_condition(live, old))

    repo.write_workflow("e2e-flux-edit", short_cpu_spec("e2e-flux-edit", "[1, 2, 4]"))
    second = gitops.flux.commit("e2e-flux-edit: one batch size more")
    succeed_quickly(gitops.live, repo, "e2e-flux-edit")
    (new,) = repo.job_names("e2e-flux-edit")
    assert new != old
    with PodObserver(live, f"job={new}") as observer:
        gitops.flux.converge(second)
        wait_for("the old Job to be pruned", lambda: _objects_of(live, old) == [])
        assert wait_for("the new Job", lambda: job_condition(live, new)) == "Complete"
    # Not recorded yet when the spec changed: the new Job holds every variant again.
    assert len(observer.seen) == 3


def test_a_value_added_to_a_recorded_sweep_runs_only_the_new_variant(gitops: GitOps) -> None:
    """Issue 16 through Flux and the Job controller: once gather has recorded a workflow, a
    batch size added to its sweep is a Job of that one variant; recorded, it leaves too."""
    live, repo = gitops.live, gitops.repo
    kubeconfig = service_account_kubeconfig(live)

    def record(job: str) -> None:
        """Gather the workflow, commit its record, and see Flux prune the recorded Job."""
        gathered = repo.collector(
            "gather", "--workflow", "e2e-flux-grow", "--cluster", CLUSTER, "--timeout", "3m",
            kubeconfig=kubeconfig,
        )  # fmt: skip
        assert gathered.exit_code == 0, gathered.output
        gitops.flux.converge(gitops.flux.commit(f"e2e-flux-grow: results of {job}"))
        wait_for(f"{job} to be pruned", lambda: _objects_of(live, job) == [])

    repo.write_workflow("e2e-flux-grow", short_cpu_spec("e2e-flux-grow", "[1, 2]"))
    first = gitops.flux.commit("e2e-flux-grow: two variants")
    succeed_quickly(gitops.live, repo, "e2e-flux-grow")
    (old,) = repo.job_names("e2e-flux-grow")
    gitops.flux.converge(first)
    record(old)

    repo.write_workflow("e2e-flux-grow", short_cpu_spec("e2e-flux-grow", "[1, 2, 4]"))
    grown = gitops.flux.commit("e2e-flux-grow: one batch size more")
    succeed_quickly(gitops.live, repo, "e2e-flux-grow")
    (new,) = repo.job_names("e2e-flux-grow")
    assert [v["batch_size"] for v in repo.config("e2e-flux-grow", new)["variants"]] == [4]
    with PodObserver(live, f"job={new}") as observer:
        gitops.flux.converge(grown)
        assert wait_for("the new Job", lambda: job_condition(live, new)) == "Complete"
    assert len(observer.seen) == 1, "only the added variant ran"
    record(new)
    assert repo.job_names("e2e-flux-grow") == []


def test_a_record_of_an_older_revision_leaves_the_running_job_alone(gitops: GitOps) -> None:
    """The README's loop with revision 2 committed before gather recorded revision 1: the
    record arriving, then `make synth`, must not rename revision 2's Job while it runs (Flux
    would prune it, and what it measured would run again)."""
    live, repo = gitops.live, gitops.repo
    workflow = "e2e-flux-running"
    repo.write_workflow(workflow, short_cpu_spec(workflow, "[1, 2]"))
    first = gitops.flux.commit(f"{workflow}: two variants")
    succeed_quickly(live, repo, workflow)
    (old,) = repo.job_names(workflow)
    gitops.flux.converge(first)
    assert wait_for("the first Job", lambda: job_condition(live, old)) == "Complete"
    gathered = repo.collector(
        "gather", "--workflow", workflow, "--cluster", CLUSTER, "--timeout", "3m",
        kubeconfig=service_account_kubeconfig(live),
    )  # fmt: skip
    assert gathered.exit_code == 0, gathered.output
    # Recorded, but committed only after revision 2 (a gather elsewhere, or later).
    record = repo.root / "results" / workflow
    record.rename(repo.root / "gathered")

    repo.write_workflow(workflow, short_cpu_spec(workflow, "[1, 2, 4]"))
    second = gitops.flux.commit(f"{workflow}: one batch size more, before the record")
    (running,) = repo.job_names(workflow)
    for index in range(3):
        live.rules.set(workflow, index, NeverStart())
    gitops.flux.converge(second)
    uid = live.job(running)["metadata"]["uid"]

    (repo.root / "gathered").rename(record)
    recorded = gitops.flux.commit(f"{workflow}: results of {old}")
    assert repo.job_names(workflow) == [running]
    gitops.flux.converge(recorded)
    assert live.job(running)["metadata"]["uid"] == uid
    assert job_condition(live, running) is None, "still running"

    (repo.root / "specs" / "workflows" / f"{workflow}.yaml").unlink()
    gitops.flux.converge(gitops.flux.commit(f"{workflow}: removed"))
    wait_for("the second Job to be pruned", lambda: _objects_of(live, running) == [])


def test_a_finished_job_is_never_rerun_by_a_reconcile_but_is_when_deleted_by_hand(
    gitops: GitOps,
) -> None:
    """Flux's drift correction: it re-creates what dist/ holds and the cluster lacks."""
    live, repo = gitops.live, gitops.repo
    repo.write_workflow("e2e-flux-drift", short_cpu_spec("e2e-flux-drift", "[1]"))
    sha = gitops.flux.commit("e2e-flux-drift")
    succeed_quickly(gitops.live, repo, "e2e-flux-drift")
    (job,) = repo.job_names("e2e-flux-drift")
    with PodObserver(live, f"job={job}") as observer:
        gitops.flux.converge(sha)
        assert wait_for("the Job", lambda: job_condition(live, job)) == "Complete"
        for _ in range(3):
            gitops.flux.reconcile(kustomizations=True)
            gitops.flux.converge(sha)
        assert len(observer.seen) == 1

        live.kubectl("delete", "job", job, "-n", NAMESPACE)
        recreated = gitops.flux.until(
            "Flux to re-create the Job",
            lambda: live.run("get", "job", job, "-n", NAMESPACE).returncode == 0,
            kustomizations=True,
        )
        assert recreated
        assert wait_for("the re-created Job", lambda: job_condition(live, job)) == "Complete"
    assert len(observer.seen) == 2, "deleting a Job by hand runs its benchmark again"


def test_a_commit_the_api_server_refuses_stops_only_the_workloads(gitops: GitOps) -> None:
    """A hand edit of a Job's immutable pod template: `make plan` says so before the merge;
    merged, the workloads Kustomization reports the API server's refusal, and what runs is
    left as it was."""
    live, repo = gitops.live, gitops.repo
    repo.write_workflow("e2e-flux-bad", short_cpu_spec("e2e-flux-bad", "[1]"))
    good = gitops.flux.commit("e2e-flux-bad: as synth writes it")
    succeed_quickly(gitops.live, repo, "e2e-flux-bad")
    (job,) = repo.job_names("e2e-flux-bad")
    gitops.flux.converge(good)
    before = live.job(job)["spec"]["template"]

    workload = repo.workload("e2e-flux-bad")
    workload.write_text(workload.read_text().replace("value: e2e-flux-bad", "value: edited"))
    git(repo.root, "commit", "-q", "-am", "a hand edit of dist/")
    planned = CliRunner().invoke(synth_cli, ["--root", str(repo.root), "plan"])
    assert planned.exit_code == 1
    assert f"! edited   dist/{CLUSTER}/workloads/e2e-flux-bad.yaml: Job {job}" in planned.output
    git(repo.root, "push", "-q", "origin", f"HEAD:{BRANCH}")
    bad = git(repo.root, "rev-parse", "HEAD")

    def refused() -> str | None:
        ready = gitops.flux.condition("benchfleet-workloads") or {}
        failed = ready.get("status") == "False" and "immutable" in ready.get("message", "")
        return str(ready["message"]) if failed else None

    message = gitops.flux.until("the workloads Kustomization to fail", refused)
    assert "field is immutable" in message
    assert gitops.flux.ready_at("benchfleet-infrastructure", bad)
    assert live.job(job)["spec"]["template"] == before

    git(repo.root, "revert", "--no-edit", "HEAD")
    git(repo.root, "push", "-q", "origin", f"HEAD:{BRANCH}")
    gitops.flux.converge(git(repo.root, "rev-parse", "HEAD"))


NIGHTS = ("2026-12-06T01:17:00Z", "2026-12-07T01:17:00Z", "2026-12-08T01:17:00Z")
"""The simulated clock of the scheduled CI job: three UTC days, each run started at 01:17."""
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.com",
                "GIT_COMMITTER_NAME": "ci", "GIT_COMMITTER_EMAIL": "ci@example.com"}  # fmt: skip


def _scheduled(gitops: GitOps, now: str) -> str:
    """What the scheduled CI job does (examples/ci/benchfleet-schedule.yml): `benchfleet
    schedule --commit` at `now`, then push; HEAD's sha."""
    work = gitops.flux.work
    started = CliRunner().invoke(
        synth_cli, ["--root", str(work), "schedule", "--now", now, "--commit"], env=GIT_IDENTITY
    )
    assert started.exit_code == 0, started.output
    git(work, "push", "-q", "origin", f"HEAD:{BRANCH}")
    return git(work, "rev-parse", "HEAD")


def test_a_nightly_runs_three_times_each_a_new_set_of_results_and_reruns_nothing(
    gitops: GitOps,
) -> None:
    """`scheduling.every: 24h` through Flux on a simulated clock: each night the CI job's
    commit starts a run whose Jobs are new (the run is in their variant ids), gather records
    it, and the next night's commit carries the records (Flux prunes the run's Jobs) with the
    next run. Three nights, three records beside each other, each variant measured once per
    run, and reconciles between them run nothing again."""
    live, repo, flux = gitops.live, gitops.repo, gitops.flux
    workflow = "e2e-nightly"
    repo.write_workflow(workflow, short_cpu_spec(workflow, "[1, 2]") + "scheduling: {every: 24h}\n")
    flux.converge(flux.commit(f"{workflow}: a nightly"))
    assert repo.job_names(workflow) == [], "nothing runs before the first night's commit"
    kubeconfig = service_account_kubeconfig(live)
    jobs = []
    with PodObserver(live, f"workflow={workflow}") as observer:
        for night in NIGHTS:
            sha = _scheduled(gitops, night)
            (job,) = repo.job_names(workflow)
            jobs.append(job)
            succeed_quickly(live, repo, workflow)
            flux.converge(sha)
            gathered = repo.collector(
                "gather", "--workflow", workflow, "--cluster", CLUSTER, "--timeout", "3m",
                kubeconfig=kubeconfig,
            )  # fmt: skip
            assert gathered.exit_code == 0, gathered.output
            for _ in range(2):
                flux.reconcile(kustomizations=True)
                flux.converge(sha)
        recorded = flux.commit(f"{workflow}: results of the third night")
        flux.converge(recorded)
        wait_for(
            "the runs' Jobs to be pruned", lambda: all(_objects_of(live, j) == [] for j in jobs)
        )
        flux.reconcile(kustomizations=True)
        flux.converge(recorded)
    assert len(set(jobs)) == 3
    assert len(observer.seen) == 3 * 2, "each night ran its two variants once, nothing again"
    records = [
        read_record(path) for path in sorted((repo.root / "results" / workflow).rglob("*.json"))
    ]
    assert sorted(r.scheduled_run or 0 for r in records) == [1, 2, 3]
    assert sorted(r.job for r in records) == sorted(jobs)
    ids = [{v.variant.id for v in r.variants if v.variant} for r in records]
    assert all(len(run) == 2 for run in ids) and len(set().union(*ids)) == 6, "no id reused"
    # The runs started on the simulated clock, but their pods ended on the real one.
    checked = repo.collector("check", "--scheduled", kubeconfig=kubeconfig)
    assert checked.exit_code == 0, checked.output
    later = (datetime.now(UTC) + timedelta(days=3)).isoformat()
    late = repo.collector("check", "--scheduled", "--now", later, kubeconfig=kubeconfig)
    assert late.exit_code == 1
    assert "e2e-nightly: MISSING DATA" in late.output and "run 3" in late.output
    trend = repo.collector("report", "--workflow", workflow, "--trend", kubeconfig=kubeconfig)
    assert trend.exit_code == 0, trend.output
    assert "3 runs (run 1 (2026-12-06) to run 3 (2026-12-08))" in trend.output
