"""`localrun` is an installed command like `benchfleet` and `collector`: --root and --db come
before the subcommand, and `python -m localrun WORKFLOW` still works."""

import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from localrun.cli import _say_cluster_chosen, _say_short_of_cpus, cli
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


def test_a_pod_asking_more_cpus_than_the_machine_has_is_said_before_it_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """On 2 cores a 4-CPU pod measures with 2 threads: numbers of this machine, not of the
    target's node, which the user should know before waiting for them."""
    four, two = SimpleNamespace(cpu_limit=4.0), SimpleNamespace(cpu_limit=2.0)
    _say_short_of_cpus([two, four], cores=2)  # type: ignore[list-item]
    said = " ".join(capsys.readouterr().err.split())
    assert "the pods' CPU limit is 4 CPUs and this machine gives them 2 cores" in said
    assert "they measure with 2 threads where a node of the target runs 4" in said
    _say_short_of_cpus([two, SimpleNamespace(cpu_limit=None)], cores=2)  # type: ignore[list-item]
    assert capsys.readouterr().err == ""


def test_a_try_of_a_workflow_in_several_clusters_names_the_one_it_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for cluster in ("eu-west", "us-east"):
        folder = tmp_path / "dist" / cluster / "workloads"
        folder.mkdir(parents=True)
        (folder / "sweep.yaml").touch()
    chosen = tmp_path / "dist" / "eu-west" / "workloads" / "sweep.yaml"
    _say_cluster_chosen(tmp_path, "sweep", chosen)
    assert capsys.readouterr().err == (
        "sweep runs in 2 clusters (eu-west, us-east): trying eu-west's Jobs "
        "(--cluster picks another)\n"
    )
    (tmp_path / "dist" / "us-east" / "workloads" / "sweep.yaml").unlink()
    _say_cluster_chosen(tmp_path, "sweep", chosen)
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_python_dash_m_localrun_takes_the_run_subcommand_as_the_docs_spell_it(
    tmp_path: Path,
) -> None:
    """`localrun run WORKFLOW` in the docs, typed as `python -m localrun run WORKFLOW`, runs
    WORKFLOW rather than looking for a workflow named "run"."""
    run = subprocess.run(
        [sys.executable, "-m", "localrun", "--root", str(tmp_path), "no-such-workflow"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )
    assert run.returncode == 1 and "no-such-workflow" in run.stderr
    run = subprocess.run(
        [sys.executable, "-m", "localrun", "run", "no-such-workflow", "--root", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )
    assert run.returncode == 2 and "no such option" in run.stderr.lower()
    run = subprocess.run(
        [sys.executable, "-m", "localrun", "--root", str(tmp_path), "run", "no-such-workflow"],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        check=False,
    )
    assert run.returncode == 1
    assert "no-such-workflow" in run.stderr and "'run'" not in run.stderr
