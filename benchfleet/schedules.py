"""Which workflows the specs schedule, for `collector check --scheduled`: a scheduled workflow
whose schedules/<workflow>.json is missing (no run ever started, or the file deleted) has
nothing else to say it is scheduled, and must not pass the check in silence."""

from pathlib import Path

import click

from contract.layout import FLEET_FILE
from synth.load import load_specs
from synth.problems import SpecProblems


def read_scheduled(root: Path) -> dict[str, int] | None:
    """Each workflow under `root` whose spec has `scheduling.every`, with it in seconds; {}
    where there are no specs to read (no fleet file), None where they cannot be read, each
    problem said on stderr."""
    if not (root / FLEET_FILE).exists():
        return {}
    try:
        specs = load_specs(root)
    except SpecProblems as problems:
        click.echo(
            "warning: the specs cannot be read, so which workflows are scheduled is unknown:",
            err=True,
        )
        for problem in problems.problems:
            click.echo(str(problem), err=True)
        return None
    return {
        loaded.workflow.id: int(every)
        for loaded in specs.workflows
        if (every := loaded.workflow.scheduling.every) is not None
    }
