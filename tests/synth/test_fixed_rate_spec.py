"""A fixed-rate scenario from the spec to config.json and the variant ids; the closed loop,
the default, leaves both as they were."""

from pathlib import Path

from contract.config import CONFIG_FILE, RunConfig, ScenarioConfig
from contract.dist import read_workload
from contract.layout import workload_file
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
