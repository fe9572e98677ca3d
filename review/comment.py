"""The sections of a pull request's comment, each from the tool that knows its facts."""

import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from contract.layout import RESULTS
from contract.text import shown
from report.markdown import to_markdown
from report.model import build_report
from report.notes import notes_of
from store.history import HistoryError, records_at, records_in, runs_of
from synth.committed import generated_at
from synth.load import load_specs
from synth.plan import format_plan, plan
from synth.problems import SpecProblems
from synth.render import render
from synth.write import generated

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
        proposed = render(load_specs(root))
    except SpecProblems as problems:
        result.blocking.append(f"{len(problems.problems)} problems in the specs")
        result.sections.append("### Specs\n\n" + _fenced([str(p) for p in problems.problems]))
        return result
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
            records, earlier = records_in(root, workflow), records_at(root, base, workflow)
        except HistoryError as error:
            result.blocking.append(str(error))
            continue
        runs, baseline = runs_of(records), runs_of(earlier)
        if runs:
            notes = notes_of(root, workflow, [*records, *earlier], runs)
            report = build_report(runs, baseline=baseline or None, notes=notes)
            result.sections.append(f"### Results: {workflow}\n\n" + to_markdown(report))
    return result
