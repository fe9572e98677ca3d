"""`python -m review --base REV`, the script examples/ci/ runs on a pull request, on a
checkout shaped like one: a base commit on main and the pull request's commits on a branch."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from contract.records import JobRecord, StoredVariant, write_record
from localcluster.results import ok_result
from synth.main import synth
from tests.conftest import REPO_ROOT, TEST_DATA, commit, git
from tests.synth.conftest import record_jobs_in

MINIMAL = (TEST_DATA / "specs" / "valid-minimal.yaml").read_text(encoding="utf-8")
SPEC = Path("specs", "workflows", "valid-minimal.yaml")
LAST_WEEK, TODAY = "2026-11-26T06:00:00Z", "2026-12-03T06:00:00Z"


@pytest.fixture
def pull_request(tmp_path: Path) -> Path:
    """main with one synthesized workflow, and a branch `pr` checked out on top of it."""
    (tmp_path / "specs" / "workflows").mkdir(parents=True)
    shutil.copy(TEST_DATA / "specs" / "clusters.yaml", tmp_path / "specs" / "clusters.yaml")
    shutil.copytree(REPO_ROOT / "models" / "examples", tmp_path / "models" / "examples")
    (tmp_path / SPEC).write_text(MINIMAL, encoding="utf-8")
    synth(tmp_path)
    git(tmp_path, "init", "-q", "-b", "main")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "base")
    git(tmp_path, "checkout", "-q", "-b", "pr")
    return tmp_path


def run_review(root: Path, base: str = "main") -> subprocess.CompletedProcess[str]:
    comment = root / "comment.md"
    done = subprocess.run(
        [sys.executable, "-m", "review", "--base", base, "--root", str(root),
         "--output", str(comment)],
        capture_output=True, text=True, check=False, cwd=REPO_ROOT,
    )  # fmt: skip
    done.stdout = comment.read_text(encoding="utf-8") if comment.exists() else ""
    return done


def test_a_synthesized_change_gets_its_plan_and_may_merge(pull_request: Path) -> None:
    (pull_request / SPEC).write_text(
        MINIMAL.replace("gpu_type: cpu", "gpu_type: cpu\n    resources: large")
    )
    synth(pull_request)
    commit(pull_request, "bigger CPU target")
    done = run_review(pull_request)
    assert done.returncode == 0, done.stderr
    assert "✅ specs valid, dist/ is what synth writes" in done.stdout
    assert "~ replace  valid-minimal/cpu" in done.stdout
    assert "1 variant will run: 1 changed (resources)" in done.stdout


def test_a_spec_change_without_synth_must_not_merge(pull_request: Path) -> None:
    (pull_request / SPEC).write_text(
        MINIMAL.replace("gpu_type: cpu", "gpu_type: cpu\n    resources: large")
    )
    commit(pull_request, "forgot make synth")
    done = run_review(pull_request)
    assert done.returncode == 1
    assert "❌ **do not merge**: dist/ is not what synth writes (" in done.stdout
    assert "dist/alpha/workloads/valid-minimal.yaml" in done.stdout


def test_an_invalid_spec_is_listed_with_its_location(pull_request: Path) -> None:
    (pull_request / SPEC).write_text(MINIMAL.replace("gpu_type: cpu", "gpu_type: cpx"))
    commit(pull_request, "typo")
    done = run_review(pull_request)
    assert done.returncode == 1
    assert "1 problems in the specs" in done.stdout
    assert (
        "specs/workflows/valid-minimal.yaml:" in done.stdout
        and "targets[0].gpu_type" in done.stdout
    )


def test_a_spec_value_cannot_end_the_code_block_it_is_quoted_in(pull_request: Path) -> None:
    """A problem quotes the value, which a pull request chooses: with backticks in it, a
    three-backtick fence would end there and the rest render as the comment's own text."""
    value = "'```` [approve](https://example.com) ````'"
    (pull_request / SPEC).write_text(MINIMAL.replace("gpu_type: cpu", f"gpu_type: {value}"))
    commit(pull_request, "backticks")
    lines = run_review(pull_request).stdout.splitlines()
    (quoted,) = [number for number, line in enumerate(lines) if "unknown device type" in line]
    opening, closing = lines[quoted - 1], lines[quoted + 1]
    assert opening == "`````text" and closing == "`````"


def test_new_results_are_reported_against_the_base(pull_request: Path) -> None:
    workload = pull_request / "dist" / "alpha" / "workloads" / "valid-minimal.yaml"
    documents = [d for d in yaml.safe_load_all(workload.read_text()) if d]
    (job,) = [d for d in documents if d["kind"] == "Job"]
    name = job["metadata"]["name"]
    (configmap,) = [
        d for d in documents if d["kind"] == "ConfigMap" and d["metadata"]["name"] == name
    ]
    result = ok_result(json.loads(configmap["data"]["config.json"]), 0, p50_ms=3.5)
    record = JobRecord(
        workflow="valid-minimal", cluster="alpha", namespace=job["metadata"]["namespace"],
        job=name, target="cpu", spec_file=str(SPEC), spec_sha256=None, image=None,
        outcome="complete",
        variants=(StoredVariant(index=0, state="succeeded", explanation="ok", result=result),),
    )  # fmt: skip
    write_record(pull_request, record)
    synth(pull_request)  # the record drops the Job from dist/
    commit(pull_request, "results of valid-minimal")
    done = run_review(pull_request)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "### Results: valid-minimal" in done.stdout
    assert "done, results recorded: leave the cluster" in done.stdout


def test_results_of_a_revision_that_reuses_the_bases_say_so_and_are_not_missing(
    pull_request: Path,
) -> None:
    """main holds revision 1's record; the pull request adds a batch size, and the record of
    the Job that ran only that one: batch 1 is main's own run, neither missing nor +0.0%."""
    record_jobs_in(pull_request, "valid-minimal", seconds=1.0, finished_at=LAST_WEEK)
    synth(pull_request)
    commit(pull_request, "results of revision 1")
    git(pull_request, "branch", "-f", "main")
    (pull_request / SPEC).write_text(
        MINIMAL.replace("targets:", "sweep:\n  matrix: {batch_size: [1, 2]}\ntargets:")
    )
    synth(pull_request)
    record_jobs_in(pull_request, "valid-minimal", seconds=1.0, finished_at=TODAY)
    synth(pull_request)
    commit(pull_request, "batch 2, run and recorded")
    done = run_review(pull_request)
    assert done.returncode == 0, done.stdout + done.stderr
    results = done.stdout.split("### Results: valid-minimal")[1]
    assert "1 new, 0 missing, 1 reused, same run." in results
    assert "+0.0%" not in results


def test_a_base_that_is_no_revision_is_one_line_not_a_traceback(pull_request: Path) -> None:
    done = run_review(pull_request, base="no-such-branch")
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "Error: --base 'no-such-branch': fatal: Not a valid object name no-such-branch"
    ]


@pytest.mark.slow
def test_the_example_ci_workflow_runs_this_script_with_options_it_has() -> None:
    workflow = yaml.safe_load(
        (REPO_ROOT / "examples" / "ci" / "benchfleet-pull-request.yml").read_text()
    )
    runs = [step["run"] for step in workflow["jobs"]["review"]["steps"] if "run" in step]
    (command,) = [run for run in runs if "-m review" in run]
    options = [word for word in command.split() if word.startswith("--")]
    help_text = subprocess.run(
        [sys.executable, "-m", "review", "--help"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO_ROOT,
    ).stdout
    assert options == ["--base", "--output"]
    assert all(option in help_text for option in options)
    assert any("pip install -e '.[synth,collector]'" in run for run in runs)
    # Workflow commands stay off while the review prints, and come back after it, pass or fail.
    lines = [line.strip() for line in command.splitlines()]
    review_line = next(i for i, line in enumerate(lines) if "-m review" in line)
    assert lines.index('echo "::stop-commands::${resume}"') < review_line
    assert lines.index('echo "::${resume}::"') > review_line
    assert lines[-1] == 'exit "${status}"'


@pytest.mark.slow
def test_the_review_needs_no_torch() -> None:
    """The CI job installs no torch (examples/ci/): importing the review must not need it."""
    probe = "import sys, review.comment; print('torch' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )
    assert done.stdout.strip() == "False"
