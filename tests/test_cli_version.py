"""Every command group prints the installed benchfleet version with --version."""

from importlib.metadata import version

import click
import pytest
from click.testing import CliRunner

from benchfleet.cli import cli as benchfleet
from benchfleet.collector import cli as collector
from localrun.__main__ import main as localrun_module
from localrun.cli import cli as localrun


@pytest.mark.parametrize("command", [benchfleet, collector, localrun, localrun_module])
def test_version_prints_the_installed_version(command: click.Command) -> None:
    run = CliRunner().invoke(command, ["--version"])
    assert run.exit_code == 0, run.output
    assert run.output == f"benchfleet {version('benchfleet')}\n"
