"""A fixed-rate scenario from the spec to config.json and the variant ids; the closed loop,
the default, leaves both as they were."""

from pathlib import Path

import pytest
from pydantic import ValidationError

from contract.config import CONFIG_FILE, RunConfig, ScenarioConfig
from contract.dist import read_workload
from contract.layout import DIST, workload_file
from runner.fixed_rate import INJECT_ENV
from synth.main import synth
from tests.synth.conftest import WriteSpec
from tests.synth.test_grouping import SPEC, _job

FIXED = SPEC.replace(
    "  measure: {min_iterations: 50, min_time: 2s, max_time: 20s}\n",
    "  measure: {min_iterations: 50, min_time: 2s, max_time: 20s}\n"
    "  scenario: fixed_rate\n  rate_hz: 40\n",
)


def _config_text(root: Path) -> str:
    workload = read_workload(root / workload_file("alpha", "grouped"))
    (job,) = workload.jobs
    return str(workload.configmaps[job["metadata"]["name"]]["data"][CONFIG_FILE])


def test_the_closed_loop_writes_no_scenario(spec_repo: Path, write_spec: WriteSpec) -> None:
    write_spec("grouped.yaml", SPEC)
    synth(spec_repo)
    assert '"scenario"' not in _config_text(spec_repo)
    assert _job(spec_repo)[1].scenario is None


def test_a_fixed_rate_reaches_config_json_with_its_default_deadline_and_new_ids(
    spec_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec("grouped.yaml", SPEC)
    synth(spec_repo)
    closed: RunConfig = _job(spec_repo)[1]
    write_spec("grouped.yaml", FIXED)
    synth(spec_repo)
    fixed = _job(spec_repo)[1]
    assert fixed.scenario == ScenarioConfig(rate_hz=40.0, deadline_s=0.025)
    assert {v.id for v in closed.variants}.isdisjoint(v.id for v in fixed.variants)
    write_spec("grouped.yaml", FIXED.replace("rate_hz: 40\n", "rate_hz: 40\n  deadline: 60ms\n"))
    synth(spec_repo)
    assert _job(spec_repo)[1].scenario == ScenarioConfig(rate_hz=40.0, deadline_s=0.06)


def test_the_short_tail_is_measure_tail(spec_repo: Path, write_spec: WriteSpec) -> None:
    write_spec("grouped.yaml", SPEC.replace("  measure:", "  tail: p99.9\n  measure:"))
    synth(spec_repo)
    assert _job(spec_repo)[1].measure.tail == "p99.9"


def test_synth_never_sets_the_runners_test_hook(spec_repo: Path, write_spec: WriteSpec) -> None:
    write_spec("grouped.yaml", FIXED)
    synth(spec_repo)
    written = [path for path in (spec_repo / DIST).rglob("*") if path.is_file()]
    assert written
    assert not any(INJECT_ENV in path.read_text(encoding="utf-8") for path in written)


def test_config_json_refuses_interleaved_rounds_at_a_fixed_rate() -> None:
    config = _minimal(interleave=True, scenario={"rate_hz": 10, "deadline_s": 0.1})
    with pytest.raises(ValidationError, match="interleave"):
        RunConfig.model_validate(config)
    assert RunConfig.model_validate({**config, "interleave": False}).scenario is not None


def _minimal(**fields: object) -> dict[str, object]:
    phase = {"min_iterations": 1, "min_time_s": 0, "max_iterations": 1, "max_time_s": 1}
    return {
        "workflow": "w",
        "target": "cpu",
        "device_type": "cpu",
        "gpus": 0,
        "warmup": phase,
        "measure": phase,
        "models": {},
        "variants": [
            {
                "index": 0,
                "id": "v000000000000",
                "model": "m",
                "precision": "fp32",
                "quantization": "none",
                "batch_size": 1,
                "inputs": [],
            }
        ],
        "groups": [[0]],
        **fields,
    }
