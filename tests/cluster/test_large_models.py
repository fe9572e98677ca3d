"""Models of real size through the real API server, Job controller and scheduler, as a team
brings them: exported with `benchfleet export`, ResNet-50 pushed to a registry and mounted as an
image volume by the pod executor (pulled by digest as a kubelet pulls), BERT-base downloaded by
the runner from an https server behind the company's CA, whose bundle synth put in a
ConfigMap; gathered, recorded and reported by the collector."""

import shutil
from pathlib import Path
from typing import Any

import pytest

from contract.layout import record_path
from contract.records import read_record
from localrun.loopback_registry import PROGRAM, loopback_registry
from localrun.push_model import push_model
from models.large import BERT, RESNET, LargeModel
from tests.cluster.conftest import CLUSTER, LiveCluster, Repo
from tests.large_models import BASELINE, CA_BUNDLE, WORKFLOW, rss_per_byte, spec
from tests.model_server import Authority, ModelServer, edit_configs

pytestmark = [
    pytest.mark.cluster,
    pytest.mark.large_model,
    pytest.mark.skipif(shutil.which(PROGRAM) is None, reason="needs Debian's docker-registry"),
]


def test_real_sized_models_are_measured_gathered_and_reported(
    live: LiveCluster,
    repo: Repo,
    large_models: dict[str, LargeModel],
    model_server: ModelServer,
    company_ca: Authority,
    collector_kubeconfig: str,
    tmp_path: Path,
) -> None:
    (repo.root / CA_BUNDLE).parent.mkdir()
    shutil.copyfile(company_ca.certificate, repo.root / CA_BUNDLE)
    url = model_server.add(f"{BERT}.pt2", large_models[BERT].path.read_bytes())
    with loopback_registry(tmp_path / "registry") as address:
        (tmp_path / "push").mkdir()
        pushed = push_model(
            large_models[RESNET].path, f"{address}/team", tmp_path / "push", credentials=""
        )
        repo.write_workflow(WORKFLOW, spec(large_models, f"    oci: {pushed.pinned}\n"))
        repo.synth()

        def serve(config: dict[str, Any]) -> None:
            config["models"][BERT]["location"] = url

        edit_configs(repo.workload(WORKFLOW), serve)
        (job,) = repo.job_names(WORKFLOW)
        live.kubectl("apply", "--server-side", "-f", str(repo.workload(WORKFLOW)))
        gathered = repo.collector(
            "gather", "--workflow", WORKFLOW, "--cluster", CLUSTER, "--timeout", "15m",
            kubeconfig=collector_kubeconfig,
        )  # fmt: skip
    assert gathered.exit_code == 0, gathered.output
    record = read_record(record_path(repo.root, WORKFLOW, CLUSTER, job))
    ratios = rss_per_byte(record.variants, large_models)
    print(f"runner peak RSS above {BASELINE}'s, per byte of the model: {ratios}")
    report = repo.collector("report", "--workflow", WORKFLOW, kubeconfig=collector_kubeconfig)
    assert report.exit_code == 0, report.output
    for model in (BASELINE, RESNET, BERT):
        assert model in report.output
    assert len(model_server.requests) == 1, "downloaded once"
