"""While gather waits, it shows where the running pods are from the progress line at the end
of their logs, read a few pods at a time within a budget, and a log that cannot be read never
fails it."""

import io
import threading
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path

from click.testing import CliRunner

from benchfleet.collector import cli
from collector.gather import Gatherer, GatherOptions, GatherOutcome
from collector.kube import KubeClient
from collector.pods import RUNNER
from collector.progress import Progress
from collector.running import ROUND_S, RunningProgress, RunningView, newest_progress
from collector.running import reads_per_round as budget
from collector.workload import expected_from
from contract.progress import ProgressRecord, progress_line
from standin import objects
from standin.api import FakeApiServer
from store.database import open_store
from tests.collector.gathering import NAMESPACE, Collect, Obj, kubeconfig, requests

WAIT_S = 30.0
"""The longest a test waits for a thread to get somewhere: never reached unless it is stuck."""


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _line(phase: str, **fields: float) -> str:
    record = ProgressRecord.model_validate({"variants": [0], "phase": phase, **fields})
    return progress_line(record)


def _tail_reads(api: FakeApiServer) -> list[str]:
    """The pods whose log's end was asked for (the progress reads, not a result's log)."""
    return [
        r.path.split("/")[-2]
        for r in api.requests
        if r.path.endswith("/log") and "limitBytes" in r.query
    ]


def _until(done: Callable[[], bool]) -> None:
    give_up = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < give_up, "stuck"
        time.sleep(0.01)


def test_gather_shows_where_a_running_pod_is_from_the_end_of_its_log(
    api: FakeApiServer, repo: Path, job: Obj
) -> None:
    running = objects.running_pod(job, 0)
    name = running["metadata"]["name"]
    api.add("pods", running)
    for index in range(1, 6):
        api.add("pods", objects.succeeded_pod(job, index))
    api.add("jobs", objects.job_status(job, active=1, completed=range(1, 6)))
    # stdout and stderr together, as a container's log holds them.
    log = "INFO variant 0: 2 threads\n" + _line("warmup", elapsed_s=3, done=40)
    log += _line("measure", elapsed_s=10, done=1200, left_s=50) + "INFO still measuring\n"
    api.set_log(NAMESPACE, name, RUNNER, log)
    clock, shown = Clock(), io.StringIO()
    progress = Progress(shown, total=6, live=True, clock=clock, width=lambda: 500)
    options = GatherOptions(timeout_s=60, batch_wait_s=0.02, progress=True)
    outcome: list[GatherOutcome] = []

    def gather() -> None:
        with open_store(repo / "results.sqlite") as store:
            expected = [expected_from("us-east", job)]
            client = KubeClient(api.client())
            gatherer = Gatherer(
                client, store, repo, expected, options=options, on_progress=progress.update
            )
            outcome.append(gatherer.run(clock))

    thread = threading.Thread(target=gather)
    thread.start()
    _until(lambda: "measure" in shown.getvalue())
    clock.now += 11  # the clocks move on from what the read said
    _until(lambda: "~0:39 left" in shown.getvalue())
    clock.now += 60
    thread.join(WAIT_S)
    drawn = [text.removesuffix("\x1b[K") for text in shown.getvalue().split("\r") if text]
    counts = " | running 1  succeeded 5"
    assert drawn[0].endswith(f"5/6 done | 1 pod not read yet{counts}")
    where = f"| measure 1; slowest: measure {{}}, 1200 iterations, ~{{}} left (pod {name}){counts}"
    assert drawn[1].endswith(where.format("0:10", "0:50"))
    assert drawn[-2].endswith(where.format("0:21", "0:39"))
    assert outcome[0].stored_new == 5
    # A round at the start, and at most one each time the clock moved past ROUND_S.
    assert set(_tail_reads(api)) == {name} and len(_tail_reads(api)) <= 3


def _read_in(sampler: RunningProgress, pods: list[str], count: int) -> bool:
    return sampler.follow(pods).phases.total() == count


def test_a_thousand_running_pods_cost_a_few_log_reads_per_round(api: FakeApiServer) -> None:
    pods = [f"bench-{i:04d}" for i in range(1000)]
    for number, pod in enumerate(pods):
        phase = "warmup" if number % 4 else "measure"
        api.set_log(NAMESPACE, pod, RUNNER, _line(phase, elapsed_s=1, left_s=number))
    clock = Clock()
    sampler = RunningProgress(KubeClient(api.client()), NAMESPACE, clock)
    try:
        _until(lambda: sampler.follow(pods).phases.total() == budget(1000))
        for _ in range(50):  # the clock stands still: no round is due, however often asked
            time.sleep(0.01)
            sampler.follow(pods)
        assert len(_tail_reads(api)) == budget(1000)
        for second in range(1, 60):
            clock.now += 1
            # Each round's reads end before the clock moves on, so every due round starts;
            # a pod read twice and the count is never reached.
            _until(partial(_read_in, sampler, pods, budget(1000) * (second // int(ROUND_S) + 1)))
        view = sampler.follow(pods)
    finally:
        sampler.close()
    read = _tail_reads(api)
    # Sixty seconds at one round per ROUND_S, each of 16 reads: 192 of the 1,000 pods.
    assert budget(1000) == 16 and len(read) == 16 * 12
    assert sorted(read) == pods[: len(read)], "round-robin: the pods never read come first"
    assert view.running == 1000 and view.phases == Counter(measure=48, warmup=144)
    assert view.slowest is not None and view.slowest[0] == "bench-0191"


def test_the_newest_progress_line_is_found_among_the_other_lines_of_a_log() -> None:
    log = _line("warmup", elapsed_s=1) + _line("measure", elapsed_s=2, left_s=9)
    log += "BENCH_RESULT {}\nTraceback: not a progress line\n"
    assert newest_progress(log) == ProgressRecord(
        variants=(0,), phase="measure", elapsed_s=2, left_s=9
    )
    # The server cut the tail's end mid-line: the whole line before it counts.
    assert newest_progress(log + _line("measure", elapsed_s=7)[:30]) is not None
    assert newest_progress("INFO starting\n") is None


def test_a_plain_line_comes_as_the_counts_change_and_a_live_one_as_the_clocks_move() -> None:
    counts = {"running": 2, "succeeded": 1}
    view = RunningView(2, Counter({"measure": 1}), ("p-1", "measure 0:10, ~0:50 left"))
    later = RunningView(2, Counter({"measure": 1}), ("p-1", "measure 0:11, ~0:49 left"))
    for live, lines in ((False, 1), (True, 2)):
        shown, clock = io.StringIO(), Clock()
        progress = Progress(shown, total=3, live=live, clock=clock, width=lambda: 80)
        progress.update(counts, view)
        clock.now += 1
        progress.update(counts, later)
        text = shown.getvalue()
        assert text.count("| measure 1, 1 pod not read yet; slow") == lines
        if live:
            # Cut to the terminal's width, what the pods do before the counts.
            assert all(len(drawn) <= 79 + len("\x1b[K") for drawn in text.split("\r"))
        else:
            assert text.endswith("; slowest: measure 0:10, ~0:50 left (pod p-1)\n")


def test_no_progress_reads_no_running_pods_log(
    collector: Collect, api: FakeApiServer, job: Obj
) -> None:
    api.add("pods", objects.running_pod(job, 0))
    api.add("jobs", objects.job_status(job, active=1))
    quiet = collector("gather", "--timeout", "2s", "--no-progress")
    assert quiet.exit_code == 1 and "NOT FINISHED" in quiet.stdout
    assert "GET log" not in requests(api) and "done" not in quiet.stderr
    shown = collector("gather", "--timeout", "2s")
    assert "0/6 done" in shown.stderr and "| 1 pod not read yet" in shown.stderr
    assert requests(api)["GET log"] >= 1


def test_a_failing_log_endpoint_costs_one_debug_line_and_fails_nothing(
    api: FakeApiServer, repo: Path, job: Obj
) -> None:
    api.add("pods", objects.running_pod(job, 0))
    for index in range(1, 6):
        api.add("pods", objects.succeeded_pod(job, index))
    api.add("jobs", objects.job_status(job, active=1, completed=range(1, 6)))
    api.fail_next(10**6, 500, path_contains="/log")
    run = CliRunner().invoke(
        cli,
        ["--root", str(repo), "-v", "gather", "--workflow", "cpu-smoke", "--timeout", "2s"],
        env={"BENCHFLEET_K8S_KUBECONFIG": kubeconfig(api.url)},
    )
    assert run.exit_code == 1 and "5 of 6 variants finished" in run.stdout
    assert "Traceback" not in run.output
    reads = requests(api)["GET log"]
    # Never retried: one request, and one debug line, per round.
    assert 1 <= reads <= 2 and run.stderr.count("DEBUG no progress from pod") == reads
    assert "| 1 pod not read yet" in run.stderr
