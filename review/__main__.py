"""`python -m review --base REV`: the pull request's comment, and exit 1 if it must not merge."""

from pathlib import Path

import click

from review.comment import review
from synth.committed import GitError


@click.command(context_settings={"show_default": True})
@click.option("--base", required=True, help="The revision the pull request merges into.")
@click.option(
    "--root", type=click.Path(exists=True, file_okay=False, path_type=Path), default=Path(".")
)
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), help="Write here.")
def main(base: str, root: Path, output: Path | None) -> None:
    """Write a pull request's benchfleet comment: specs, dist/, the plan, changed results."""
    try:
        result = review(root, base)
    except GitError as error:
        raise click.ClickException(f"--base {base!r}: {error}") from None
    text = result.markdown()
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
    if result.blocking:
        raise SystemExit(1)


main()
