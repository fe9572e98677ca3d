"""A ResNet-50 sweep through localrun, stopped with Ctrl-C and started again, as a team's first
afternoon with a real model goes: `python -m localrun` as its own process, the model given as
its `image_path` file, three runtimes in one pod one after another. Stopped while the model
loads, then while AOTInductor's C++ compiler runs, then while ONNX Runtime measures: each
time every variant that finished is stored, the runner and every process it started (the
compiler included) are gone, the scratch folder is empty, and the next try runs only what
did not finish. While it runs, a plain progress line comes at least every ten seconds, a
compile's included."""

import re
import time
from itertools import pairwise
from pathlib import Path

import pytest

from localrun.display import PLAIN_INTERVAL_S
from models.large import RESNET, LargeModel
from store.database import open_store
from synth.main import synth
from tests.conftest import REPO_ROOT
from tests.large_models import resources
from tests.localrun.conftest import DATABASE
from tests.localrun.tried import Try, command_line, left_in, local_try, pod_clocks, processes

pytestmark = [pytest.mark.large_model, pytest.mark.slow]

WORKFLOW = "resnet-runtimes"
IMAGE_PATH = "/opt/models/resnet50.pt2"
RUNTIMES = ("eager", "aotinductor", "onnxruntime")
COMPILERS = ("cc1plus", "g++", "c++")
LATE_S = 5.0
"""How much later than PLAIN_INTERVAL_S a line may come on a loaded machine: the display
ticks every second, and a busy host may wake it late."""


def _spec(model: LargeModel) -> str:
    (sha256,) = re.findall(r"sha256: ([0-9a-f]{64})", model.entry)
    return f"""\
id: {WORKFLOW}
description: which runtime serves ResNet-50 on a CPU, tried here first
owner: ml-platform@example.com
clusters: [us-east]
models:
  - name: {RESNET}
    image_path: {IMAGE_PATH}
    sha256: {sha256}
    inputs: [{{shape: [3, 224, 224]}}]
benchmark:
  batch_size: 1
  warmup: {{min_iterations: 1, min_time: 0s}}
  measure: {{min_iterations: 3, min_time: 3s, max_time: 30s}}
targets:
  - gpu_type: cpu
    resources: {resources("4Gi")}
sweep:
  matrix:
    runtime: [{", ".join(RUNTIMES)}]
scheduling:
  variants_per_pod: {len(RUNTIMES)}
"""


def _name(runtime: str) -> str:
    return f"{RESNET} fp32 batch 1" + ("" if runtime == "eager" else f" {runtime}")


def _phase(tried: Try, phase: str, runtime: str) -> None:
    tried.wait_for(lambda line: f": {phase} " in line and line.endswith(f"({_name(runtime)})\n"))


def _compiling(runner: int) -> bool:
    """Whether a C++ compiler runs among the processes of `runner`'s group."""
    return any(
        group == runner and command_line(pid).split(" ")[0].endswith(COMPILERS)
        for pid, (_, group) in processes().items()
    )


def _stopped_cleanly(tried: Try, runner: int, scratch: Path, code: int) -> str:
    """What the try said, once it is checked to have stopped as Ctrl-C asks: exit 130, no
    process of its runner's group, none naming its scratch folder, the folder empty."""
    output = tried.rest()
    assert code == 130, output
    assert left_in(runner) == [], "its group is gone"
    assert not [pid for pid in processes() if str(scratch) in command_line(pid)], output
    assert list(scratch.iterdir()) == []
    return output


def test_a_resnet_50_sweep_stopped_anywhere_keeps_what_finished_and_runs_the_rest_later(
    large_models: dict[str, LargeModel], tmp_path: Path
) -> None:
    root = tmp_path / "repo"
    (root / "specs" / "workflows").mkdir(parents=True)
    (root / "specs" / "clusters.yaml").write_text(
        (REPO_ROOT / "specs" / "clusters.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (root / "specs" / "workflows" / f"{WORKFLOW}.yaml").write_text(
        _spec(large_models[RESNET]), encoding="utf-8"
    )
    synth(root)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    arguments = (
        WORKFLOW, "--root", str(root), "--image-file", f"{IMAGE_PATH}={large_models[RESNET].path}",
    )  # fmt: skip

    def stored_runtimes() -> list[str]:
        if not (root / DATABASE).exists():
            return []
        with open_store(root / DATABASE) as store:
            ran = [run.variant.variant for run in store.runs(WORKFLOW)]
        return sorted((str(ref.runtime) for ref in ran if ref), key=RUNTIMES.index)

    # While the model loads: nothing has finished, nothing is stored.
    with local_try(arguments, scratch, tmp_path / "stdout") as tried:
        _phase(tried, "load", "eager")
        runner = tried.runner()
        output = _stopped_cleanly(tried, runner, scratch, tried.stop())
    assert "stored the 0 variants that finished; 3 variants did not run" in output
    assert stored_runtimes() == []

    # While AOTInductor's compiler runs: eager has finished and is stored.
    with local_try(arguments, scratch, tmp_path / "stdout") as tried:
        _phase(tried, "compile", "aotinductor")
        runner = tried.runner()
        while not _compiling(runner):
            assert tried.process.poll() is None, tried.rest()
            time.sleep(0.05)
        output = _stopped_cleanly(tried, runner, scratch, tried.stop())
    assert stored_runtimes() == ["eager"]
    assert "stored the 1 variant that finished; 2 variants did not run" in output
    assert f"  not run: index 0: {_name('aotinductor')}" in output

    # Started again: eager is reused; stopped while ONNX Runtime measures, after AOTInductor
    # compiled and measured, its compile shown on the way.
    with local_try(arguments, scratch, tmp_path / "stdout") as tried:
        _phase(tried, "measure", "onnxruntime")
        runner = tried.runner()
        output = _stopped_cleanly(tried, runner, scratch, tried.stop())
    assert stored_runtimes() == ["eager", "aotinductor"]
    assert "stored the 1 variant that finished; 1 variant did not run" in output
    assert f"  not run: index 0: {_name('onnxruntime')}" in output
    assert f"({_name('eager')})" not in output, "what was stored is not run again"
    clocks = pod_clocks(tried.seen)
    gaps = [later - earlier for earlier, later in pairwise(clocks)]
    assert max(gaps) <= PLAIN_INTERVAL_S + LATE_S, tried.seen
    report = (tmp_path / "stdout").read_text(encoding="utf-8")
    assert f"benchfleet report: {WORKFLOW}" in report, "what was stored is reported"
