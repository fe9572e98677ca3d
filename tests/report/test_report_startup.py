"""The report's start-up tables: each phase where it is paid (a pod's start per pod, a model's
load per model and pod, the rest per variant), the share of the pods' wall time that was
measurement, and the runner's peak memory against each model's file."""

import json
from dataclasses import replace

import pytest
from pydantic import ValidationError

from contract.records import JobIdentity, PodStart, StoredVariant
from contract.result import Memory, ModelLoad, OkResult, PhaseTiming, Timings
from report.analysis import analyse
from report.html import to_html
from report.json import to_json
from report.layout import lay_out
from report.markdown import to_markdown
from report.model import build_report
from report.startup import PhaseTime, Startup
from report.text import to_text
from store.database import StoredRun
from tests.collector.stored import latency

MIB = 1 << 20
JOB = JobIdentity(
    workflow="sizes", cluster="us-east", namespace="benchfleet", job="sizes-cpu-0a1b2c3d4e"
)


def _timings(
    *, model: ModelLoad | None, measure_s: float, process_s: float, loop_at: float
) -> Timings:
    return Timings(
        load_s=(model.fetch_s + model.load_s if model else 0.0) + 0.5,
        prepare_s=0.25,
        first_iteration_ms=300.0,
        warmup=PhaseTiming(iterations=10, seconds=1.0, stopped_by="minimums"),
        measure=PhaseTiming(iterations=100, seconds=measure_s, stopped_by="minimums"),
        accuracy_s=0.5,
        model=model,
        copy_s=0.5,
        process_s=process_s,
        measure_start_s=loop_at,
    )


def _run(
    index: int,
    pod: str,
    *,
    model: str = "resnet",
    loaded: ModelLoad | None = None,
    measure_s: float = 10.0,
    process_s: float = 6.0,
    loop_at: float = 12.0,
    peak_rss: int = 300 * MIB,
    start: PodStart | None = None,
    finished_at: str | None = None,
) -> StoredRun:
    run = StoredVariant(
        index=index,
        state="succeeded",
        explanation="succeeded",
        pod=pod,
        attempts=1,
        finished_at=finished_at,
        pod_start=start,
        result=OkResult(
            target="cpu",
            model_sha256=model * 8,
            latency=latency(10.0),
            timings=_timings(
                model=loaded, measure_s=measure_s, process_s=process_s, loop_at=loop_at
            ),
            memory=Memory(peak_rss_bytes=peak_rss),
            variant={
                "index": index,
                "id": f"v{index}",
                "model": model,
                "precision": "fp32",
                "quantization": "none",
                "batch_size": index + 1,
            },
        ),
    )
    return StoredRun(job=JOB, variant=run, collected_at="2026-12-06T10:00:00+00:00")


def _start(created: int, scheduled: int, started: int) -> PodStart:
    return PodStart(
        created_at=f"2026-12-06T09:00:{created:02d}Z",
        scheduled_at=f"2026-12-06T09:00:{scheduled:02d}Z",
        started_at=f"2026-12-06T09:00:{started:02d}Z",
    )


def _load(fetch_s: float, load_s: float, size: int = 100 * MIB) -> ModelLoad:
    return ModelLoad(source="url", file_bytes=size, fetch_s=fetch_s, load_s=load_s)


@pytest.fixture
def runs() -> list[StoredRun]:
    """Two pods: pod a runs two variants of resnet (loading it once), pod b one."""
    start_a, start_b = _start(0, 2, 10), _start(1, 3, 7)
    return [
        _run(0, "pod-a", loaded=_load(4.0, 2.0), start=start_a, finished_at="2026-12-06T09:01:02Z",
             peak_rss=400 * MIB),
        _run(1, "pod-a", start=start_a, finished_at="2026-12-06T09:01:02Z", loop_at=30.0,
             peak_rss=410 * MIB),
        _run(2, "pod-b", loaded=_load(2.0, 1.0), start=start_b, finished_at="2026-12-06T09:00:43Z",
             measure_s=20.0, process_s=5.0, loop_at=8.0, peak_rss=250 * MIB),
    ]  # fmt: skip


def _phases(startup: Startup) -> dict[str, PhaseTime]:
    return {phase.phase: phase for phase in startup.phases}


def test_each_phase_is_counted_where_it_is_paid(runs: list[StoredRun]) -> None:
    (startup,) = build_report(runs).startup
    assert (startup.cluster, startup.target, startup.pods) == ("us-east", "cpu", 2)
    phases = _phases(startup)
    expected = {
        # Per pod: a 2 s and a 2 s wait, an 8 s and a 4 s start, 6 s and 5 s of imports.
        "waiting for a node": ("pod", 2, 2.0, 2.0),
        "pod start: node to runner": ("pod", 2, 6.0, 8.0),
        "runner start: Python, imports": ("pod", 2, 5.5, 6.0),
        # Per model and pod: resnet loaded once in each pod, not in its second variant.
        "model file: download or read": ("model and pod", 2, 3.0, 4.0),
        "torch.export.load": ("model and pod", 2, 1.5, 2.0),
        "module preparation": ("variant", 3, 0.75, 0.75),
        "first iteration": ("variant", 3, 0.3, 0.3),
        "measurement": ("variant", 3, 10.0, 20.0),
        # From the node: pod a 8 s + its first loop at 12 s, pod b 4 s + 8 s.
        "to first measurement": ("pod", 2, 16.0, 20.0),
        # From the node to the runner's end: 60 s and 40 s.
        "pod wall time": ("pod", 2, 50.0, 60.0),
    }
    for name, (per, count, median, most) in expected.items():
        phase = phases[name]
        assert (phase.per, phase.count, phase.median_s, phase.max_s) == (per, count, median, most)
    assert startup.measured_share == pytest.approx((10 + 10 + 20) / (60 + 40))


def test_a_converted_variants_load_is_a_row_apart_within_its_compile(
    runs: list[StoredRun],
) -> None:
    """onnxruntime's 6 s conversion held a 1.5 s session load: the compile row keeps the
    whole, the load row says its part; variants with no load apart add no row of it."""
    first = runs[0].variant.result
    assert isinstance(first, OkResult) and first.timings is not None
    timings = first.timings.model_copy(update={"conversion_s": 6.0, "runtime_load_s": 1.5})
    converted = first.model_copy(update={"timings": timings})
    runs[0] = replace(runs[0], variant=runs[0].variant.model_copy(update={"result": converted}))
    phases = _phases(build_report(runs).startup[0])
    assert (phases["compile"].count, phases["compile"].max_s) == (1, 6.0)
    load = phases["of which the runtime's load"]
    assert (load.per, load.count, load.max_s) == ("variant", 1, 1.5)
    assert "of which the runtime's load" not in _phases(build_report(runs[1:]).startup[0])


def test_the_peak_memory_is_set_against_the_models_file(runs: list[StoredRun]) -> None:
    unloaded = _run(3, "pod-c", model="bert", peak_rss=2000 * MIB)
    (startup,) = build_report([*runs, unloaded]).startup
    bert, resnet = startup.memory
    assert (resnet.model, resnet.file_bytes, resnet.variants) == ("resnet", 100 * MIB, 3)
    assert (resnet.median_peak_rss_bytes, resnet.max_peak_rss_bytes) == (400 * MIB, 410 * MIB)
    assert resnet.max_over_file == pytest.approx(4.1)
    assert (bert.model, bert.file_bytes, bert.max_over_file) == ("bert", None, None), (
        "a model no result says the size of has no ratio"
    )


def test_pods_that_say_less_leave_out_what_they_do_not_say(runs: list[StoredRun]) -> None:
    """A run stored before pods' starts were: its phases are left out, nothing raises. A
    record whose times were edited into something that is no time never gets this far: it is
    refused where it is read, naming the field."""
    before = [
        StoredRun(run.job, run.variant.model_copy(update={"pod_start": None}), run.collected_at)
        for run in runs
    ]
    (startup,) = build_report(before).startup
    phases = _phases(startup)
    assert "pod start: node to runner" not in phases and "pod wall time" not in phases
    assert phases["runner start: Python, imports"].count == 2, "the runner's own still count"
    assert startup.measured_share is None
    with pytest.raises(ValidationError, match="created_at"):
        PodStart.model_validate({"created_at": "yesterday", "scheduled_at": "2026-12-06T09:00:02Z"})


def test_every_format_shows_the_start_up_and_the_memory(runs: list[StoredRun]) -> None:
    report = build_report(runs)
    title = "Start-up on cpu (us-east): 2 pods, measurement 40% of their wall time"
    titles = [table.title for table in lay_out(analyse(report)).tables]
    assert title in titles
    assert "Memory on cpu (us-east): the runner's peak RSS per model" in titles
    text = to_text(report)
    assert "torch.export.load" in text and "4.10x" in text and "100 MiB" in text
    assert title in to_markdown(report)
    assert title in to_html(report)
    (startup,) = json.loads(to_json(report))["startup"]
    assert startup["measured_share"] == pytest.approx(0.4)


def test_runs_without_start_up_timings_show_no_start_up_table(runs: list[StoredRun]) -> None:
    bare = [
        StoredRun(
            run.job,
            run.variant.model_copy(update={"result": None, "state": "failed", "pod_start": None}),
            run.collected_at,
        )
        for run in runs
    ]
    titles = [table.title for table in lay_out(analyse(build_report(bare))).tables]
    assert not any(title.startswith(("Start-up", "Memory")) for title in titles)
