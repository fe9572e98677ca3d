"""What a local try shows while a pod runs: from the runner's progress lines, one line
rewritten in place on a terminal, plain lines in a CI log, never quiet there for long."""

import io

from contract.progress import ProgressRecord, progress_line
from localrun.display import PodDisplay


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


NAMES = {2: "tiny-cnn fp32 batch 4", 3: "tiny-cnn bf16 batch 4"}


def _line(phase: str, **fields: float) -> str:
    record = ProgressRecord.model_validate({"variants": [2], "phase": phase, **fields})
    return progress_line(record).rstrip("\n")


def test_a_plain_display_writes_each_phase_and_at_least_every_ten_seconds() -> None:
    stream, clock = io.StringIO(), Clock()
    display = PodDisplay(stream, live=False, clock=clock)
    display.start("  [2/3] index 1", NAMES)
    clock.now += 4
    display.line("2026-01-01 INFO variant 2 (abc): 2 threads, device cpu")
    display.line(_line("load", elapsed_s=0))
    clock.now += 3
    display.tick()
    display.line(_line("measure", elapsed_s=0))
    for _ in range(25):  # a second at a time, a runner's line every 5 s
        clock.now += 1
        display.tick()
        if int(clock.now) % 5 == 0:
            display.line(_line("measure", elapsed_s=clock.now - 107, done=9, left_s=30))
    display.finish("  [2/3] index 1: ok")
    cnn = "tiny-cnn fp32 batch 4"
    assert stream.getvalue().splitlines() == [
        "  [2/3] index 1, 0:00: starting",
        f"  [2/3] index 1, 0:04: load 0:00 ({cnn})",
        f"  [2/3] index 1, 0:07: measure 0:00 ({cnn})",
        # Ten seconds on, from the runner's line of two seconds before.
        f"  [2/3] index 1, 0:17: measure 0:10, 9 iterations, ~0:28 left ({cnn})",
        f"  [2/3] index 1, 0:27: measure 0:20, 9 iterations, ~0:28 left ({cnn})",
        "  [2/3] index 1: ok",
    ]


def test_a_quiet_pod_still_gets_a_line_every_ten_seconds() -> None:
    stream, clock = io.StringIO(), Clock()
    display = PodDisplay(stream, live=False, clock=clock)
    display.start("  [1/1] index 0", NAMES)
    display.line(_line("load", elapsed_s=0))
    for _ in range(30):
        clock.now += 1
        display.tick()
    assert stream.getvalue().splitlines()[1:] == [
        "  [1/1] index 0, 0:00: load 0:00 (tiny-cnn fp32 batch 4)",
        "  [1/1] index 0, 0:10: load 0:10 (tiny-cnn fp32 batch 4)",
        "  [1/1] index 0, 0:20: load 0:20 (tiny-cnn fp32 batch 4)",
        "  [1/1] index 0, 0:30: load 0:30 (tiny-cnn fp32 batch 4)",
    ]


def test_a_live_display_rewrites_one_line_within_the_terminals_width() -> None:
    stream, clock = io.StringIO(), Clock()
    display = PodDisplay(stream, live=True, clock=clock, width=lambda: 40)
    display.start("  [2/3] index 1", NAMES)
    record = ProgressRecord(variants=(2, 3), phase="measure", elapsed_s=0)
    display.line(progress_line(record))
    clock.now += 1
    display.tick()
    display.finish("  [2/3] index 1: ok, ok")
    written = stream.getvalue()
    assert "\n" not in written.removesuffix("  [2/3] index 1: ok, ok\n")
    frames = written.split("\r")[1:-1]
    assert len(frames) == 3 and all(frame.endswith("\x1b[K") for frame in frames)
    assert all(len(frame.removesuffix("\x1b[K")) <= 39 for frame in frames)
    assert display.text().endswith(": measure 0:01 (tiny-cnn fp32 batch 4, tiny-cnn bf16 batch 4)")
    assert written.endswith("\r\x1b[K  [2/3] index 1: ok, ok\n")
