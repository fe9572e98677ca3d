"""`localrun` is an installed command like `benchfleet` and `collector`: --root and --db come
before the subcommand, and `python -m localrun WORKFLOW` still works."""

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from localrun.cli import cli
from tests.conftest import REPO_ROOT


def test_pyproject_installs_localrun_as_a_command() -> None:
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["localrun"] == "localrun.cli:cli"


def test_root_goes_before_the_subcommand(tmp_path: Path) -> None:
    run = CliRunner().invoke(cli, ["--root", str(tmp_path), "run", "no-such-workflow"])
    assert run.exit_code == 1
    assert "no-such-workflow" in run.output
    assert "no such option" not in run.output.lower()


@pytest.mark.slow
def test_python_dash_m_localrun_still_runs_a_workflow_by_name(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "localrun", "no-such-workflow", "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )
    assert run.returncode == 1
    assert "no-such-workflow" in run.stderr
