"""The control question through the real control plane: the example policy pipeline at a
fixed rate it holds and at one it cannot, as two workflows synthesized from the example
spec, applied, their pods run by the pod executor (the real runner through localrun),
gathered by the collector and reported. Judged as tests/localrun/test_policy_control.py
judges a local try: the right answer, or undecided with the machine's reason, never a
wrong one."""

import json
from typing import Any

import pytest

from tests.cluster.conftest import LiveCluster, Repo
from tests.conftest import REPO_ROOT
from tests.localrun.policy import MISSED_QUERIES, SHORT_DEADLINE_S
from tests.localrun.test_policy_control import HELD_QUERIES, assert_held_rate, assert_missed_rate

pytestmark = pytest.mark.cluster

EXAMPLE = REPO_ROOT / "specs" / "workflows" / "policy-pipeline.yaml"
MEASURE = "  measure: {min_iterations: 200, min_time: 1s, max_time: 20s}\n"


def policy_workflow(repo: Repo, workflow: str, *, queries: int, deadline_s: float) -> None:
    """The example spec as `workflow`, at 50 Hz for `queries` queries with `deadline_s`."""
    spec = EXAMPLE.read_text(encoding="utf-8")
    assert MEASURE in spec, "the example's measurement changed: update this test"
    spec = spec.replace("id: policy-pipeline", f"id: {workflow}").replace(
        MEASURE,
        f"  measure: {{min_iterations: {queries}, min_time: 0s, max_time: 60s}}\n"
        f"  scenario: fixed_rate\n  rate_hz: 50\n  deadline: {deadline_s}\n",
    )
    repo.write_workflow(workflow, spec)


def gathered_answer(
    live: LiveCluster, repo: Repo, workflow: str, kubeconfig: str
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Apply `workflow`, gather it, and its text report, one control answer and variant."""
    live.kubectl("apply", "--server-side", "-f", str(repo.workload(workflow)))
    gathered = repo.collector(
        "gather", "--workflow", workflow, "--cluster", "us-east", "--timeout", "5m",
        kubeconfig=kubeconfig,
    )  # fmt: skip
    assert gathered.exit_code == 0, gathered.output
    assert "stored 1 variant run " in gathered.output, gathered.output
    text = repo.collector("report", "--workflow", workflow, kubeconfig=kubeconfig)
    assert text.exit_code == 0, text.output
    report = repo.collector(
        "report", "--workflow", workflow, "--format", "json", kubeconfig=kubeconfig
    )
    assert report.exit_code == 0, report.output
    document = json.loads(report.output)
    (answer,) = document["control"]
    return text.output, answer, document["variants"][answer["row"]]


def test_the_policy_is_judged_at_both_rates_through_the_cluster(
    live: LiveCluster, repo: Repo, collector_kubeconfig: str
) -> None:
    policy_workflow(repo, "policy-held", queries=HELD_QUERIES, deadline_s=0.02)
    policy_workflow(repo, "policy-missed", queries=MISSED_QUERIES, deadline_s=SHORT_DEADLINE_S)
    repo.synth()

    assert_held_rate(*gathered_answer(live, repo, "policy-held", collector_kubeconfig))
    assert_missed_rate(*gathered_answer(live, repo, "policy-missed", collector_kubeconfig))
