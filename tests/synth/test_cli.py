"""The benchfleet command: exit codes and output streams."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from synth.cli import cli
from tests.conftest import REPO_ROOT, TEST_DATA
from tests.synth.conftest import WriteSpec


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_validate_accepts_the_examples(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["--root", str(REPO_ROOT), "validate"])
    assert result.exit_code == 0, result.output
    assert "all valid" in result.stdout


def test_validate_prints_problems_to_stderr_and_exits_1(
    runner: CliRunner, spec_repo: Path, write_spec: WriteSpec
) -> None:
    bad = (TEST_DATA / "specs" / "invalid" / "unknown-gpu-type.yaml").read_text(encoding="utf-8")
    write_spec("bad.yaml", bad)
    result = runner.invoke(cli, ["--root", str(spec_repo), "validate"])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "specs/workflows/bad.yaml:11:15: targets[0].gpu_type: unknown device type" in (
        result.stderr
    )
    assert result.stderr.rstrip().endswith("Error: 1 problem in the specs")


def test_validate_changes_nothing(
    runner: CliRunner, spec_repo: Path, write_spec: WriteSpec
) -> None:
    write_spec("ok.yaml", (TEST_DATA / "specs" / "valid-minimal.yaml").read_text("utf-8"))
    before = sorted(p.relative_to(spec_repo) for p in spec_repo.rglob("*"))
    assert runner.invoke(cli, ["--root", str(spec_repo), "validate"]).exit_code == 0
    assert sorted(p.relative_to(spec_repo) for p in spec_repo.rglob("*")) == before


def test_schema_check_fails_on_stale_files(runner: CliRunner, tmp_path: Path) -> None:
    result = runner.invoke(cli, ["--root", str(tmp_path), "schema", "--check"])
    assert result.exit_code == 1
    assert "run `make schema`" in result.stderr
    assert runner.invoke(cli, ["--root", str(tmp_path), "schema"]).exit_code == 0
    assert runner.invoke(cli, ["--root", str(tmp_path), "schema", "--check"]).exit_code == 0


def test_variants_lists_each_variant_with_its_id(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["--root", str(REPO_ROOT), "variants", "cpu-smoke"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = ["cluster", "variant", "target", "model", "precision", "quantization", "batch"]
    assert lines[0].split() == [*header, "runtime"]
    # cpu-smoke runs in both clusters of the fleet, nothing of it is recorded.
    assert lines[-1] == "12 variants in specs/workflows/cpu-smoke.yaml: 12 run, 0 recorded"
    assert all(line.endswith("runs") for line in lines[1:-1])


def test_variants_suggests_a_close_workflow_id(runner: CliRunner) -> None:
    result = runner.invoke(cli, ["--root", str(REPO_ROOT), "variants", "cpu-smoek"])
    assert result.exit_code == 1
    assert "did you mean 'cpu-smoke'?" in result.stderr
