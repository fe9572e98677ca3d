"""Progress is a bar redrawn in place on a terminal and short plain lines in a CI log."""

import io

from collector.progress import Progress

COUNTS = {"pending": 1, "running": 2, "succeeded": 3, "failed": 1, "preempted": 0}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_plain_output_prints_a_line_per_change_and_repeats_rarely() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = Progress(stream, total=7, live=False, clock=clock)
    progress.update(COUNTS)
    progress.update(COUNTS)
    clock.now = 11.0
    progress.update(COUNTS)
    progress.update({**COUNTS, "running": 1, "succeeded": 4})
    lines = stream.getvalue().splitlines()
    assert lines[0] == "4/7 done  pending 1  running 2  succeeded 3  failed 1  preempted 0"
    assert len(lines) == 3 and lines[2].startswith("5/7 done")


def test_a_terminal_gets_one_line_redrawn_in_place() -> None:
    stream = io.StringIO()
    progress = Progress(stream, total=8, live=True, clock=Clock())
    progress.update(COUNTS)
    progress.finish()
    text = stream.getvalue()
    assert text.startswith("\r[" + "#" * 15 + "." * 15 + "] 4/8 done")
    assert text.endswith("\x1b[K\n") and text.count("\n") == 1
