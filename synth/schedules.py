"""Reading schedules/: the run each scheduled workflow is at (contract.schedule).

A schedule file is committed like a spec, so a pull request can put anything there: each is
read like a record, a regular file inside the repository, bounded in size, and one that is
not a scheduled workflow's state is a located problem, never silence. A scheduled workflow
with no file yet waits for its first run: nothing of it runs until `benchfleet schedule`
starts run 1.
"""

from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from contract.layout import SCHEDULES, schedule_path
from contract.schedule import MAX_SCHEDULE_BYTES, ScheduleError, ScheduleState, parse_schedule
from contract.schedule import schedule_files as files_under_schedules
from synth.problems import Problem, unreadable
from synth.repo_files import RepoFileError, read_inside
from synth.spec import Workflow

_WRITTEN_BY = "schedules are written by `benchfleet schedule`"
_RESTORE = f"{_WRITTEN_BY}; restore this one from git"


def read_schedules(
    root: Path, workflows: Sequence[Workflow], problems: list[Problem], *, every_file: bool
) -> dict[str, ScheduleState]:
    """The state of each scheduled workflow of `workflows` that has one, by id. Each file
    that cannot be read as its workflow's state is a problem in `problems`; with
    `every_file`, so is each file under schedules/ that belongs to no scheduled workflow
    (when only some spec files are validated, the others' files are not judged)."""
    scheduled = {w.id for w in workflows if w.scheduling.every is not None}
    known = {w.id for w in workflows}
    states = {}
    for workflow in sorted(scheduled):
        if not schedule_path(root, workflow).exists():
            continue
        relative = schedule_path(Path(), workflow).as_posix()
        try:
            state = parse_schedule(read_inside(root, relative, MAX_SCHEDULE_BYTES))
        except (RepoFileError, ScheduleError, ValidationError) as error:
            problems.append(unreadable(relative, error, "a schedule", _RESTORE))
            continue
        if state.workflow != workflow:
            problems.append(
                Problem(
                    relative,
                    1,
                    1,
                    "workflow",
                    f"the state of workflow {state.workflow!r} in the file of {workflow!r}",
                    _RESTORE,
                )
            )
            continue
        states[workflow] = state
    if every_file:
        problems.extend(_strays(root, scheduled, known))
    return states


def _strays(root: Path, scheduled: set[str], known: set[str]) -> list[Problem]:
    strays = []
    for path in files_under_schedules(root):
        relative = path.relative_to(root).as_posix()
        workflow = path.stem if path.suffix == ".json" and path.parent == root / SCHEDULES else None
        if workflow in scheduled:
            continue
        if workflow in known:
            message = f"workflow {workflow!r} is not scheduled (it has no scheduling.every)"
            hint = "delete this file, or give the workflow scheduling.every again"
        else:
            message = "no scheduled workflow has this file's name (schedules/<workflow id>.json)"
            hint = f"{_WRITTEN_BY}; delete this file"
        strays.append(Problem(relative, 1, 1, "", message, hint))
    return strays
