"""Where a scheduled workflow stands in its schedule: `schedules/<workflow>.json`.

A workflow with `scheduling.every` runs again every period, without synth ever reading a
clock: the same specs and results/ always synthesize the same dist/. `benchfleet schedule`
(a scheduled CI job) is what reads the clock. Where a new period has begun and the last run
is recorded, it writes this file with the run number bumped, synth hashes that number into
the workflow's variant ids (so the run is new and reuses nothing recorded), and the commit
of the file with the new dist/ is what starts the run, saying what will run. The collector
reads the same file to tell a scheduled workflow whose data stopped coming
(`collector check --scheduled`).

Periods are aligned to the Unix epoch, in UTC: with `every: 24h` a period is a UTC day, so a
CI job that wakes every hour starts one run a day, and one that wakes late still starts that
day's.
"""

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from contract.atomic import write_atomically
from contract.bounded import read_at_most
from contract.instant import Instant
from contract.layout import SCHEDULES, schedule_path

MAX_SCHEDULE_BYTES: Final = 4096
"""The file is about 200 bytes; one far larger is not what `benchfleet schedule` wrote."""
MAX_SCHEDULED_RUN: Final = 10**9
"""Runs of one workflow: an hourly run for 100,000 years. Bounded so that the number stays a
short label value and an int64 everywhere it is stored."""
MAX_PERIOD_S: Final = 10 * 366 * 86400
"""A period or deadline of a hand-edited file: ten years, far over the spec's own bound and
far under what would carry a period start past the end of `datetime`."""


class ScheduleState(BaseModel):
    """The run a scheduled workflow is at: the last one `benchfleet schedule` started."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    schema_version: Literal[1] = 1
    workflow: str
    run: int = Field(ge=1, le=MAX_SCHEDULED_RUN)
    """The run's number, from 1; part of each of its variants' ids."""
    period_start: Instant
    """The start of the period the run was started for (UTC, on a period boundary)."""
    every_s: int = Field(ge=1, le=MAX_PERIOD_S)
    """`scheduling.every` when the run started, in seconds: the schedule in force."""
    deadline_s: int = Field(ge=1, le=MAX_PERIOD_S)
    """`scheduling.deadline` when the run started: how long the run may take, the
    missing-data check's default grace."""

    @model_validator(mode="after")
    def _on_a_boundary(self) -> Self:
        if period_of(self.period_start, self.every_s) != self.period_start:
            raise ValueError(
                f"period_start {self.period_start.isoformat()} is not the start of a period of "
                f"{self.every_s} s (periods start at multiples of it from 1970-01-01T00:00Z)"
            )
        return self

    @property
    def next_period(self) -> datetime:
        """When the period after the run's begins: the next run is due from then."""
        return self.period_start + timedelta(seconds=self.every_s)


def period_of(moment: datetime, every_s: int) -> datetime:
    """The start of the period of `every_s` seconds that holds `moment`."""
    seconds = int(moment.timestamp()) // every_s * every_s
    return datetime.fromtimestamp(seconds, UTC)


def scheduled_at(period_start: datetime) -> str:
    """A period's start as Jobs and records say it: UTC, ISO 8601, to the second."""
    return period_start.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def moment_text(moment: datetime) -> str:
    """A period's start (or any instant) for a reader: `2026-12-07 00:00 UTC`."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def period_text(seconds: int) -> str:
    """A period as a spec writes it: `24h`, `90m`, `1h30m`."""
    hours, rest = divmod(seconds, 3600)
    minutes, rest = divmod(rest, 60)
    parts = [(hours, "h"), (minutes, "m"), (rest, "s")]
    return "".join(f"{value}{unit}" for value, unit in parts if value) or "0s"


class ScheduleError(ValueError):
    """A file that cannot be a schedule `benchfleet schedule` wrote, told before parsing."""


def parse_schedule(data: bytes) -> ScheduleState:
    """A schedule from its file's bytes; raises ScheduleError for a file over the bound and
    pydantic.ValidationError (a ValueError too) naming the field that is wrong."""
    if len(data) > MAX_SCHEDULE_BYTES:
        raise ScheduleError(f"it holds more than the {MAX_SCHEDULE_BYTES:,} bytes a schedule may")
    return ScheduleState.model_validate_json(data)


def schedule_text(state: ScheduleState) -> str:
    """The file's bytes: the same state always gives the same text, for clean git diffs."""
    return state.model_dump_json(indent=2) + "\n"


def write_schedule(root: Path, state: ScheduleState) -> Path:
    """Write the state of `state.workflow`, atomically (synth may read it at any moment)."""
    path = schedule_path(root, state.workflow)
    write_atomically(path, schedule_text(state).encode())
    return path


def read_schedule(path: Path) -> ScheduleState:
    """Parse a schedule file, reading no more of it than one may hold; raises OSError,
    ScheduleError or pydantic.ValidationError."""
    with path.open("rb") as file:
        if os.fstat(file.fileno()).st_size > MAX_SCHEDULE_BYTES:
            raise ScheduleError(
                f"it holds more than the {MAX_SCHEDULE_BYTES:,} bytes a schedule may"
            )
        return parse_schedule(read_at_most(file, MAX_SCHEDULE_BYTES))


def schedule_files(root: Path) -> list[Path]:
    """Every file under schedules/, sorted (a stray one is the reader's to refuse)."""
    folder = root / SCHEDULES
    if not folder.is_dir():
        return []
    return sorted(path for path in folder.rglob("*") if not path.is_dir())


def read_schedules(root: Path) -> tuple[list[ScheduleState], list[str]]:
    """Every schedule under schedules/ that reads as one, by workflow, and a line for each
    file that does not (a stray file, a broken one, another workflow's)."""
    states, unreadable = [], []
    for path in schedule_files(root):
        shown = path.relative_to(root).as_posix()
        try:
            state = read_schedule(path)
        except (OSError, ValueError) as error:
            unreadable.append(f"{shown}: not a schedule: {error}")
            continue
        if path.name != f"{state.workflow}.json":
            unreadable.append(f"{shown}: holds the schedule of workflow {state.workflow!r}")
            continue
        states.append(state)
    return sorted(states, key=lambda state: state.workflow), unreadable
