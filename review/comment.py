"""The sections of a pull request's comment, each from the tool that knows its facts."""

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from collector.history import HistoryError, records_at, records_in, runs_of
from collector.report import build_report
from collector.report_render import to_markdown
from contract.layout import CLUSTERS, DIST, RESULTS
from contract.text import shown
from synth.load import load_specs
from synth.plan import format_plan, plan
from synth.problems import SpecProblems
from synth.render import render
from synth.write import generated, is_generated

_BACKTICKS = re.compile("`+")


@dataclass
class Review:
    """What a reviewer should know, and whether the pull request may merge."""

    sections: list[str] = field(default_factory=list)
    blocking: list[str] = field(default_factory=list)
    """Why it must not merge (invalid specs, a stale or hand-edited dist/)."""

    def markdown(self) -> str:
        verdict = (
            "❌ **do not merge**: " + "; ".join(shown(reason) for reason in self.blocking)
            if self.blocking
            else "✅ specs valid, dist/ is what synth writes"
        )
        return "\n\n".join(["## benchfleet", verdict, *self.sections]) + "\n"


def _fenced(lines: list[str]) -> str:
    """Lines as a code block that none of them can end: they quote file names and what specs
    hold, which a pull request chooses, so each is shown on one line, and the fence is longer
    than any run of backticks in them."""
    shown_lines = [shown(line) for line in lines]
    longest = max((len(run) for line in shown_lines for run in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n" + "\n".join(shown_lines) + f"\n{fence}"


def _git(root: Path, *arguments: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *arguments], capture_output=True, text=True, check=True
    )
    return done.stdout


def generated_at(root: Path, revision: str) -> dict[PurePosixPath, str]:
    """synth's files as git holds them at `revision`: what Flux applies before the merge."""
    listing = _git(root, "ls-tree", "-r", "--name-only", revision, "--", DIST, CLUSTERS)
    files = {}
    for name in listing.splitlines():
        path = PurePosixPath(name)
        text = _git(root, "show", f"{revision}:{name}")
        if is_generated(path, text):
            files[path] = text
    return files


def changed_workflows(root: Path, base: str) -> list[str]:
    """The workflows whose results/ records differ from `base`."""
    done = subprocess.run(
        ["git", "-C", str(root), "diff", "--name-only", base, "--", RESULTS],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return sorted({line.split("/")[1] for line in done.stdout.splitlines() if line.count("/") >= 2})


def review(root: Path, base: str) -> Review:
    """Validate the specs, check dist/ and plan it, and report changed results against `base`."""
    result = Review()
    try:
        specs = load_specs(root)
    except SpecProblems as problems:
        result.blocking.append(f"{len(problems.problems)} problems in the specs")
        result.sections.append("### Specs\n\n" + _fenced([str(p) for p in problems.problems]))
        return result
    proposed = render(specs)
    committed = generated(root)
    stale = sorted(
        str(p) for p in proposed.keys() | committed.keys() if proposed.get(p) != committed.get(p)
    )
    if stale:
        edited = sum(len(cluster.edited) for cluster in plan(committed, proposed, root))
        why = f", {edited} objects edited under their old names" if edited else ""
        result.blocking.append(
            f"dist/ is not what synth writes ({len(stale)} files{why}): run `make synth`"
        )
        result.sections.append("### Stale files\n\n" + _fenced(stale))
    merged = plan(generated_at(root, base), committed, root)
    result.sections.append(
        f"### What merging does to the clusters (dist/ of {base} -> this branch)\n\n"
        + _fenced(list(format_plan(merged)))
    )
    for workflow in changed_workflows(root, base):
        try:
            runs = runs_of(records_in(root, workflow))
            baseline = runs_of(records_at(root, base, workflow))
        except HistoryError as error:
            result.blocking.append(str(error))
            continue
        if runs:
            report = build_report(runs, baseline=baseline or None)
            result.sections.append(f"### Results: {workflow}\n\n" + to_markdown(report))
    return result
