"""A local try stopped with Ctrl-C, as a person stops one: `python -m localrun` as its own
process, SIGINT while its second pod measures. What finished is stored, the pod's runner and
everything it started are gone, its scratch is removed, and it says what did not run."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from contract.config import RunConfig
from contract.dist import read_workload
from tests.localrun.conftest import QUICK_PHASE, SMOKE, EditConfig, stored
from tests.localrun.tried import left_in, local_try

MEASURE = {"min_iterations": 3, "min_time_s": 3.0, "max_iterations": 1_000_000, "max_time_s": 30}
"""Long enough a window to land a signal in, short enough to cost little."""


def _three_pods(config: dict[str, Any]) -> None:
    config["warmup"], config["measure"] = QUICK_PHASE, MEASURE
    config["groups"] = [[0, 1], [2, 3], [4, 5]]


@pytest.mark.slow
def test_ctrl_c_stores_what_finished_and_leaves_no_process_or_scratch(
    make_root: Callable[[EditConfig], Path], tmp_path: Path
) -> None:
    root = make_root(_three_pods)
    workload = root / "dist" / "us-east" / "workloads" / SMOKE.name
    workload.write_text(
        workload.read_text(encoding="utf-8").replace("completions: 6", "completions: 3")
    )
    (config_map,) = [c for c in read_workload(workload).configmaps.values() if "data" in c]
    variants = RunConfig.model_validate_json(config_map["data"]["config.json"]).variants
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    arguments = ("cpu-smoke", "--root", str(root), "--again")
    with local_try(arguments, scratch, tmp_path / "stdout") as tried:
        tried.wait_for(lambda line: line.startswith("  [1/3] index 0: "))
        assert [state for _, _, state, _ in stored(root)] == ["succeeded"] * 2, (
            "the first pod is stored as it ends"
        )
        # The second pod has measured variant 2 and is measuring variant 3.
        third = variants[3].describe()
        tried.wait_for(lambda line: ": measure " in line and f"({third})" in line)
        runner = tried.runner()
        code = tried.stop()
    output = tried.rest()
    assert code == 130, output
    assert [(index, state) for _, index, state, _ in stored(root)] == [
        (0, "succeeded"),
        (1, "succeeded"),
        (2, "succeeded"),
    ], "the stopped pod's finished variant is stored; the one it was measuring is not"
    assert left_in(runner) == [], "its group is gone"
    assert list(scratch.iterdir()) == []
    assert "stopped by SIGINT: stored the 3 variants that finished; 3 variants did not run" in (
        output
    )
    for index, variant in ((1, variants[3]), (2, variants[4]), (2, variants[5])):
        assert f"  not run: index {index}: {variant.describe()}" in output
    report = (tmp_path / "stdout").read_text(encoding="utf-8")
    assert "benchfleet report: cpu-smoke" in report, "what was stored is reported"
