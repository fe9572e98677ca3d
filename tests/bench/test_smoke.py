"""Every bench runs at a tiny size (`--smoke`), so that none breaks unseen: a bench is a
program nothing else runs, and one of them exited 1 for weeks (its stress set's models were
random bytes, which synth rightly refuses). Each runs as `make bench` runs it, in a fresh
interpreter, and its report must come out; its numbers are not judged (they are a loaded
machine's, at sizes that measure nothing). The cluster benches need the local cluster
(`cluster`), the GPU one a CUDA device (`gpu`)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from localrun.loopback_registry import PROGRAM as REGISTRY
from tests.conftest import REPO_ROOT
from tests.lakeserver import Lake

BENCH = REPO_ROOT / "bench"
HELPERS = {"__init__", "timing", "stress_models", "real_results"}
"""The modules of bench/ that are no bench of their own but parts of the others."""
SMOKE_TIMEOUT_S = 900
"""A smoke run takes seconds to a minute on a loaded 2-core machine; a cluster one, with its
control plane's start, a few minutes."""

RUNS = [
    pytest.param("spec_loading", "hostile specs: time to the error", id="spec_loading"),
    pytest.param("synth_speed", "re-synth of 2 workflows after editing one", id="synth_speed"),
    pytest.param("runner_accuracy", "runner vs torch.utils.benchmark Timer", id="runner_accuracy"),
    pytest.param("runner_startup", "load_program + module() of tiny-mlp", id="runner_startup"),
    pytest.param("grouping", "overhead share (wall - timed loops) / wall", id="grouping"),
    pytest.param("accuracy_cost", "accuracy pass share of pod wall time", id="accuracy_cost"),
    pytest.param("quantization", "q / none time", id="quantization"),
    pytest.param("compiled", "inductor / eager, paired", id="compiled"),
    pytest.param("runtimes", "run queue", id="runtimes"),
    pytest.param("pipeline_stages", "chain / model alone", id="pipeline_stages"),
    pytest.param(
        "large_models",
        "(runner - transfer) / load",
        marks=pytest.mark.skipif(
            shutil.which(REGISTRY) is None, reason="needs Debian's docker-registry"
        ),
        id="large_models",
    ),
    pytest.param("collector_gather", "gather / per-Job loop wall time", id="collector_gather"),
    pytest.param("trend_noise", "false alarms over", id="trend_noise"),
    pytest.param("fixed_rate", "issue clock at 100 Hz", id="fixed_rate"),
    pytest.param("policy_control", "deadline one period", id="policy_control"),
    pytest.param("report_scale", "peak MiB", id="report_scale"),
    pytest.param(
        "cluster_gather", "gather / per pod", marks=pytest.mark.cluster, id="cluster_gather"
    ),
    pytest.param(
        "cluster_gather_scale",
        "Listing the scale-6 pods alone",
        marks=pytest.mark.cluster,
        id="cluster_gather_scale",
    ),
    pytest.param(
        "flux_reconcile",
        "a reconcile with nothing changed",
        marks=pytest.mark.cluster,
        id="flux_reconcile",
    ),
    pytest.param("gpu_runner", "A100 target on this GPU", marks=pytest.mark.gpu, id="gpu_runner"),
]


LAKE_RUNS = [
    pytest.param("lake_gather", "lake / logs wall time", id="lake_gather"),
    pytest.param("lake_report", "identical", id="lake_report"),
]
"""The benches that need the lake's server: each gets a fresh prefix of the session's."""


def test_every_bench_has_a_smoke_run() -> None:
    benches = {path.stem for path in BENCH.glob("*.py")} - HELPERS
    assert benches == {run.values[0] for run in RUNS + LAKE_RUNS}


@pytest.mark.slow
@pytest.mark.parametrize(("bench", "reports"), RUNS)
def test_the_bench_runs_at_a_tiny_size(bench: str, reports: str, tmp_path: Path) -> None:
    smoke(bench, reports, tmp_path, {})


@pytest.mark.slow
@pytest.mark.parametrize(("bench", "reports"), LAKE_RUNS)
def test_the_lake_bench_runs_at_a_tiny_size(
    bench: str, reports: str, tmp_path: Path, lake: Lake
) -> None:
    smoke(bench, reports, tmp_path, lake.env())


def smoke(bench: str, reports: str, tmp_path: Path, env: dict[str, str]) -> None:
    """Run `bench --smoke` as `make bench` runs it, with `env` added to the environment."""
    # Run from elsewhere, so that whatever a bench writes where it runs stays out of the
    # checkout (gpu_runner's lines file, say).
    env = {**os.environ, **env, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{bench}", "--smoke"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=SMOKE_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert reports in done.stdout, done.stdout[-4000:]
