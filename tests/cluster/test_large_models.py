"""Models of real size through the real API server, Job controller and scheduler, as a team
brings them: exported with `benchfleet export`, ResNet-50 pushed to a registry and mounted as an
image volume by the pod executor (pulled by digest as a kubelet pulls), BERT-base downloaded by
the runner from an https server behind the company's CA, whose bundle synth put in a
ConfigMap; gathered, recorded and reported by the collector. A sweep of precision x
quantization x runtime over ResNet-50, grouped and interleaved, is gathered and its report
answers which configuration is fastest within its gate (tests/large_models.py)."""

import shutil
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from contract.layout import record_path
from contract.records import read_record
from localrun.loopback_registry import PROGRAM, loopback_registry
from localrun.push_model import push_model
from models.large import BERT, RESNET, LargeModel
from tests.cluster.conftest import CLUSTER, LiveCluster, Repo
from tests.large_models import (
    BASELINE,
    CA_BUNDLE,
    SWEEP,
    WORKFLOW,
    check_runtimes_named,
    check_sweep_reports,
    rss_per_byte,
    spec,
    sweep_spec,
)
from tests.model_server import Authority, ModelServer, edit_configs

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.large_model,
    pytest.mark.skipif(shutil.which(PROGRAM) is None, reason="needs Debian's docker-registry"),
]


def _gather(
    workflow: str,
    text: Callable[[str], str],
    live: LiveCluster,
    repo: Repo,
    models: dict[str, LargeModel],
    server: ModelServer,
    company_ca: Authority,
    kubeconfig: str,
    folder: Path,
) -> str:
    """Apply `workflow` (its spec `text` given the oci: line of ResNet-50, pushed to a
    registry; BERT-base served by `server`) to the cluster and gather it; its one Job's
    name."""
    (repo.root / CA_BUNDLE).parent.mkdir()
    shutil.copyfile(company_ca.certificate, repo.root / CA_BUNDLE)
    url = server.add(f"{BERT}.pt2", models[BERT].path.read_bytes())
    with loopback_registry(folder / "registry") as address:
        (folder / "push").mkdir()
        pushed = push_model(models[RESNET].path, f"{address}/team", folder / "push", credentials="")
        repo.write_workflow(workflow, text(f"    oci: {pushed.pinned}\n"))
        repo.synth()

        def serve(config: dict[str, Any]) -> None:
            if BERT in config["models"]:
                config["models"][BERT]["location"] = url

        edit_configs(repo.workload(workflow), serve)
        (job,) = repo.job_names(workflow)
        live.kubectl("apply", "--server-side", "-f", str(repo.workload(workflow)))
        gathered = repo.collector(
            "gather", "--workflow", workflow, "--cluster", CLUSTER, "--timeout", "15m",
            kubeconfig=kubeconfig,
        )  # fmt: skip
    assert gathered.exit_code == 0, gathered.output
    return job


def test_real_sized_models_are_measured_gathered_and_reported(
    live: LiveCluster,
    repo: Repo,
    large_models: dict[str, LargeModel],
    model_server: ModelServer,
    company_ca: Authority,
    collector_kubeconfig: str,
    tmp_path: Path,
) -> None:
    text = partial(spec, large_models)
    job = _gather(
        WORKFLOW, text, live, repo, large_models, model_server, company_ca,
        collector_kubeconfig, tmp_path,
    )  # fmt: skip
    record = read_record(record_path(repo.root, WORKFLOW, CLUSTER, job))
    ratios = rss_per_byte(record.variants, large_models)
    print(f"runner peak RSS above {BASELINE}'s, per byte of the model: {ratios}")
    report = repo.collector("report", "--workflow", WORKFLOW, kubeconfig=collector_kubeconfig)
    assert report.exit_code == 0, report.output
    for model in (BASELINE, RESNET, BERT):
        assert model in report.output
    assert len(model_server.requests) == 1, "downloaded once"


def test_a_sweep_of_every_runtime_over_resnet_50_is_gathered_and_answered(
    live: LiveCluster,
    repo: Repo,
    large_models: dict[str, LargeModel],
    model_server: ModelServer,
    company_ca: Authority,
    collector_kubeconfig: str,
    tmp_path: Path,
) -> None:
    """The sweep of tests/localrun's over ResNet-50 (from a registry), its variants in one
    pod, so that every comparison is paired: what this proves beyond the local sweep is
    the cluster's own part. A Job that
    converts lists `runtime_failed` in its podFailurePolicy, which the real API server admits;
    synth's grouped, interleaved Job runs under the real Job controller and scheduler, and
    each pod's results (more than its termination message holds) are gathered from the API
    server, recorded and reported: each names its runtime, what ran, its conversion time and
    its accuracy, and the report answers which runtime is fastest within the gate. The
    example models' runtimes run in pods started as localrun starts them (the pod executor's
    too), which the local sweep proves; BERT-base comes from the company's server in the
    test above (docs/decisions/tests.md)."""
    text = partial(sweep_spec, large_models, names=(RESNET,))
    job = _gather(
        SWEEP, text, live, repo, large_models, model_server, company_ca,
        collector_kubeconfig, tmp_path,
    )  # fmt: skip
    check_runtimes_named(read_record(record_path(repo.root, SWEEP, CLUSTER, job)).variants)
    check_sweep_reports(
        partial(repo.collector, kubeconfig=collector_kubeconfig),
        tmp_path,
        CLUSTER,
        (RESNET,),
    )
