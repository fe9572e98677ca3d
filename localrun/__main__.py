"""`python -m localrun WORKFLOW`: what `localrun run WORKFLOW` does (see localrun.cli), with
--root and --db after the workflow, as `make demo` runs it. `python -m localrun run WORKFLOW`
(or any other of `localrun`'s subcommands) is `localrun` itself, as people type it after
reading the docs; a workflow named like a subcommand is then `python -m localrun run NAME`."""

import sys
from pathlib import Path

import click

from contract.options import database_option, root_option, version_option
from localrun.cli import (
    AGAIN_OPTION,
    CLUSTER_OPTION,
    IMAGE_FILE_OPTION,
    INDEX_OPTION,
    cli,
    run_workflow,
)


@click.command(context_settings={"show_default": True})
@version_option
@click.argument("workflow")
@root_option
@CLUSTER_OPTION
@database_option
@INDEX_OPTION
@AGAIN_OPTION
@IMAGE_FILE_OPTION
def main(
    workflow: str,
    root: Path,
    *,
    cluster: str | None,
    database: Path,
    indexes: tuple[int, ...],
    again: bool,
    image_files: tuple[str, ...],
) -> None:
    """Run WORKFLOW's pods one at a time on this machine, store and report the results;
    reuse what earlier local tries measured unless --again.

    Each pod's results are stored as it ends. Ctrl-C (or SIGTERM) stops the running pod,
    keeps what finished, names what did not run and exits 130 (143).

    Exits 1 when any pod it ran handed over no result or an error result.
    """
    run_workflow(root, database, workflow, cluster, indexes, again=again, given_files=image_files)


def entry(arguments: list[str]) -> click.Command:
    """The command `python -m localrun ARGUMENTS` is: `localrun` where the first word that is
    not an option (nor an option's value) is one of its subcommands, else the one-workflow
    form."""
    taking_values = {
        name
        for parameter in cli.params
        if isinstance(parameter, click.Option) and not parameter.is_flag
        for name in parameter.opts
    }
    words = iter(arguments)
    for word in words:
        if not word.startswith("-"):
            return cli if word in cli.commands else main
        if word in taking_values:
            next(words, None)
    return main


if __name__ == "__main__":
    sys.exit(entry(sys.argv[1:])())
